// Post-ops (codegen/fold_post_ops.h, runtime/dispatch.h): a chain of
// elementwise ops that is the only reader of a matmul's, a linear's or a batch
// norm's result becomes that kernel's epilogue in the lowered graph and runs
// inside the kernel, and the program's results match the interpreter's (f32
// to rounding; batch norm's relu bit for bit on the same layout).
#include <functional>

#include "catch2/catch.hpp"
#include "codegen/interpreter.h"
#include "codegen/program.h"
#include "graph/printer.h"
#include "runtime/ops.h"
#include "runtime/random.h"
#include "tests/codegen/lowered_paths.h"

namespace tc::codegen {
namespace {

Value* Op(Graph& g, OpKind op, std::vector<Value*> in, Attrs attrs = {}) {
  return g.AddNode(op, std::move(in), std::move(attrs)).value()[0];
}

Value* Scalar(Graph& g, double value) {
  return Op(g, OpKind::kFull, {},
            {{"shape", std::vector<int64_t>{}}, {"value", value}, {"dtype", DType::kF32}});
}

// Runs `g` compiled and interpreted on random arguments and checks whether
// the lowered graph runs a node as `path` (tests/codegen/lowered_paths.h),
// then the results against each other within `tol`.
void CheckAgainstInterpreter(const Graph& g, const std::string& path, bool folded,
                             double tol = 1e-5) {
  std::shared_ptr<Program> program = Program::Compile(g).value();
  INFO(ToString(program->graph()));
  REQUIRE(testing::HasPath(testing::LoweredPaths(program->graph()), path) == folded);
  Generator gen(7);
  std::vector<Tensor> args;
  for (const Value* p : g.placeholders()) {
    args.push_back(randn(p->type().shape, p->type().dtype, &gen));
  }
  const std::vector<Tensor> got = program->Run(args).value();
  const std::vector<Tensor> want = Interpret(g).value()(args).value();
  REQUIRE(got.size() == want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    const std::vector<double> a = got[o].to_vector<double>(), e = want[o].to_vector<double>();
    REQUIRE(a.size() == e.size());
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("output " << o << " element " << i);
      REQUIRE(a[i] == Approx(e[i]).margin(tol).epsilon(tol));
    }
  }
}

// linear(x [8,16], w [32,16], b [32]) followed by `chain` of its result.
Graph LinearThen(DType dtype, const std::function<Value*(Graph&, Value*)>& chain) {
  Graph g;
  Value* x = g.AddPlaceholder("x", {dtype, {8, 16}});
  Value* w = g.AddPlaceholder("w", {dtype, {32, 16}});
  Value* b = g.AddPlaceholder("b", {dtype, {32}});
  Value* y = Op(g, OpKind::kLinear, {x, w, b});
  g.SetOutputs({chain(g, y)}).IgnoreError();
  return g;
}

TEST_CASE("activations after a linear run as its post-ops") {
  for (const char* op : {"relu", "gelu", "gelu_tanh", "tanh", "sigmoid", "exp"}) {
    INFO(op);
    const std::string name = op;
    const Graph g = LinearThen(DType::kF32, [&](Graph& g, Value* y) {
      if (name == "relu") return Op(g, OpKind::kRelu, {y});
      if (name == "gelu") return Op(g, OpKind::kGelu, {y}, {{"approximate", std::string("none")}});
      if (name == "gelu_tanh") {
        return Op(g, OpKind::kGelu, {y}, {{"approximate", std::string("tanh")}});
      }
      if (name == "tanh") return Op(g, OpKind::kTanh, {y});
      if (name == "sigmoid") return Op(g, OpKind::kSigmoid, {y});
      return Op(g, OpKind::kExp, {y});
    });
    const std::string kernel = name == "gelu_tanh" ? "gelu" : name;
    CheckAgainstInterpreter(g, "linear+" + kernel, true);
  }
}

TEST_CASE("binary ops with a residual, a column vector or a scalar run as post-ops") {
  SECTION("a residual of the result's shape, then a scale") {
    Graph g = LinearThen(DType::kF32, [](Graph& g, Value* y) {
      Value* r = g.AddPlaceholder("r", {DType::kF32, {8, 32}});
      return Op(g, OpKind::kMul, {Op(g, OpKind::kAdd, {r, y}), Scalar(g, 0.125)});
    });
    CheckAgainstInterpreter(g, "linear+add+mul", true);
  }
  SECTION("a residual read transposed") {
    Graph g = LinearThen(DType::kF32, [](Graph& g, Value* y) {
      Value* r = g.AddPlaceholder("r", {DType::kF32, {32, 8}});
      Value* rt = Op(g, OpKind::kPermute, {r}, {{"dims", std::vector<int64_t>{1, 0}}});
      return Op(g, OpKind::kSub, {y, rt});
    });
    CheckAgainstInterpreter(g, "linear+sub", true);
  }
  SECTION("a scalar and a per-column row [32]") {
    Graph g = LinearThen(DType::kF32, [](Graph& g, Value* y) {
      Value* s = g.AddPlaceholder("s", {DType::kF32, {}});
      Value* row = g.AddPlaceholder("row", {DType::kF32, {32}});
      Value* d = Op(g, OpKind::kDiv, {y, Op(g, OpKind::kExp, {s})});
      return Op(g, OpKind::kMinimum, {row, Op(g, OpKind::kMaximum, {d, s})});
    });
    CheckAgainstInterpreter(g, "linear+div+maximum+minimum", true);
  }
  SECTION("a per-row column [8, 1] stays in the fused loop") {
    Graph g = LinearThen(DType::kF32, [](Graph& g, Value* y) {
      Value* col = g.AddPlaceholder("col", {DType::kF32, {8, 1}});
      return Op(g, OpKind::kSub, {y, col});
    });
    CheckAgainstInterpreter(g, "linear+sub", false);
  }
}

TEST_CASE("a scaled batched matmul runs with the scale as a post-op") {
  Graph g;
  Value* q = g.AddPlaceholder("q", {DType::kF32, {2, 3, 8, 4}});
  Value* k = g.AddPlaceholder("k", {DType::kF32, {2, 3, 8, 4}});
  Value* kt = Op(g, OpKind::kPermute, {k}, {{"dims", std::vector<int64_t>{0, 1, 3, 2}}});
  Value* s = Op(g, OpKind::kMul, {Op(g, OpKind::kMatmul, {q, kt}), Scalar(g, 0.5)});
  g.SetOutputs({s}).IgnoreError();
  CheckAgainstInterpreter(g, "matmul+mul", true);
}

TEST_CASE("an empty inner dimension still applies the post-ops") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {3, 0}});
  Value* w = g.AddPlaceholder("w", {DType::kF32, {5, 0}});
  Value* b = g.AddPlaceholder("b", {DType::kF32, {5}});
  g.SetOutputs({Op(g, OpKind::kRelu, {Op(g, OpKind::kLinear, {x, w, b})})}).IgnoreError();
  CheckAgainstInterpreter(g, "linear+relu", true, 0);
}

TEST_CASE("chains that are not the result's only reader, or not post-ops, stay fused steps") {
  SECTION("the result is also returned") {
    Graph g;
    Value* x = g.AddPlaceholder("x", {DType::kF32, {8, 16}});
    Value* w = g.AddPlaceholder("w", {DType::kF32, {16, 4}});
    Value* y = Op(g, OpKind::kMatmul, {x, w});
    g.SetOutputs({y, Op(g, OpKind::kRelu, {y})}).IgnoreError();
    CheckAgainstInterpreter(g, "matmul+*", false);
  }
  SECTION("the result is the second operand of a subtraction") {
    Graph g = LinearThen(DType::kF32, [](Graph& g, Value* y) {
      return Op(g, OpKind::kSub, {g.AddPlaceholder("r", {DType::kF32, {8, 32}}), y});
    });
    CheckAgainstInterpreter(g, "linear+*", false);
  }
  SECTION("the chain reads the result twice") {
    Graph g = LinearThen(DType::kF32, [](Graph& g, Value* y) {
      return Op(g, OpKind::kMul, {Op(g, OpKind::kRelu, {y}), y});
    });
    CheckAgainstInterpreter(g, "linear+*", false);
  }
  SECTION("f64 runs on Eigen, which takes no post-ops") {
    Graph g = LinearThen(DType::kF64, [](Graph& g, Value* y) { return Op(g, OpKind::kRelu, {y}); });
    CheckAgainstInterpreter(g, "linear+*", false, 0);
  }
}

// batch_norm(x) then relu, returning the statistics too; `channels_last`
// puts a convolution in front, whose result the program plans NHWC.
Graph BatchNormRelu(DType dtype, bool channels_last, bool inference) {
  Graph g;
  Value* x = g.AddPlaceholder("x", {dtype, {4, 8, 5, 5}});
  Value* w = g.AddPlaceholder("w", {dtype, {8}});
  Value* b = g.AddPlaceholder("b", {dtype, {8}});
  Value* k = channels_last ? g.AddPlaceholder("k", {dtype, {8, 8, 1, 1}}) : nullptr;
  auto conv = [&](Value* in) {
    return Op(g, OpKind::kConv2d, {in, k},
              {{"stride", std::vector<int64_t>{1, 1}},
               {"padding", std::vector<int64_t>{0, 0}},
               {"dilation", std::vector<int64_t>{1, 1}},
               {"groups", int64_t{1}}});
  };
  if (channels_last) x = conv(x);
  if (inference) {
    Value* mean = g.AddPlaceholder("mean", {dtype, {8}});
    Value* var = Op(g, OpKind::kExp, {g.AddPlaceholder("log_var", {dtype, {8}})});
    Value* y = Op(g, OpKind::kBatchNormInference, {x, w, b, mean, var}, {{"eps", 1e-5}});
    y = Op(g, OpKind::kRelu, {y});
    // A graph output is row-major: a channels-last relu result needs a reader.
    if (channels_last) y = conv(y);
    g.SetOutputs({y}).IgnoreError();
    return g;
  }
  std::vector<Value*> bn = g.AddNode(OpKind::kBatchNorm, {x, w, b}, {{"eps", 1e-5}}).value();
  // The statistics are read before the relu, as running-statistic updates are.
  Value* mean2 = Op(g, OpKind::kMul, {bn[1], bn[1]});
  Value* y = Op(g, OpKind::kRelu, {bn[0]});
  if (channels_last) y = conv(y);
  g.SetOutputs({mean2, y, bn[2]}).IgnoreError();
  return g;
}

TEST_CASE("relu after batch norm runs inside it, bit for bit") {
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (bool channels_last : {false, true}) {
      for (bool inference : {false, true}) {
        INFO(DTypeName(dtype) << (channels_last ? " nhwc" : " nchw")
                              << (inference ? " inference" : " training"));
        const Graph g = BatchNormRelu(dtype, channels_last, inference);
        const std::string line = inference ? "batch_norm_inference+relu*" : "batch_norm+relu*";
        // Channels-last batch norm sums its statistics in another order than
        // the interpreter's row-major one; row-major, the bits are the same.
        const double tol = !channels_last ? 0 : dtype == DType::kF64 ? 1e-12 : 1e-5;
        CheckAgainstInterpreter(g, line, true, tol);
      }
    }
  }
}

}  // namespace
}  // namespace tc::codegen
