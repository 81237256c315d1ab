// Programs (codegen/program.h) as their callers see them: outputs and views a
// caller holds are never overwritten, released ones are reused, arguments may
// be the very outputs of the last run, returned constants stay the caller's,
// and a kernel error leaves the program usable.
#include "codegen/program.h"

#include "catch2/catch.hpp"
#include "codegen/interpreter.h"
#include "runtime/ops.h"
#include "runtime/random.h"
#include "runtime/threads.h"
#include "tests/test_util.h"

namespace tc::codegen {
namespace {

TEST_CASE("a program never overwrites outputs or views a caller still holds") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {2, 3}});
  Value* y = g.AddNode(OpKind::kRelu, {x}).value()[0];
  Value* z = g.AddNode(OpKind::kPermute, {y}, {{"dims", std::vector<int64_t>{1, 0}}}).value()[0];
  REQUIRE(g.SetOutputs({y, z}).ok());
  std::shared_ptr<Program> program = Program::Compile(g).value();
  const Tensor a = from_vector<float>({1, -2, 3, -4, 5, -6}, {2, 3});
  const Tensor b = from_vector<float>({-1, 2, -3, 4, -5, 6}, {2, 3});
  std::vector<Tensor> first = program->Run({a}).value();
  const Tensor kept_view = first[1];
  first.clear();  // the output handle is dropped, a view of it is kept
  std::vector<Tensor> second = program->Run({b}).value();
  REQUIRE(kept_view.to_vector<float>() == std::vector<float>{1, 0, 0, 5, 3, 0});
  REQUIRE(second[0].to_vector<float>() == std::vector<float>{0, 2, 0, 4, 0, 6});
  // Released outputs are reused: the same buffer comes back.
  const void* data = second[0].raw_data();
  second.clear();
  REQUIRE(program->Run({a}).value()[0].raw_data() == data);
}

TEST_CASE("the outputs of a run can be the arguments of the next") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {2, 2}});
  Value* y = g.AddNode(OpKind::kAdd, {x, x}).value()[0];
  REQUIRE(g.SetOutputs({y}).ok());
  std::shared_ptr<Program> program = Program::Compile(g).value();
  std::vector<Tensor> state = {from_vector<float>({1, 2, 3, 4}, {2, 2})};
  for (int i = 0; i < 3; ++i) REQUIRE(program->Run(state, absl::MakeSpan(state)).ok());
  REQUIRE(state[0].to_vector<float>() == std::vector<float>{8, 16, 24, 32});
}

TEST_CASE("a returned argument copied from a strided view stays the caller's") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {2, 2}});
  REQUIRE(g.SetOutputs({x}).ok());
  std::shared_ptr<Program> program = Program::Compile(g).value();
  const Tensor a = from_vector<float>({1, 2, 3, 4}, {2, 2}).transpose(0, 1);
  const Tensor b = from_vector<float>({5, 6, 7, 8}, {2, 2}).transpose(0, 1);
  const Tensor first = program->Run({a}).value()[0];
  const Tensor second = program->Run({b}).value()[0];
  REQUIRE(first.to_vector<float>() == std::vector<float>{1, 3, 2, 4});
  REQUIRE(second.to_vector<float>() == std::vector<float>{5, 7, 6, 8});
}

TEST_CASE("a returned constant, or a view of one, is made afresh every run") {
  Graph g;
  Value* c = g.AddNode(OpKind::kFull, {},
                       {{"shape", std::vector<int64_t>{2}}, {"value", 1.0}, {"dtype", DType::kF32}})
                 .value()[0];
  Value* v = g.AddNode(OpKind::kReshape, {c}, {{"shape", std::vector<int64_t>{1, 2}}}).value()[0];
  REQUIRE(g.SetOutputs({v}).ok());
  std::shared_ptr<Program> program = Program::Compile(g).value();
  Tensor first = program->Run({}).value()[0];
  first.set<float>({0, 0}, 42.f);  // the caller's to write
  REQUIRE(program->Run({}).value()[0].to_vector<float>() == std::vector<float>{1, 1});
}

TEST_CASE("a kernel error names the op and leaves the program usable") {
  Graph g;
  Value* w = g.AddPlaceholder("w", {DType::kF32, {3, 2}});
  Value* i = g.AddPlaceholder("i", {DType::kI64, {2}});
  Value* e = g.AddNode(OpKind::kEmbedding, {w, i}).value()[0];
  Value* r = g.AddNode(OpKind::kRelu, {e}).value()[0];
  REQUIRE(g.SetOutputs({r}).ok());
  std::shared_ptr<Program> program = Program::Compile(g).value();
  const Tensor weight = from_vector<float>({1, -2, 3, -4, 5, -6}, {3, 2});
  absl::StatusOr<std::vector<Tensor>> bad =
      program->Run({weight, from_vector<int64_t>({0, 7}, {2})});
  REQUIRE_FALSE(bad.ok());
  REQUIRE_THAT(std::string(bad.status().message()), Catch::StartsWith("embedding: "));
  std::vector<Tensor> good = program->Run({weight, from_vector<int64_t>({2, 0}, {2})}).value();
  REQUIRE(good[0].to_vector<float>() == std::vector<float>{5, 0, 1, 0});
}

TEST_CASE("a graph too large for memory is an error, compiled or run") {
  // 2^42 floats (16 TiB): an expanded argument's exp, and a constant's.
  // Whichever stage allocates them, compiling or running, says so.
  auto compile_and_run = [](const Graph& g, const std::vector<Tensor>& args) {
    absl::StatusOr<std::shared_ptr<Program>> program = Program::Compile(g);
    if (!program.ok()) return program.status();
    return (*program)->Run(args).status();
  };
  const std::vector<int64_t> huge = {int64_t{1} << 42};
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {}});
  Value* big = g.AddNode(OpKind::kExpand, {x}, {{"shape", huge}}).value()[0];
  REQUIRE(g.SetOutputs({g.AddNode(OpKind::kExp, {big}).value()[0]}).ok());
  absl::Status status = compile_and_run(g, {scalar(1)});
  CHECK(status.code() == absl::StatusCode::kResourceExhausted);
  CHECK(status.message() == "out of memory allocating 17592186044416 bytes");
  Graph c;
  Value* full =
      c.AddNode(OpKind::kFull, {}, {{"shape", huge}, {"value", 1.0}, {"dtype", DType::kF32}})
          .value()[0];
  REQUIRE(c.SetOutputs({c.AddNode(OpKind::kExp, {full}).value()[0]}).ok());
  status = compile_and_run(c, {});
  CHECK(status.code() == absl::StatusCode::kResourceExhausted);
  CHECK(status.message() == "out of memory allocating 17592186044416 bytes");
}

TEST_CASE("a large fused group gives the same bits on one thread as on two") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {512, 300}});
  Value* b = g.AddPlaceholder("b", {DType::kF32, {300}});
  Value* y = g.AddNode(OpKind::kMul, {x, b}).value()[0];
  Value* z = g.AddNode(OpKind::kGelu, {y}, {{"approximate", std::string("none")}}).value()[0];
  g.SetOutputs({z}).IgnoreError();
  std::shared_ptr<Program> program = Program::Compile(g).value();
  Generator gen(5);
  const std::vector<Tensor> args = {randn({512, 300}, DType::kF32, &gen),
                                    randn({300}, DType::kF32, &gen)};
  const int saved = NumThreads();
  auto run = [&] { return program->Run(args).value()[0].to_vector<float>(); };
  REQUIRE(testing::OnThreads(1, run) == testing::OnThreads(2, run));
  {
    SingleThreaded scope;
    REQUIRE(NumThreads() == 1);
  }
  REQUIRE(NumThreads() == saved);
}

// conv2d(x, w) + reshape(b, [1, C, 1, 1]), as nn::Conv2d computes it.
Graph ConvWithBias(DType dtype) {
  Graph g;
  Value* x = g.AddPlaceholder("x", {dtype, {2, 3, 5, 5}});
  Value* w = g.AddPlaceholder("w", {dtype, {4, 3, 3, 3}});
  Value* b = g.AddPlaceholder("b", {dtype, {4}});
  Value* y = g.AddNode(OpKind::kConv2d, {x, w},
                       {{"stride", std::vector<int64_t>{1, 1}},
                        {"padding", std::vector<int64_t>{1, 1}},
                        {"dilation", std::vector<int64_t>{1, 1}},
                        {"groups", int64_t{1}}})
                 .value()[0];
  Value* b4 =
      g.AddNode(OpKind::kReshape, {b}, {{"shape", std::vector<int64_t>{1, 4, 1, 1}}}).value()[0];
  Value* z = g.AddNode(OpKind::kAdd, {y, b4}).value()[0];
  g.SetOutputs({z}).IgnoreError();
  return g;
}

TEST_CASE("a convolution whose only reader adds a channel bias runs with the bias") {
  for (DType dtype : {DType::kF32, DType::kF64}) {
    INFO(DTypeName(dtype));
    const Graph g = ConvWithBias(dtype);
    std::shared_ptr<Program> program = Program::Compile(g).value();
    // The lowered graph: one conv2d with the bias operand, no add.
    std::vector<OpKind> ops;
    for (const Node* n : program->graph().nodes()) ops.push_back(n->op());
    REQUIRE(ops == std::vector<OpKind>{OpKind::kReshape, OpKind::kConv2d});
    REQUIRE(program->graph().nodes()[1]->num_inputs() == 3);
    Generator gen(3);
    const std::vector<Tensor> args = {randn({2, 3, 5, 5}, dtype, &gen),
                                      randn({4, 3, 3, 3}, dtype, &gen), randn({4}, dtype, &gen)};
    const Tensor fused = program->Run(args).value()[0];
    const Tensor reference = Interpret(g).value()(args).value()[0];
    // f64 runs the reference loops, adding the bias after the sums as the
    // unfused add does; oneDNN adds it inside its f32 accumulation.
    const double tol = dtype == DType::kF64 ? 0 : 1e-5;
    const std::vector<double> a = fused.to_vector<double>(), e = reference.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == Approx(e[i]).margin(tol).epsilon(tol));
  }
}

}  // namespace
}  // namespace tc::codegen
