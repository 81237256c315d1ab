// Each verifier rule, broken once through the rewrite primitives a pass uses,
// with the exact message naming the node by its printed line.
#include "graph/verifier.h"

#include "catch2/catch.hpp"
#include "graph/parser.h"
#include "graph/printer.h"
#include "tests/graph/graphs.h"

namespace tc {
namespace {

using testing::Add;
using testing::F32;

std::string VerifyError(const Graph& g) {
  absl::Status s = Verify(g);
  REQUIRE(!s.ok());
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  return std::string(s.message());
}

TEST_CASE("well-formed graphs verify") {
  CHECK(Verify(testing::Mlp()).ok());
  CHECK(Verify(testing::ConvNet()).ok());
  CHECK(Verify(testing::Attention()).ok());
  CHECK(Verify(Graph()).ok());
}

TEST_CASE("types: a result type that inference no longer gives is rejected") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({4, 3}));
  Value* y = g.AddPlaceholder("y", F32({2}));
  Node* relu = Add(g, OpKind::kRelu, {x})[0]->producer();
  REQUIRE(relu->SetInput(0, y).ok());
  CHECK(VerifyError(g) ==
        "node `%0: f32[4,3] = relu(%y)`: declared f32[4,3], but relu infers f32[2]");
}

TEST_CASE("types: changed attributes are re-inferred, including attribute errors") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({4, 3}));
  Node* sum = Add(g, OpKind::kSum, {x}, {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}})[0]
                  ->producer();
  sum->SetAttrs({{"dims", std::vector<int64_t>{0}}, {"keepdim", false}});
  CHECK(VerifyError(g) ==
        "node `%0: f32[4] = sum(%x) {dims=[0], keepdim=false}`: declared f32[4], but sum infers "
        "f32[3]");
  sum->SetAttrs({{"dims", int64_t{0}}, {"keepdim", false}});
  CHECK(VerifyError(g) ==
        "node `%0: f32[4] = sum(%x) {dims=0, keepdim=false}`: sum: attribute 'dims' must be int "
        "list, got 0");
}

TEST_CASE("SSA: an operand used before its definition is rejected") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Node* a = Add(g, OpKind::kRelu, {x})[0]->producer();
  Value* b = Add(g, OpKind::kExp, {a->result(0)})[0];
  REQUIRE(a->SetInput(0, b).ok());
  CHECK(VerifyError(g) ==
        "node `%0: f32[3] = relu(%1)`: operand 0 (%1) is used before its definition");
}

TEST_CASE("SSA: a value name defined twice is rejected") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* y = g.AddPlaceholder("y", F32({3}));
  Value* r = Add(g, OpKind::kRelu, {x})[0];
  g.RenameValue(r, "x");
  CHECK(VerifyError(g) == "node `%x: f32[3] = relu(%x)`: %x is defined twice");
  g.RenameValue(r, "r");
  g.RenameValue(y, "x");
  CHECK(VerifyError(g) == "placeholder `%x: f32[3]`: %x is defined twice");
}

TEST_CASE("dangling: an operand whose producer was removed is rejected") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* dead = Add(g, OpKind::kExp, {x})[0];
  Node* relu = Add(g, OpKind::kRelu, {x})[0]->producer();
  REQUIRE(g.RemoveNode(dead->producer()).ok());
  REQUIRE(relu->SetInput(0, dead).ok());
  CHECK(VerifyError(g) ==
        "node `%1: f32[3] = relu(%0)`: operand 0 (%0) is dangling: its producer was removed from "
        "the graph");
}

TEST_CASE("outputs: an output that is no longer in the graph is rejected") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* dead = Add(g, OpKind::kExp, {x})[0];
  REQUIRE(g.RemoveNode(dead->producer()).ok());
  REQUIRE(g.SetOutputs({x, dead}).ok());
  CHECK(VerifyError(g) ==
        "return: output 1 (%0) is dangling: its producer was removed from the graph");
}

TEST_CASE("values of another graph cannot enter operands or outputs") {
  Graph g, other;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* foreign = other.AddPlaceholder("x", F32({3}));
  Node* relu = Add(g, OpKind::kRelu, {x})[0]->producer();
  CHECK(relu->SetInput(0, foreign).message() == "relu: operand 0 is not a value of this graph");
  CHECK(g.SetOutputs({foreign}).message() == "output 0 is not a value of this graph");
  CHECK(g.ReplaceAllUsesWith(x, foreign).message() == "ReplaceAllUsesWith: value of another graph");
  CHECK(g.AddNode(OpKind::kRelu, {foreign}).status().message() ==
        "relu: operand 0 is not a value of this graph");
  CHECK(Verify(g).ok());
}

TEST_CASE("a broken graph clones into an equally broken graph") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* dead = Add(g, OpKind::kExp, {x})[0];
  Node* relu = Add(g, OpKind::kRelu, {x})[0]->producer();
  REQUIRE(g.RemoveNode(dead->producer()).ok());
  REQUIRE(relu->SetInput(0, dead).ok());
  const Graph copy = g.Clone();
  CHECK(Verify(copy).message() == Verify(g).message());
  CHECK(ToString(copy) == ToString(g));
}

// A graph with one fused node over `body_lines` (its body's nodes, indented
// six spaces), taking %a: f32[2,2] and %c: `c_type`, returning `ret`.
Graph Region(const std::string& c_type, const std::string& body_lines, const std::string& ret) {
  const std::string text = "graph(%a: f32[2,2], %c: " + c_type + ") {\n" +
                           "  %r: f32[2,2] = fused(%a, %c) {\n" +
                           "    graph(%a: f32[2,2], %c: " + c_type + ") {\n" + body_lines +
                           "      return (" + ret + ")\n    }\n  }\n  return (%r)\n}\n";
  absl::StatusOr<Graph> g = Parse(text);
  INFO(text << g.status().message());
  REQUIRE(g.ok());
  return *std::move(g);
}

TEST_CASE("layouts: channels-last only on rank-4 values") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({4, 3}));
  REQUIRE(g.SetOutputs({Add(g, OpKind::kRelu, {x})[0]}).ok());
  g.SetLayout(x, kChannelsLast);
  CHECK(VerifyError(g) ==
        "placeholder `%x: f32[4,3]`: %x f32[4,3] has a layout; only a rank-4 value may be "
        "channels-last");
}

TEST_CASE("regions: a fused body of fusible ops over one shape verifies") {
  CHECK(Verify(Region("f32[2]", "      %r: f32[2,2] = add(%a, %c)\n", "%r")).ok());
}

TEST_CASE("regions: an op without a fused evaluation in a body is rejected") {
  CHECK(VerifyError(Region("f32[2,2]", "      %m: f32[2,2] = matmul(%a, %c)\n", "%m")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: its body holds matmul, which has no fused "
        "evaluation: `%m: f32[2,2] = matmul(%a, %c)`");
  CHECK(VerifyError(Region("f32[2,2]",
                           "      %d: f32[2,2] = dropout(%a) {offset=0, p=0.5, seed=1}\n", "%d")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: its body holds dropout, which has no fused "
        "evaluation: `%d: f32[2,2] = dropout(%a) {offset=0, p=0.5, seed=1}`");
}

TEST_CASE("regions: a body value of another shape or dtype, or a returned placeholder") {
  CHECK(VerifyError(Region("f32[2]",
                           "      %n: f32[2] = neg(%c)\n"
                           "      %s: f32[2,2] = add(%a, %n)\n",
                           "%s")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: %n in its body has shape [2], its region's is [2,2]");
  CHECK(VerifyError(Region("i64[2,2]", "      %n: f32[2,2] = neg(%a)\n", "%n")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: %c in its body is i64[2,2]: a fused region "
        "computes in f32, f64 and bool");
  CHECK(VerifyError(Region("f32[2,2]", "", "%a")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: its body returns its placeholder %a");
  CHECK(VerifyError(Region("f32[3]", "      %n: f32[2,2] = neg(%a)\n", "%n")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: its body's placeholder %c f32[3] does not "
        "broadcast to its region's shape [2,2]");
}

TEST_CASE("regions: built only through AddRegionNode, with the body's types") {
  Graph body;
  Value* p = body.AddPlaceholder("p", F32({3}));
  REQUIRE(body.SetOutputs({Add(body, OpKind::kExp, {p})[0]}).ok());
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({2}));
  CHECK(g.AddNode(OpKind::kFused, {x}).status().message() ==
        "fused: its result types are its body's: build it with Graph::AddRegionNode");
  CHECK(g.AddRegionNode(OpKind::kRelu, {x}, body.Clone()).status().message() ==
        "relu is not a region op");
  CHECK(g.AddRegionNode(OpKind::kFused, {x}, body.Clone()).status().message() ==
        "fused: operand 0 is f32[2], its body's placeholder %p f32[3]");
  CHECK(g.AddRegionNode(OpKind::kFused, {x, x}, body.Clone()).status().message() ==
        "fused: 2 inputs, but its body takes 1");
  Value* y = g.AddPlaceholder("y", F32({3}));
  const std::vector<Value*> r = g.AddRegionNode(OpKind::kFused, {y}, std::move(body)).value();
  CHECK(r[0]->type() == F32({3}));
  REQUIRE(g.SetOutputs(r).ok());
  CHECK(Verify(g).ok());
}

}  // namespace
}  // namespace tc
