// Layout assignment (codegen/layout_plan.h), as text and through programs: convolutional
// activations are channels-last from the first convolution to the flatten,
// results match the interpreter's, outputs stay row-major unless the caller
// frees them, and arguments in another layout than planned are copied in.
#include "codegen/layout_plan.h"

#include "catch2/catch.hpp"
#include "codegen/interpreter.h"
#include "codegen/program.h"
#include "graph/printer.h"
#include "runtime/ops.h"
#include "runtime/random.h"
#include "tests/codegen/lowered_paths.h"
#include "tests/graph/graphs.h"

namespace tc::codegen {
namespace {

using Ints = std::vector<int64_t>;

// conv -> batch_norm -> relu -> max_pool2d(2) -> flatten, returning the
// flattened result and (when `return_conv`) the convolution's.
Graph ConvBlock(DType dtype, bool return_conv) {
  Graph g;
  Value* x = g.AddPlaceholder("x", {dtype, {2, 3, 8, 8}});
  Value* w = g.AddPlaceholder("w", {dtype, {4, 3, 3, 3}});
  Value* gamma = g.AddPlaceholder("gamma", {dtype, {4}});
  Value* beta = g.AddPlaceholder("beta", {dtype, {4}});
  Value* y = g.AddNode(OpKind::kConv2d, {x, w},
                       {{"stride", Ints{1, 1}},
                        {"padding", Ints{1, 1}},
                        {"dilation", Ints{1, 1}},
                        {"groups", int64_t{1}}})
                 .value()[0];
  Value* n = g.AddNode(OpKind::kBatchNorm, {y, gamma, beta}, {{"eps", 1e-5}}).value()[0];
  Value* r = g.AddNode(OpKind::kRelu, {n}).value()[0];
  Value* p = g.AddNode(OpKind::kMaxPool2d, {r},
                       {{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}}, {"padding", Ints{0, 0}}})
                 .value()[0];
  Value* f = g.AddNode(OpKind::kReshape, {p}, {{"shape", Ints{2, 64}}}).value()[0];
  std::vector<Value*> outputs = {f};
  if (return_conv) outputs.push_back(y);
  REQUIRE(g.SetOutputs(outputs).ok());
  return g;
}

std::vector<Tensor> Arguments(DType dtype) {
  Generator gen(11);
  return {randn({2, 3, 8, 8}, dtype, &gen), randn({4, 3, 3, 3}, dtype, &gen),
          randn({4}, dtype, &gen), randn({4}, dtype, &gen)};
}

void RequireClose(const Tensor& actual, const Tensor& expected, double tol) {
  REQUIRE(actual.shape() == expected.shape());
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == Approx(e[i]).margin(tol).epsilon(tol));
}

TEST_CASE("activations are channels-last from the convolution to the flatten") {
  for (DType dtype : {DType::kF64, DType::kF32}) {
    INFO(DTypeName(dtype));
    const Graph g = ConvBlock(dtype, /*return_conv=*/false);
    std::shared_ptr<Program> program = Program::Compile(g).value();
    INFO(ToString(program->graph()));
    const std::vector<std::string> paths = testing::LoweredPaths(program->graph());
    REQUIRE(testing::HasPath(paths, "conv2d:nhwc"));
    // The relu runs inside batch norm (its epilogue), writing its result.
    REQUIRE(testing::HasPath(paths, "batch_norm+relu:nhwc"));
    // Only a reshape reads the pooled result: written row-major, the flatten
    // is a view.
    REQUIRE(testing::HasPath(paths, "max_pool2d"));
    REQUIRE(testing::HasPath(paths, "reshape"));
    const std::vector<Tensor> args = Arguments(dtype);
    const Tensor planned = program->Run(args).value()[0];
    const Tensor reference = Interpret(g).value()(args).value()[0];
    RequireClose(planned, reference, dtype == DType::kF64 ? 1e-12 : 1e-5);
  }
}

TEST_CASE("outputs are row-major unless the caller takes any layout") {
  const Graph g = ConvBlock(DType::kF64, /*return_conv=*/true);
  const std::vector<Tensor> args = Arguments(DType::kF64);
  const std::vector<Tensor> reference = Interpret(g).value()(args).value();
  std::shared_ptr<Program> row_major = Program::Compile(g).value();
  REQUIRE(row_major->output_order(1).empty());
  const std::vector<Tensor> a = row_major->Run(args).value();
  REQUIRE(a[1].is_contiguous());
  std::shared_ptr<Program> free = Program::Compile(g, {.free_outputs_from = 1}).value();
  REQUIRE(free->output_order(0).empty());
  REQUIRE(free->output_order(1) == kChannelsLast);
  const std::vector<Tensor> b = free->Run(args).value();
  REQUIRE(b[1].is_channels_last());
  for (int i = 0; i < 2; ++i) {
    RequireClose(a[i], reference[i], 1e-12);
    RequireClose(b[i], reference[i], 1e-12);
  }
}

TEST_CASE("a pass drawing random numbers between convolutions stays row-major") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF64, {2, 3, 8, 8}});
  Value* w = g.AddPlaceholder("w", {DType::kF64, {3, 3, 3, 3}});
  Value* seed = g.AddPlaceholder("seed", {DType::kI64, {}});
  Value* offset = g.AddPlaceholder("offset", {DType::kI64, {}});
  const Attrs conv = {{"stride", Ints{1, 1}},
                      {"padding", Ints{1, 1}},
                      {"dilation", Ints{1, 1}},
                      {"groups", int64_t{1}}};
  Value* c = g.AddNode(OpKind::kConv2d, {x, w}, conv).value()[0];
  Value* d = g.AddNode(OpKind::kDropout, {c, seed, offset}, {{"p", 0.5}}).value()[0];
  REQUIRE(g.SetOutputs({g.AddNode(OpKind::kConv2d, {d, w}, conv).value()[0]}).ok());
  const std::shared_ptr<Program> program = Program::Compile(g).value();
  INFO(ToString(program->graph()));
  const std::vector<std::string> paths = testing::LoweredPaths(program->graph());
  CHECK(testing::HasPath(paths, "conv2d:nhwc"));
  CHECK(testing::HasPath(paths, "dropout"));  // not "dropout:nhwc"
  Generator gen(5);
  const std::vector<Tensor> args = {randn({2, 3, 8, 8}, DType::kF64, &gen),
                                    randn({3, 3, 3, 3}, DType::kF64, &gen),
                                    from_vector<int64_t>({3}, {}), from_vector<int64_t>({7}, {})};
  RequireClose(program->Run(args).value()[0], Interpret(g).value()(args).value()[0], 1e-12);
}

TEST_CASE("an argument in another layout than its placeholder's is copied into it") {
  const Graph g = ConvBlock(DType::kF64, /*return_conv=*/false);
  CompileOptions options;
  options.argument_orders = {kChannelsLast, {}, {}, {}};
  std::shared_ptr<Program> program = Program::Compile(g, options).value();
  REQUIRE(program->graph().placeholders()[0]->layout() == kChannelsLast);
  std::vector<Tensor> args = Arguments(DType::kF64);
  const Tensor reference = Interpret(g).value()(args).value()[0];
  RequireClose(program->Run(args).value()[0], reference, 1e-12);  // row-major: copied
  args[0] = args[0].permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  REQUIRE(args[0].is_channels_last());
  RequireClose(program->Run(args).value()[0], reference, 1e-12);  // read in place
}

TEST_CASE("argument orders that do not fit the graph are an error") {
  const Graph g = ConvBlock(DType::kF64, /*return_conv=*/false);
  CompileOptions too_few;
  too_few.argument_orders = {kChannelsLast};
  absl::StatusOr<std::shared_ptr<Program>> a = Program::Compile(g, too_few);
  REQUIRE(a.status().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE_THAT(std::string(a.status().message()),
               Catch::Contains("expected 4 argument orders, got 1"));
  CompileOptions wrong_rank;
  wrong_rank.argument_orders = {{}, {}, kChannelsLast, {}};
  absl::StatusOr<std::shared_ptr<Program>> b = Program::Compile(g, wrong_rank);
  REQUIRE(b.status().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE_THAT(std::string(b.status().message()),
               Catch::Contains("argument 2 has rank 1, its order has 4 dims"));
}

TEST_CASE("the lowered graph shows each value's layout") {
  const Graph g = ConvBlock(DType::kF32, /*return_conv=*/false);
  const std::shared_ptr<Program> program = Program::Compile(g).value();
  // batch norm follows the convolution, and relu, its epilogue, follows
  // batch norm; the pooled value only a reshape reads stays row-major.
  CHECK(ToString(program->graph()) ==
        "graph(%x: f32[2,3,8,8], %w: f32[4,3,3,3], %gamma: f32[4], %beta: f32[4]) {\n"
        "  %0: f32[2,4,8,8]:nhwc = conv2d(%x, %w) {dilation=[1,1], groups=1, padding=[1,1], "
        "stride=[1,1]}\n"
        "  %4: f32[2,4,8,8]:nhwc, %2: f32[4], %3: f32[4] = fused(%0, %gamma, %beta) {\n"
        "    graph(%0: f32[2,4,8,8], %gamma: f32[4], %beta: f32[4]) {\n"
        "      %1: f32[2,4,8,8]:nhwc, %2: f32[4], %3: f32[4] = batch_norm(%0, %gamma, %beta) "
        "{eps=1.0000000000000001e-05}\n"
        "      %4: f32[2,4,8,8]:nhwc = relu(%1)\n"
        "      return (%4, %2, %3)\n"
        "    }\n"
        "  }\n"
        "  %5: f32[2,4,4,4] = max_pool2d(%4) {kernel=[2,2], padding=[0,0], stride=[2,2]}\n"
        "  %6: f32[2,64] = reshape(%5) {shape=[2,64]}\n"
        "  return (%6)\n"
        "}\n");
}

TEST_CASE("a lowered graph, printed and compiled again, lowers to itself") {
  for (bool return_conv : {false, true}) {
    const Graph g = ConvBlock(DType::kF32, return_conv);
    const std::string lowered = ToString(Program::Compile(g).value()->graph());
    INFO(lowered);
    CHECK(ToString(Program::Compile(testing::ParseOk(lowered)).value()->graph()) == lowered);
  }
}

TEST_CASE("assign-layouts as text: arguments, followers, fused passes and kept outputs") {
  const std::string in =
      "graph(%g: f32[2,4,3,3], %x: f32[2,4,3,3], %s: f32[4]) {\n"
      "  %0: f32[2,4,3,3] = max_pool2d_backward(%g, %x) {kernel=[1,1], padding=[0,0], "
      "stride=[1,1]}\n"
      "  %1: f32[2,4,3,3] = neg(%0)\n"
      "  %2: f32[2,4,3,3] = mul(%1, %x)\n"
      "  %3: f32[4] = neg(%s)\n"
      "  return (%2, %1, %3)\n"
      "}\n";
  CompileOptions options;
  options.argument_orders = {{}, kChannelsLast, {}};
  options.free_outputs_from = 1;
  // %x comes channels-last; the pooling gradient follows it (its input 1),
  // and so does the neg. The mul, output 0, stays row-major for the caller;
  // output 1 may take any layout.
  CHECK(testing::RunOnText(in, {AssignLayouts(options)}).first ==
        "graph(%g: f32[2,4,3,3], %x: f32[2,4,3,3]:nhwc, %s: f32[4]) {\n"
        "  %0: f32[2,4,3,3]:nhwc = max_pool2d_backward(%g, %x) {kernel=[1,1], padding=[0,0], "
        "stride=[1,1]}\n"
        "  %1: f32[2,4,3,3]:nhwc = neg(%0)\n"
        "  %2: f32[2,4,3,3] = mul(%1, %x)\n"
        "  %3: f32[4] = neg(%s)\n"
        "  return (%2, %1, %3)\n"
        "}\n");
}

TEST_CASE("a view with channels-last strides is followed like a channels-last value") {
  // An NHWC image permuted to NCHW is a channels-last view: batch norm writes
  // channels-last too, so the convolution after it reads no reorder.
  const std::string in =
      "graph(%img: f32[2,5,5,4], %g: f32[4], %b: f32[4]) {\n"
      "  %x: f32[2,4,5,5] = permute(%img) {dims=[0,3,1,2]}\n"
      "  %n: f32[2,4,5,5], %m: f32[4], %v: f32[4] = batch_norm(%x, %g, %b) {eps=0.5}\n"
      "  %s: f32[2,4,5,5] = relu(%n)\n"
      "  return (%m, %s)\n"
      "}\n";
  CompileOptions options;
  options.free_outputs_from = 1;
  CHECK(testing::RunOnText(in, {AssignLayouts(options)}).first ==
        "graph(%img: f32[2,5,5,4], %g: f32[4], %b: f32[4]) {\n"
        "  %x: f32[2,4,5,5]:nhwc = permute(%img) {dims=[0,3,1,2]}\n"
        "  %n: f32[2,4,5,5]:nhwc, %m: f32[4], %v: f32[4] = batch_norm(%x, %g, %b) {eps=0.5}\n"
        "  %s: f32[2,4,5,5]:nhwc = relu(%n)\n"
        "  return (%m, %s)\n"
        "}\n");
}

TEST_CASE("a cast to bf16 between convolutions follows its input's layout") {
  // The autocast pass's casts run as kernels of their own (no fused pass
  // takes bf16): the bf16 copy of a channels-last activation is
  // channels-last too, as the next convolution reads it.
  const std::string conv = "{dilation=[1,1], groups=1, out_dtype=f32, padding=[1,1], stride=[1,1]}";
  const std::string in =
      "graph(%x: bf16[2,4,5,5], %w: bf16[4,4,3,3]) {\n"
      "  %y: f32[2,4,5,5] = conv2d(%x, %w) " +
      conv +
      "\n"
      "  %r: f32[2,4,5,5] = relu(%y)\n"
      "  %h: bf16[2,4,5,5] = cast(%r) {dtype=bf16}\n"
      "  %z: f32[2,4,5,5] = conv2d(%h, %w) " +
      conv +
      "\n"
      "  return (%z)\n"
      "}\n";
  CompileOptions options;
  options.free_outputs_from = 0;
  CHECK(testing::RunOnText(in, {AssignLayouts(options)}).first ==
        "graph(%x: bf16[2,4,5,5], %w: bf16[4,4,3,3]) {\n"
        "  %y: f32[2,4,5,5]:nhwc = conv2d(%x, %w) " +
            conv +
            "\n"
            "  %r: f32[2,4,5,5]:nhwc = relu(%y)\n"
            "  %h: bf16[2,4,5,5]:nhwc = cast(%r) {dtype=bf16}\n"
            "  %z: f32[2,4,5,5]:nhwc = conv2d(%h, %w) " +
            conv +
            "\n"
            "  return (%z)\n"
            "}\n");
}

}  // namespace
}  // namespace tc::codegen
