// Elementwise fusion: which nodes the planner groups (hand graphs), the fused
// program of a group, results against the interpreter on random inputs, and
// the reference models trained through fusing() against interpreter().
#include "codegen/fusion.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/fused_kernel.h"
#include "codegen/fusing_compiler.h"
#include "codegen/interpreter.h"
#include "codegen/program.h"
#include "graph/decompositions.h"
#include "nn/layers.h"
#include "nn/models/models.h"
#include "partition/partition.h"
#include "pipeline/compiler_pipeline.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using codegen::FusionGroup;

// Adds nodes to a graph, REQUIRing that each builds.
struct Builder {
  Graph g;
  Value* operator()(OpKind op, std::vector<Value*> in, Attrs attrs = {}) {
    absl::StatusOr<std::vector<Value*>> r = g.AddNode(op, in, std::move(attrs));
    INFO(r.status().message());
    REQUIRE(r.ok());
    return (*r)[0];
  }
  Value* Full(double value, DType dtype) {
    return (*this)(OpKind::kFull, {},
                   {{"shape", std::vector<int64_t>{}}, {"dtype", dtype}, {"value", value}});
  }
};

std::vector<std::string> Names(const std::vector<const Value*>& values) {
  std::vector<std::string> out;
  for (const Value* v : values) out.push_back(v->name());
  return out;
}

std::vector<std::string> Ops(const FusionGroup& group) {
  std::vector<std::string> out;
  for (const Node* n : group.nodes) out.push_back(std::string(OpName(n->op())));
  return out;
}

// Runs `graph` through the interpreter and through fusing() and REQUIREs
// results equal within `tol` (relative and absolute).
void RequireSameAsInterpreter(const Graph& graph, const std::vector<Tensor>& args, double tol) {
  absl::StatusOr<codegen::Executable> eager = codegen::interpreter()(graph);
  absl::StatusOr<codegen::Executable> fused = codegen::fusing()(graph);
  REQUIRE(eager.ok());
  INFO(fused.status().message());
  REQUIRE(fused.ok());
  absl::StatusOr<std::vector<Tensor>> want = (*eager)(args), got = (*fused)(args);
  REQUIRE(want.ok());
  INFO(got.status().message());
  REQUIRE(got.ok());
  REQUIRE(got->size() == want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    INFO("output " << i << " %" << graph.outputs()[i]->name());
    REQUIRE((*got)[i].type() == (*want)[i].type());
    REQUIRE_TENSORS_CLOSE((*got)[i], (*want)[i], tol, tol);
  }
}

TEST_CASE("x*w+b -> relu -> mul is one group; the add is also read by a sum, so it is an output") {
  Builder b;
  Value* x = b.g.AddPlaceholder("x", {DType::kF32, {4, 3}});
  Value* w = b.g.AddPlaceholder("w", {DType::kF32, {4, 3}});
  Value* bias = b.g.AddPlaceholder("b", {DType::kF32, {3}});
  Value* s = b.g.AddPlaceholder("s", {DType::kF32, {4, 1}});
  Value* h = b(OpKind::kAdd, {b(OpKind::kMul, {x, w}), bias});
  Value* y = b(OpKind::kMul, {b(OpKind::kRelu, {h}), s});
  Value* total = b(OpKind::kSum, {h}, {{"dims", std::vector<int64_t>{}}, {"keepdim", false}});
  REQUIRE(b.g.SetOutputs({y, total}).ok());

  const std::vector<FusionGroup> groups = codegen::PlanFusion(b.g);
  REQUIRE(groups.size() == 1);
  CHECK(Ops(groups[0]) == std::vector<std::string>{"mul", "add", "relu", "mul"});
  CHECK(Names(groups[0].inputs) == std::vector<std::string>{"x", "w", "b", "s"});
  CHECK(Names(groups[0].outputs) == std::vector<std::string>{h->name(), y->name()});
  CHECK(groups[0].shape == Shape{4, 3});
  // The first mul's r4 is dead after the add and is reused by relu; the
  // add's r5 is an output, so it stays.
  CHECK(codegen::FusedKernel::Compile(groups[0]).ToString() ==
        "fused[4,3](r0, r1, r2, r3) {\n"
        "  r4: f32 = mul(r0, r1)\n"
        "  r5: f32 = add(r4, r2)\n"
        "  r4: f32 = relu(r5)\n"
        "  r6: f32 = mul(r4, r3)\n"
        "  return (r5, r6)\n"
        "}\n");
  RequireSameAsInterpreter(
      b.g,
      {testing::Random({4, 3}, DType::kF32, 1), testing::Random({4, 3}, DType::kF32, 2),
       testing::Random({3}, DType::kF32, 3), testing::Random({4, 1}, DType::kF32, 4)},
      0);
}

TEST_CASE("dead temporaries give their register to the next op") {
  Builder b;
  Value* x = b.g.AddPlaceholder("x", {DType::kF64, {5}});
  Value* y = b(OpKind::kTanh, {b(OpKind::kExp, {b(OpKind::kNeg, {x})})});
  REQUIRE(b.g.SetOutputs({y}).ok());
  const std::vector<FusionGroup> groups = codegen::PlanFusion(b.g);
  REQUIRE(groups.size() == 1);
  CHECK(codegen::FusedKernel::Compile(groups[0]).ToString() ==
        "fused[5](r0) {\n"
        "  r1: f64 = neg(r0)\n"
        "  r1: f64 = exp(r1)\n"
        "  r2: f64 = tanh(r1)\n"
        "  return (r2)\n"
        "}\n");
}

TEST_CASE("a register is reused in place only by a result no wider than its elements") {
  // The f64 exp dies at gt, whose bool result may overwrite it in place; the
  // bool dies at the cast to f64, which must not write over unread bools.
  Builder b;
  Value* x = b.g.AddPlaceholder("x", {DType::kF64, {1000}});
  Value* y = b.g.AddPlaceholder("y", {DType::kF64, {1000}});
  Value* c = b(OpKind::kGt, {b(OpKind::kExp, {x}), y});
  REQUIRE(b.g.SetOutputs({b(OpKind::kCast, {c}, {{"dtype", DType::kF64}})}).ok());
  const std::vector<FusionGroup> groups = codegen::PlanFusion(b.g);
  REQUIRE(groups.size() == 1);
  CHECK(codegen::FusedKernel::Compile(groups[0]).ToString() ==
        "fused[1000](r0, r1) {\n"
        "  r2: f64 = exp(r0)\n"
        "  r2: bool = gt(r2, r1)\n"
        "  r3: f64 = cast(r2)\n"
        "  return (r3)\n"
        "}\n");
  RequireSameAsInterpreter(
      b.g, {testing::Random({1000}, DType::kF64, 1), testing::Random({1000}, DType::kF64, 2)}, 0);
}

TEST_CASE("a group never spans a node that reads it before its last node") {
  // e = exp(x); m = max over rows of e; y = e * m: m reads e and comes before
  // the mul, so exp and mul cannot run as one step.
  Builder b;
  Value* x = b.g.AddPlaceholder("x", {DType::kF64, {4, 3}});
  Value* e = b(OpKind::kExp, {x});
  Value* m = b(OpKind::kMax, {e}, {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}});
  Value* y = b(OpKind::kMul, {e, m});
  Value* z = b(OpKind::kSqrt, {b(OpKind::kAbs, {y})});
  REQUIRE(b.g.SetOutputs({z}).ok());
  const std::vector<FusionGroup> groups = codegen::PlanFusion(b.g);
  REQUIRE(groups.size() == 1);
  CHECK(Ops(groups[0]) == std::vector<std::string>{"mul", "abs", "sqrt"});
  CHECK(Names(groups[0].inputs) == std::vector<std::string>{e->name(), m->name()});
  RequireSameAsInterpreter(b.g, {testing::Random({4, 3}, DType::kF64, 5)}, 0);
}

TEST_CASE("results of another shape, i64 values and non-elementwise ops stay outside groups") {
  Builder b;
  Value* x = b.g.AddPlaceholder("x", {DType::kF32, {4, 3}});
  Value* v = b.g.AddPlaceholder("v", {DType::kF32, {3}});
  Value* r = b(OpKind::kRelu, {b(OpKind::kNeg, {v})});                            // shape [3]
  Value* y = b(OpKind::kSigmoid, {b(OpKind::kAdd, {x, r})});                      // shape [4,3]
  Value* i = b(OpKind::kCast, {b(OpKind::kAbs, {y})}, {{"dtype", DType::kI64}});  // i64
  REQUIRE(b.g.SetOutputs({y, i}).ok());
  const std::vector<FusionGroup> groups = codegen::PlanFusion(b.g);
  // The cast to i64 is not fusible, so abs is an output of the second group.
  REQUIRE(groups.size() == 2);
  CHECK(Ops(groups[0]) == std::vector<std::string>{"neg", "relu"});
  CHECK(Ops(groups[1]) == std::vector<std::string>{"add", "sigmoid", "abs"});
  CHECK(Names(groups[1].outputs) ==
        std::vector<std::string>{y->name(), i->producer()->input(0)->name()});
}

TEST_CASE("casts between f32 and bf16 in a pass round as the cast kernel does") {
  // Ties round to even, overflow rounds to infinity, infinities and signed
  // zeros stay, subnormals become zeros (runtime/bf16.h); a bf16 row
  // broadcast over the pass is read back exactly.
  const std::vector<uint32_t> bits = {0x3f808000, 0x3f818000, 0x3f80ffff, 0x7f7fffff,
                                      0x7f800000, 0xff800000, 0x80000000, 0x00000001,
                                      0x807fffff, 0x3eaaaaab, 0xc2f6e979, 0x00018000};
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) std::memcpy(&values[i], &bits[i], sizeof(float));
  Builder b;
  const int64_t n = static_cast<int64_t>(values.size());
  Value* x = b.g.AddPlaceholder("x", {DType::kF32, {2, n}});
  Value* h = b.g.AddPlaceholder("h", {DType::kBF16, {n}});
  Value* y = b(OpKind::kNeg, {x});
  Value* y16 = b(OpKind::kCast, {y}, {{"dtype", DType::kBF16}});
  // %t is read transposed: gathered as 16-bit elements.
  Value* t = b.g.AddPlaceholder("t", {DType::kBF16, {n, 2}});
  Value* tt = b(OpKind::kPermute, {t}, {{"dims", std::vector<int64_t>{1, 0}}});
  Value* hf = b(OpKind::kCast, {h}, {{"dtype", DType::kF32}});
  Value* back =
      b(OpKind::kAdd, {b(OpKind::kAdd, {y, hf}), b(OpKind::kCast, {tt}, {{"dtype", DType::kF32}})});
  REQUIRE(b.g.SetOutputs({y16, back}).ok());
  const std::vector<FusionGroup> groups = codegen::PlanFusion(b.g);
  REQUIRE(groups.size() == 1);
  CHECK(Ops(groups[0]) == std::vector<std::string>{"neg", "cast", "add", "cast", "add"});
  std::vector<float> twice = values;
  twice.insert(twice.end(), values.begin(), values.end());
  const Tensor xs = from_vector<float>(twice, {2, n});
  const Tensor hs = cast(from_vector<float>(values, {n}), DType::kBF16);
  const Tensor ts = cast(testing::Random({n, 2}, DType::kF32, 3), DType::kBF16);
  RequireSameAsInterpreter(b.g, {xs, hs, ts}, 0);
  // And a NaN stays a NaN.
  const Tensor nan = full({2, n}, std::nan(""), DType::kF32);
  const std::vector<Tensor> out =
      codegen::Program::Compile(b.g).value()->Run({nan, hs, ts}).value();
  for (float v : out[0].to(DType::kF32).to_vector<float>()) CHECK(std::isnan(v));
}

TEST_CASE("a compiled integer division by zero is an error, not a trap") {
  for (DType dt : {DType::kI64, DType::kI32}) {
    INFO(DTypeName(dt));
    Builder b;
    Value* x = b.g.AddPlaceholder("x", {dt, {3}});
    Value* d = b.g.AddPlaceholder("d", {dt, {3}});
    REQUIRE(b.g.SetOutputs({b(OpKind::kAdd, {b(OpKind::kDiv, {x, d}), x})}).ok());
    std::shared_ptr<codegen::Program> program = codegen::Program::Compile(b.g).value();
    const absl::StatusOr<std::vector<Tensor>> out = program->Run(
        {from_vector<int64_t>({4, 5, 6}, {3}).to(dt), from_vector<int64_t>({2, 0, 3}, {3}).to(dt)});
    REQUIRE_FALSE(out.ok());
    CHECK(out.status().message().find("div: integer division by zero") != std::string::npos);
  }
}

TEST_CASE("i32 arithmetic, comparisons and casts compile to eager's results") {
  Builder b;
  Value* x = b.g.AddPlaceholder("x", {DType::kI32, {4, 3}});
  Value* f = b.g.AddPlaceholder("f", {DType::kF32, {4, 3}});
  Value* y = b(OpKind::kDiv, {b(OpKind::kMul, {x, x}), b(OpKind::kAdd, {x, x})});
  Value* as_float = b(OpKind::kMul, {b(OpKind::kCast, {y}, {{"dtype", DType::kF32}}), f});
  Value* greater = b(OpKind::kGt, {x, y});
  Value* total = b(OpKind::kSum, {b(OpKind::kCast, {x}, {{"dtype", DType::kI64}})},
                   {{"dims", std::vector<int64_t>{}}, {"keepdim", false}});
  REQUIRE(b.g.SetOutputs({y, as_float, greater, total}).ok());
  const Tensor positive = testing::Random({4, 3}, DType::kI32, 1) + full({}, 1, DType::kI32);
  RequireSameAsInterpreter(b.g, {positive, testing::Random({4, 3}, DType::kF32, 2)}, 0);
}

TEST_CASE("dropout fuses with the elementwise ops around it and draws eager's mask") {
  Builder b;
  Value* x = b.g.AddPlaceholder("x", {DType::kF32, {4, 8}});
  Value* seed = b.g.AddPlaceholder("seed", {DType::kI64, {}});
  Value* offset = b.g.AddPlaceholder("offset", {DType::kI64, {}});
  Value* d = b(OpKind::kDropout, {b(OpKind::kRelu, {x}), seed, offset}, {{"p", 0.5}});
  Value* y = b(OpKind::kMul, {b(OpKind::kNeg, {d}), x});
  REQUIRE(b.g.SetOutputs({y}).ok());
  CHECK(codegen::IsFusible(*d->producer()));
  const std::vector<codegen::FusionGroup> groups = codegen::PlanFusion(b.g);
  REQUIRE(groups.size() == 1);  // relu, dropout, neg and mul
  CHECK(groups[0].nodes.size() == 4);
  RequireSameAsInterpreter(b.g,
                           {testing::Random({4, 8}, DType::kF32, 1), from_vector<int64_t>({7}, {}),
                            from_vector<int64_t>({5}, {})},
                           0);
}

TEST_CASE("a fused dropout over many blocks draws eager's mask on one thread and on two") {
  // [96, 1024] f64: 384 blocks, split over the threads; the offset moves
  // every element's counter.
  Builder b;
  Value* x = b.g.AddPlaceholder("x", {DType::kF64, {96, 1024}});
  Value* seed = b.g.AddPlaceholder("seed", {DType::kI64, {}});
  Value* offset = b.g.AddPlaceholder("offset", {DType::kI64, {}});
  Value* d = b(OpKind::kDropout, {b(OpKind::kTanh, {x}), seed, offset}, {{"p", 0.3}});
  REQUIRE(b.g.SetOutputs({b(OpKind::kMul, {d, x})}).ok());
  const std::vector<Tensor> args = {testing::Random({96, 1024}, DType::kF64, 4),
                                    from_vector<int64_t>({11}, {}),
                                    from_vector<int64_t>({123456789}, {})};
  for (int threads : {1, 2}) {
    INFO(threads << " threads");
    testing::OnThreads(threads, [&] {
      RequireSameAsInterpreter(b.g, args, 0);
      return 0;
    });
  }
}

TEST_CASE("tc::compile of a model with dropout runs under fusing() as under interpreter()") {
  // Each call draws its mask from the generator: seeded alike, both calls
  // draw the same one.
  nn::Sequential model({std::make_shared<nn::Linear>(8, 8), std::make_shared<nn::Dropout>(0.5)});
  const TensorTree x = TensorTree::MakeLeaf(testing::Random({4, 8}, DType::kF32, 2));
  const Function fused = compile(model, x).value();
  const Function interpreted = compile(model, x, {.compiler = codegen::interpreter()}).value();
  manual_seed(3);
  const Tensor want = interpreted(x).value().leaf();
  manual_seed(3);
  REQUIRE_TENSORS_CLOSE(fused(x).value().leaf(), want, 1e-6, 1e-6);
}

// A graph using every elementwise op on `dtype` inputs of shape [37, 19]
// (several 256-element blocks, rows straddling them), with operands broadcast
// from [19], [37, 1] and [].
Graph EveryOpGraph(DType dtype) {
  Builder b;
  Value* x = b.g.AddPlaceholder("x", {dtype, {37, 19}});
  Value* y = b.g.AddPlaceholder("y", {dtype, {37, 19}});
  Value* row = b.g.AddPlaceholder("row", {dtype, {19}});
  Value* col = b.g.AddPlaceholder("col", {dtype, {37, 1}});
  Value* s = b.g.AddPlaceholder("s", {dtype, {}});
  Value* flag = b.g.AddPlaceholder("flag", {DType::kBool, {37, 19}});
  auto op = [&](OpKind k, std::vector<Value*> in, Attrs a = {}) { return b(k, std::move(in), a); };
  const DType other = dtype == DType::kF32 ? DType::kF64 : DType::kF32;
  Value* h = op(OpKind::kAdd, {op(OpKind::kMul, {x, row}), col});
  Value* d = op(OpKind::kDiv, {op(OpKind::kSub, {h, s}),
                               op(OpKind::kAdd, {op(OpKind::kAbs, {y}), b.Full(1, dtype)})});
  Value* mx = op(OpKind::kMaximum, {d, op(OpKind::kMinimum, {x, col})});
  Value* pos = op(OpKind::kAdd, {op(OpKind::kAbs, {x}), b.Full(0.5, dtype)});
  Value* un = op(OpKind::kAdd, {op(OpKind::kLog, {pos}), op(OpKind::kSqrt, {pos})});
  un = op(OpKind::kAdd, {un, op(OpKind::kRsqrt, {pos})});
  un = op(OpKind::kMul, {un, op(OpKind::kSign, {y})});
  un = op(OpKind::kSub, {un, op(OpKind::kNeg, {op(OpKind::kRelu, {y})})});
  un = op(OpKind::kAdd, {op(OpKind::kSigmoid, {un}), op(OpKind::kTanh, {op(OpKind::kExp, {x})})});
  Value* gelu = op(OpKind::kAdd, {op(OpKind::kGelu, {un}, {{"approximate", std::string("none")}}),
                                  op(OpKind::kGelu, {mx}, {{"approximate", std::string("tanh")}})});
  Value* gb = op(OpKind::kAdd,
                 {op(OpKind::kGeluBackward, {gelu, x}, {{"approximate", std::string("none")}}),
                  op(OpKind::kGeluBackward, {y, h}, {{"approximate", std::string("tanh")}})});
  Value* pw = op(OpKind::kAdd, {op(OpKind::kPow, {gb}, {{"exponent", 2.0}}),
                                op(OpKind::kPow, {pos}, {{"exponent", 0.5}})});
  pw = op(OpKind::kAdd, {pw, op(OpKind::kPow, {x}, {{"exponent", 3.0}})});
  // Comparisons, bool operands, where and casts.
  Value* lt = op(OpKind::kLt, {x, row});
  Value* c = op(OpKind::kNe, {op(OpKind::kEq, {lt, flag}), op(OpKind::kGe, {y, s})});
  c = op(OpKind::kWhere, {op(OpKind::kLe, {x, y}), c, op(OpKind::kGt, {col, x})});
  Value* w =
      op(OpKind::kWhere,
         {c, pw,
          op(OpKind::kCast, {op(OpKind::kCast, {gelu}, {{"dtype", other}})}, {{"dtype", dtype}})});
  Value* out = op(OpKind::kAdd, {w, op(OpKind::kCast, {flag}, {{"dtype", dtype}})});
  Value* as_bool = op(OpKind::kCast, {op(OpKind::kSub, {out, y})}, {{"dtype", DType::kBool}});
  REQUIRE(b.g.SetOutputs({out, h, c, as_bool, out}).ok());
  return std::move(b.g);
}

std::vector<Tensor> EveryOpArgs(DType dtype) {
  return {testing::Random({37, 19}, dtype, 1), testing::Random({37, 19}, dtype, 2),
          testing::Random({19}, dtype, 3),     testing::Random({37, 1}, dtype, 4),
          testing::Random({}, dtype, 5),       testing::Random({37, 19}, DType::kBool, 6)};
}

TEST_CASE("every elementwise op fused equals the interpreter, contiguous and strided") {
  for (DType dtype : {DType::kF64, DType::kF32}) {
    INFO(DTypeName(dtype));
    const Graph g = EveryOpGraph(dtype);
    // Everything but the two constants fuses into one group.
    const std::vector<FusionGroup> groups = codegen::PlanFusion(g);
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].nodes.size() + 2 == g.nodes().size());
    const std::vector<Tensor> args = EveryOpArgs(dtype);
    SECTION("contiguous") { RequireSameAsInterpreter(g, args, 0); }
    SECTION("transposed storage") {
      std::vector<Tensor> strided;
      for (const Tensor& t : args) strided.push_back(t.dim() > 0 ? testing::NonContiguous(t) : t);
      REQUIRE_FALSE(strided[0].is_contiguous());
      RequireSameAsInterpreter(g, strided, 0);
    }
    SECTION("expanded and sliced views") {
      std::vector<Tensor> views = args;
      views[0] = testing::Random({1, 19}, dtype, 7).expand({37, 19});  // stride 0 along rows
      views[1] = testing::Random({37, 40}, dtype, 8).slice(1, 1, 39, 2);
      views[2] = testing::Random({38}, dtype, 9).slice(0, 0, 38, 2);
      RequireSameAsInterpreter(g, views, 0);
    }
  }
}

TEST_CASE("scalar and zero-size groups") {
  for (const Shape& shape : {Shape{}, Shape{0, 3}}) {
    Builder b;
    Value* x = b.g.AddPlaceholder("x", {DType::kF64, shape});
    REQUIRE(b.g.SetOutputs({b(OpKind::kExp, {b(OpKind::kMul, {x, x})})}).ok());
    REQUIRE(codegen::PlanFusion(b.g).size() == 1);
    RequireSameAsInterpreter(b.g, {testing::Random(shape, DType::kF64, 1)}, 0);
  }
}

TEST_CASE("fusing() rejects the arguments the interpreter rejects, with its messages") {
  Builder b;
  Value* x = b.g.AddPlaceholder("x", {DType::kF32, {2, 3}});
  REQUIRE(b.g.SetOutputs({b(OpKind::kRelu, {b(OpKind::kNeg, {x})})}).ok());
  absl::StatusOr<codegen::Executable> fused = codegen::fusing()(b.g);
  REQUIRE(fused.ok());
  absl::StatusOr<std::vector<Tensor>> none = (*fused)({});
  CHECK(none.status().message() == "expected 1 arguments, got 0");
  absl::StatusOr<std::vector<Tensor>> wrong = (*fused)({testing::Random({3, 2}, DType::kF32, 1)});
  CHECK(wrong.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(wrong.status().message() == "argument 0 (%x): expected f32[2,3], got f32[3,2]");
}

// The model compiled with `compiler` for both graphs and the default partition.
Function CompileModel(nn::ModelSpec& spec, const codegen::Compiler& compiler, int* groups) {
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
  REQUIRE(pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
  absl::StatusOr<partition::PartitionResult> part =
      pipeline.partition(partition::DefaultPartition, *pipeline.joint_graph().value());
  REQUIRE(part.ok());
  *groups = static_cast<int>(codegen::PlanFusion(part->forward).size() +
                             codegen::PlanFusion(part->backward).size());
  CompiledForward fw = pipeline.fw_compile(compiler, *part).value();
  CompiledBackward bw = pipeline.bw_compile(compiler, *part, fw).value();
  return pipeline.make_autograd_function(fw, bw, *part).value();
}

TEST_CASE("mlp, cnn and transformer: fusing() gives the interpreter's outputs and gradients") {
  for (const std::string name : {"mlp", "cnn", "transformer"}) {
    INFO(name);
    nn::ModelSpec fused = nn::MakeModel(name, 11).value();
    nn::ModelSpec eager = nn::MakeModel(name, 11).value();
    for (nn::ModelSpec* s : {&fused, &eager}) {
      s->module->to(DType::kF64);
      auto to_f64 = [](const Tensor& t) { return IsFloating(t.dtype()) ? t.to(DType::kF64) : t; };
      s->inputs = s->inputs.Map(to_f64);
      s->targets = s->targets.Map(to_f64);
    }
    int groups = 0, unused = 0;
    const Function fn_fused = CompileModel(fused, codegen::fusing(), &groups);
    const Function fn_eager = CompileModel(eager, codegen::interpreter(), &unused);
    CHECK(groups > 0);
    const TensorTree out_f = fn_fused(fused.inputs).value();
    const TensorTree out_e = fn_eager(eager.inputs).value();
    const std::vector<Tensor> lf = Flatten(out_f).first, le = Flatten(out_e).first;
    REQUIRE(lf.size() == le.size());
    for (size_t i = 0; i < lf.size(); ++i) REQUIRE_TENSORS_CLOSE(lf[i], le[i], 1e-10, 1e-10);
    fused.loss(out_f, fused.targets).backward();
    eager.loss(out_e, eager.targets).backward();
    const nn::NamedTensors pf = fused.module->named_parameters(),
                           pe = eager.module->named_parameters();
    REQUIRE(pf.size() == pe.size());
    for (size_t i = 0; i < pf.size(); ++i) {
      INFO(pf[i].first);
      REQUIRE_TENSORS_CLOSE(pf[i].second.grad(), pe[i].second.grad(), 1e-10, 1e-10);
    }
  }
}

}  // namespace
}  // namespace tc
