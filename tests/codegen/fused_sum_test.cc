// Sums fused into elementwise passes (codegen/fuse_sums.h, FusedKernel's
// FusedSum): which sums a program runs in the pass, that their results match
// the interpreter's sum kernel to rounding, and that they do not depend on
// the thread count.
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/interpreter.h"
#include "codegen/program.h"
#include "graph/printer.h"
#include "runtime/ops.h"
#include "runtime/random.h"
#include "tests/codegen/lowered_paths.h"
#include "tests/graph/graphs.h"
#include "tests/test_util.h"

namespace tc::codegen {
namespace {

Value* Op(Graph& g, OpKind op, std::vector<Value*> in, Attrs attrs = {}) {
  return g.AddNode(op, std::move(in), std::move(attrs)).value()[0];
}

Value* Sum(Graph& g, Value* x, std::vector<int64_t> dims, bool keepdim = false) {
  return Op(g, OpKind::kSum, {x}, {{"dims", std::move(dims)}, {"keepdim", keepdim}});
}

std::vector<Tensor> RandomArgs(const Graph& g) {
  Generator gen(11);
  std::vector<Tensor> args;
  for (const Value* p : g.placeholders()) {
    args.push_back(randn(p->type().shape, p->type().dtype, &gen));
  }
  return args;
}

// The number of results of the lowered graph's region that sums in its
// pass; 0 when there is none.
int SummingRegionResults(const Graph& lowered) {
  for (const Node* node : lowered.nodes()) {
    if (node->body() == nullptr) continue;
    for (const Node* n : node->body()->nodes()) {
      if (n->op() == OpKind::kSum) return node->num_results();
    }
  }
  return 0;
}

// Compiles `g`, checks whether its lowered graph still has a sum node of its
// own, and compares every output with the interpreter's.
void Check(const Graph& g, bool fused) {
  std::shared_ptr<Program> program = Program::Compile(g).value();
  INFO(ToString(program->graph()));
  const std::vector<std::string> paths = testing::LoweredPaths(program->graph());
  REQUIRE(testing::HasPath(paths, "sum*") != fused);
  REQUIRE(testing::HasPath(paths, "fused{* sum*") == fused);
  const std::vector<Tensor> args = RandomArgs(g);
  const std::vector<Tensor> got = program->Run(args).value();
  const std::vector<Tensor> want = Interpret(g).value()(args).value();
  for (size_t o = 0; o < got.size(); ++o) {
    REQUIRE(got[o].shape() == want[o].shape());
    const double tol = got[o].dtype() == DType::kF64 ? 1e-12 : 1e-5;
    const std::vector<double> a = got[o].to_vector<double>(), e = want[o].to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("output " << o << " element " << i);
      REQUIRE(a[i] == Approx(e[i]).margin(tol).epsilon(tol));
    }
  }
}

TEST_CASE("a bias gradient sums in the pass of the elementwise ops before it") {
  for (DType dtype : {DType::kF32, DType::kF64}) {
    INFO(DTypeName(dtype));
    Graph g;
    Value* x = g.AddPlaceholder("x", {dtype, {64, 48}});
    Value* t = g.AddPlaceholder("t", {dtype, {64, 48}});
    Value* gx = Op(g, OpKind::kMul, {Op(g, OpKind::kRelu, {x}), t});
    SECTION("the value is also returned, so written") {
      g.SetOutputs({gx, Sum(g, gx, {0})}).IgnoreError();
      Check(g, true);
    }
    SECTION("the sum is the only reader: the value is never written") {
      g.SetOutputs({Sum(g, gx, {0})}).IgnoreError();
      Check(g, true);
      REQUIRE(SummingRegionResults(Program::Compile(g).value()->graph()) == 1);
    }
  }
}

TEST_CASE("softmax's backward sums each row in the pass") {
  Graph g;
  Value* y = g.AddPlaceholder("y", {DType::kF32, {2, 3, 16, 128}});
  Value* t = g.AddPlaceholder("t", {DType::kF32, {2, 3, 16, 128}});
  Value* s = Sum(g, Op(g, OpKind::kMul, {y, t}), {3}, /*keepdim=*/true);
  g.SetOutputs({Op(g, OpKind::kMul, {y, Op(g, OpKind::kSub, {t, s})})}).IgnoreError();
  Check(g, true);
}

TEST_CASE("rows longer than a block, every dim, and sums through a reshape") {
  SECTION("rows of 1024") {
    Graph g;
    Value* x = g.AddPlaceholder("x", {DType::kF64, {6, 1024}});
    g.SetOutputs({Sum(g, Op(g, OpKind::kExp, {x}), {-1})}).IgnoreError();
    Check(g, true);
  }
  SECTION("every dim (dims [])") {
    Graph g;
    Value* x = g.AddPlaceholder("x", {DType::kF32, {64, 64}});
    g.SetOutputs({Sum(g, Op(g, OpKind::kTanh, {x}), {})}).IgnoreError();
    Check(g, true);
  }
  SECTION("a reshape of the value") {
    Graph g;
    Value* x = g.AddPlaceholder("x", {DType::kF32, {8, 16, 32}});
    Value* y = Op(g, OpKind::kSigmoid, {x});
    Value* flat = Op(g, OpKind::kReshape, {y}, {{"shape", std::vector<int64_t>{128, 32}}});
    g.SetOutputs({y, Sum(g, flat, {0})}).IgnoreError();
    Check(g, true);
  }
}

TEST_CASE("a channels-last value sums over batch and space in the pass") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {4, 3, 8, 8}});
  Value* w = g.AddPlaceholder("w", {DType::kF32, {32, 3, 3, 3}});
  Value* y = Op(g, OpKind::kConv2d, {x, w},
                {{"stride", std::vector<int64_t>{1, 1}},
                 {"padding", std::vector<int64_t>{1, 1}},
                 {"dilation", std::vector<int64_t>{1, 1}},
                 {"groups", int64_t{1}}});
  Value* r = Op(g, OpKind::kRelu, {y});
  g.SetOutputs({Sum(g, r, {0, 2, 3}, /*keepdim=*/true)}).IgnoreError();
  const std::shared_ptr<Program> program = Program::Compile(g).value();
  INFO(ToString(program->graph()));
  REQUIRE(testing::HasPath(testing::LoweredPaths(program->graph()), "fused{relu sum}:nhwc"));
  REQUIRE(SummingRegionResults(program->graph()) == 1);  // the sum only
  Check(g, true);
  // Compiled again, the printed lowered graph keeps its channels-last pass.
  const std::string lowered = ToString(program->graph());
  CHECK(ToString(Program::Compile(testing::ParseOk(lowered)).value()->graph()) == lowered);
}

TEST_CASE("sums the pass cannot take stay sum steps") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {4, 20, 100}});
  Value* y = Op(g, OpKind::kExp, {x});
  SECTION("a middle dim") { g.SetOutputs({Sum(g, y, {1})}).IgnoreError(); }
  SECTION("rows of 100, which neither divide a block nor fill blocks") {
    g.SetOutputs({Sum(g, y, {2})}).IgnoreError();
  }
  SECTION("fewer than 16 kept elements of an outer sum") {
    g.SetOutputs(
         {Sum(g, Op(g, OpKind::kReshape, {y}, {{"shape", std::vector<int64_t>{800, 10}}}), {0})})
        .IgnoreError();
  }
  Check(g, false);
}

TEST_CASE("an empty value sums to zeros") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {0, 32}});
  g.SetOutputs({Sum(g, Op(g, OpKind::kExp, {x}), {0})}).IgnoreError();
  Check(g, true);
}

TEST_CASE("an empty inner dim or an empty whole is summed by the sum kernel") {
  Graph g;
  SECTION("[3,0] over its inner dim") {
    Value* x = g.AddPlaceholder("x", {DType::kF32, {3, 0}});
    g.SetOutputs({Sum(g, Op(g, OpKind::kExp, {x}), {1})}).IgnoreError();
  }
  SECTION("[0,5] over every dim") {
    Value* x = g.AddPlaceholder("x", {DType::kF32, {0, 5}});
    g.SetOutputs({Sum(g, Op(g, OpKind::kRelu, {x}), {})}).IgnoreError();
  }
  Check(g, false);
}

TEST_CASE("fused sums give the same bits on one thread as on two") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {1024, 96}});
  Value* y = Op(g, OpKind::kGelu, {x}, {{"approximate", std::string("none")}});
  g.SetOutputs({Sum(g, y, {0}), Sum(g, y, {1})}).IgnoreError();
  // 96 per row: the row sum is not fused, the column sum is.
  std::shared_ptr<Program> program = Program::Compile(g).value();
  REQUIRE(testing::HasPath(testing::LoweredPaths(program->graph()), "fused{gelu sum}"));
  const std::vector<Tensor> args = RandomArgs(g);
  auto run = [&] { return program->Run(args).value()[0].to_vector<float>(); };
  REQUIRE(testing::OnThreads(1, run) == testing::OnThreads(2, run));
}

TEST_CASE("a lowered graph with a sum its region's pass cannot take is an error, not a crash") {
  const Graph g = testing::ParseOk(
      "graph(%x: f32[4,20,100]) {\n"
      "  %s: f32[4,100] = fused(%x) {  # head\n"
      "    graph(%x: f32[4,20,100]) {\n"
      "      %y: f32[4,20,100] = exp(%x)\n"
      "      %s: f32[4,100] = sum(%y) {dims=[1], keepdim=false}\n"
      "      return (%s)\n"
      "    }\n"
      "  }\n"
      "  return (%s)\n"
      "}\n");
  const absl::StatusOr<std::shared_ptr<Program>> program = Program::Compile(g);
  REQUIRE(program.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(program.status().message() ==
        "fused: its pass cannot sum %y f32[4,20,100] over dims [1] (at head)");
}

}  // namespace
}  // namespace tc::codegen
