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
Graph Region(const std::string& c_type, const std::string& body_lines, const std::string& ret,
             const std::string& results = "%r: f32[2,2]") {
  const std::string text = "graph(%a: f32[2,2], %c: " + c_type + ") {\n" + "  " + results +
                           " = fused(%a, %c) {\n" + "    graph(%a: f32[2,2], %c: " + c_type +
                           ") {\n" + body_lines + "      return (" + ret +
                           ")\n    }\n  }\n  return (%r)\n}\n";
  absl::StatusOr<Graph> g = Parse(text);
  INFO(text << g.status().message());
  REQUIRE(g.ok());
  return *std::move(g);
}

// `text` with every "LAYOUT" in it replaced by `layout`, parsed.
Graph WithLayout(std::string text, const std::string& layout) {
  for (size_t at = text.find("LAYOUT"); at != std::string::npos; at = text.find("LAYOUT")) {
    text.replace(at, 6, layout);
  }
  return testing::ParseOk(text);
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

TEST_CASE("layouts: only on results a kernel writes in that layout") {
  const std::string header = "graph(%x: f32[2,3,4,4], %w: f32[3,3,1,1], %g: f32[3]) {\n";
  CHECK(
      Verify(testing::ParseOk(header + "  %c: f32[2,3,4,4]:nhwc = conv2d(%x, %w) {dilation=[1,1], "
                                       "groups=1, padding=[0,0], stride=[1,1]}\n"
                                       "  %n: f32[2,3,4,4]:nhwc = neg(%c)\n"
                                       "  %p: f32[2,4,4,3]:nhwc = permute(%n) {dims=[0,2,3,1]}\n"
                                       "  return (%p)\n}\n"))
          .ok());
  CHECK(VerifyError(testing::ParseOk(header + "  %m: f32[2,3,4,4]:nhwc = matmul(%x, %x)\n"
                                              "  return (%m)\n}\n")) ==
        "node `%m: f32[2,3,4,4]:nhwc = matmul(%x, %x)`: %m is channels-last, but matmul writes "
        "it row-major");
  CHECK(Verify(testing::ParseOk(header + "  %y: f32[2,3,4,4]:nhwc, %mean: f32[3], %var: f32[3] = "
                                         "batch_norm(%x, %g, %g) {eps=0.25}\n"
                                         "  return (%y)\n}\n"))
            .ok());
}

TEST_CASE("regions: a fused body of fusible ops over one shape verifies") {
  CHECK(Verify(Region("f32[2]", "      %r: f32[2,2] = add(%a, %c)\n", "%r")).ok());
}

TEST_CASE("regions: an op without a fused evaluation in a body is rejected") {
  CHECK(VerifyError(Region("f32[2,2]", "      %m: f32[2,2] = matmul(%a, %c)\n", "%m")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: its body holds matmul, which has no fused "
        "evaluation: `%m: f32[2,2] = matmul(%a, %c)`");
  CHECK(VerifyError(Region(
            "f32[2,2]", "      %s: f32[2,2] = full() {dtype=f32, shape=[2,2], value=1}\n", "%s")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: its body holds full, which has no fused "
        "evaluation: `%s: f32[2,2] = full() {dtype=f32, shape=[2,2], value=1}`");
}

TEST_CASE("regions: a random op draws in a row-major pass, from i64 scalar placeholders") {
  const std::string text =
      "graph(%x: f32[1,2,2,2], %s: i64[]) {\n"
      "  %r: f32[1,2,2,2]LAYOUT = fused(%x, %s) {\n"
      "    graph(%x: f32[1,2,2,2], %s: i64[]) {\n"
      "      %d: f32[1,2,2,2]LAYOUT = dropout(%x, %s, %s) {p=0.5}\n"
      "      %r: f32[1,2,2,2]LAYOUT = relu(%d)\n"
      "      return (%r)\n"
      "    }\n"
      "  }\n"
      "  return (%r)\n"
      "}\n";
  auto with = [&](const std::string& layout) { return WithLayout(text, layout); };
  CHECK(Verify(with("")).ok());
  CHECK(VerifyError(with(":nhwc")) ==
        "node `%r: f32[1,2,2,2]:nhwc = fused(%x, %s)`: body: node `%d: f32[1,2,2,2]:nhwc = "
        "dropout(%x, %s, %s) {p=0.5}`: %d is channels-last, but dropout draws its numbers in "
        "row-major element order");
}

TEST_CASE("layouts: a lone random op writes row-major") {
  CHECK(VerifyError(testing::ParseOk("graph(%x: f32[1,2,2,2], %s: i64[]) {\n"
                                     "  %d: f32[1,2,2,2]:nhwc = dropout(%x, %s, %s) {p=0.5}\n"
                                     "  return (%d)\n"
                                     "}\n")) ==
        "node `%d: f32[1,2,2,2]:nhwc = dropout(%x, %s, %s) {p=0.5}`: %d is channels-last, but "
        "dropout draws its numbers in row-major element order");
}

TEST_CASE("regions: a body value of another shape or dtype, or a returned placeholder") {
  CHECK(VerifyError(Region("f32[2]",
                           "      %n: f32[2] = neg(%c)\n"
                           "      %s: f32[2,2] = add(%a, %n)\n",
                           "%s")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: %n in its body has shape [2], its region's is [2,2]");
  CHECK(VerifyError(Region("i64[2,2]", "      %n: f32[2,2] = neg(%a)\n", "%n")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: %c in its body is i64[2,2]: a fused region "
        "computes in f32, f64 and bool, and casts between f32 and bf16");
  // bf16 enters and leaves a pass only through casts to and from f32.
  CHECK(Verify(Region("bf16[2,2]",
                      "      %f: f32[2,2] = cast(%c) {dtype=f32}\n"
                      "      %s: f32[2,2] = add(%a, %f)\n"
                      "      %h: bf16[2,2] = cast(%s) {dtype=bf16}\n",
                      "%s, %h", "%r: f32[2,2], %rh: bf16[2,2]"))
            .ok());
  CHECK(VerifyError(
            Region("bf16[2,2]", "      %s: bf16[2,2] = add(%c, %c)\n", "%s", "%r: bf16[2,2]")) ==
        "node `%r: bf16[2,2] = fused(%a, %c)`: %c in its body is bf16[2,2]: a fused region "
        "computes in f32, f64 and bool, and casts between f32 and bf16");
  CHECK(VerifyError(Region("f32[2,2]",
                           "      %h: bf16[2,2] = cast(%c) {dtype=bf16}\n"
                           "      %d: f64[2,2] = cast(%h) {dtype=f64}\n"
                           "      %s: f32[2,2] = cast(%d) {dtype=f32}\n",
                           "%s")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: %h in its body is bf16[2,2]: a fused region "
        "computes in f32, f64 and bool, and casts between f32 and bf16");
  CHECK(VerifyError(Region("f32[2,2]", "", "%a")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: its body returns its placeholder %a");
  CHECK(VerifyError(Region("f32[3]", "      %n: f32[2,2] = neg(%a)\n", "%n")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: its body's placeholder %c f32[3] does not "
        "broadcast to its region's shape [2,2]");
}

// A graph with one fused node %z over `body_lines`, taking %x: f32[4,8],
// %w: f32[3,8], %b: f32[3] and %r: `r_type`, returning %z: f32[4,3].
Graph Epilogue(const std::string& r_type, const std::string& body_lines,
               const std::string& ret = "%z") {
  const std::string params = "%x: f32[4,8], %w: f32[3,8], %b: f32[3], %r: " + r_type;
  const std::string text = "graph(" + params + ") {\n  %z: f32[4,3] = fused(%x, %w, %b, %r) {\n" +
                           "    graph(" + params + ") {\n" + body_lines + "      return (" + ret +
                           ")\n    }\n  }\n  return (%z)\n}\n";
  absl::StatusOr<Graph> g = Parse(text);
  INFO(text << g.status().message());
  REQUIRE(g.ok());
  return *std::move(g);
}

constexpr char kLinear[] = "      %y: f32[4,3] = linear(%x, %w, %b)\n";
constexpr char kFusedZ[] = "node `%z: f32[4,3] = fused(%x, %w, %b, %r)`: ";

TEST_CASE("regions: a kernel and the epilogue it takes verify") {
  CHECK(Verify(Epilogue("f32[3]", std::string(kLinear) +
                                      "      %g: f32[4,3] = gelu(%y) {approximate=\"tanh\"}\n"
                                      "      %z: f32[4,3] = add(%r, %g)\n"))
            .ok());
}

TEST_CASE("regions: an epilogue the kernel does not take, or not laid out as one, is rejected") {
  CHECK(VerifyError(Epilogue("f32[3]", std::string(kLinear) +
                                           "      %p: f32[4,3] = pow(%y) {exponent=2}\n"
                                           "      %z: f32[4,3] = add(%p, %r)\n")) ==
        std::string(kFusedZ) +
            "its body's epilogue of linear is not one its kernel takes: [pow, add] on f32");
  CHECK(VerifyError(
            Epilogue("f32[3]", std::string(kLinear) + "      %z: f32[4,3] = sub(%r, %y)\n")) ==
        std::string(kFusedZ) +
            "its body's epilogue of linear reads %y as the second operand: `%z: f32[4,3] = "
            "sub(%r, %y)`");
  CHECK(VerifyError(Epilogue("f32[3]",
                             "      %y: f32[4,3] = linear(%x, %w, %r)\n"
                             "      %z: f32[4,3] = add(%y, %b)\n")) ==
        std::string(kFusedZ) +
            "its body's epilogue of linear needs the kernel to read the body's first 3 "
            "placeholders in order");
  CHECK(VerifyError(Epilogue("f32[3]", std::string(kLinear) + "      %t: f32[4,3] = relu(%y)\n"
                                                              "      %z: f32[4,3] = relu(%t)\n")) ==
        std::string(kFusedZ) + "its body's epilogue of linear leaves placeholders unread");
  CHECK(VerifyError(Epilogue("f32[3]",
                             std::string(kLinear) + "      %z: f32[4,3] = add(%y, %r)\n"
                                                    "      %u: f32[4,3] = relu(%y)\n",
                             "%z")) ==
        std::string(kFusedZ) +
            "its body's epilogue of linear reads %z 0 times: `%u: f32[4,3] = relu(%y)`");
}

TEST_CASE("regions: results in the body's output layouts, one order per pass, bare placeholders") {
  const std::string text =
      "graph(%x: f32[1,2,2,2]) {\n"
      "  %r: f32[1,2,2,2]:nhwc = fused(%x) {\n"
      "    graph(%x: f32[1,2,2,2]) {\n"
      "      %n: f32[1,2,2,2]LAYOUT = neg(%x)\n"
      "      %r: f32[1,2,2,2] = relu(%n)\n"
      "      return (%r)\n"
      "    }\n"
      "  }\n"
      "  return (%r)\n"
      "}\n";
  auto with = [&](const std::string& layout) { return WithLayout(text, layout); };
  CHECK(VerifyError(with("")) ==
        "node `%r: f32[1,2,2,2]:nhwc = fused(%x)`: %r is channels-last, but its body returns %r "
        "row-major");
  CHECK(VerifyError(with(":nhwc")) ==
        "node `%r: f32[1,2,2,2]:nhwc = fused(%x)`: %n in its body is channels-last, its "
        "region's order is row-major");
  CHECK(VerifyError(testing::ParseOk("graph(%x: f32[1,2,2,2]:nhwc) {\n"
                                     "  %r: f32[1,2,2,2] = fused(%x) {\n"
                                     "    graph(%x: f32[1,2,2,2]:nhwc) {\n"
                                     "      %r: f32[1,2,2,2] = relu(%x)\n"
                                     "      return (%r)\n"
                                     "    }\n"
                                     "  }\n"
                                     "  return (%r)\n"
                                     "}\n")) ==
        "node `%r: f32[1,2,2,2] = fused(%x)`: its body's placeholder %x has a layout: a region "
        "reads its operands through their strides");
}

TEST_CASE("regions: sums of the pass's values verify; other sums and reshapes are rejected") {
  CHECK(Verify(Region("f32[2]",
                      "      %n: f32[2,2] = add(%a, %c)\n"
                      "      %f: f32[4] = reshape(%n) {shape=[4]}\n"
                      "      %s: f32[] = sum(%f) {dims=[], keepdim=false}\n",
                      "%n, %s", "%r: f32[2,2], %s: f32[]"))
            .ok());
  CHECK(
      VerifyError(Region("f32[2]",
                         "      %n: f32[2,2] = add(%a, %c)\n"
                         "      %s: f32[2] = sum(%a) {dims=[0], keepdim=false}\n",
                         "%n, %s", "%r: f32[2,2], %s: f32[2]")) ==
      "node `%r: f32[2,2], %s: f32[2] = fused(%a, %c)`: its body sums %a, which its pass does not "
      "compute: `%s: f32[2] = sum(%a) {dims=[0], keepdim=false}`");
  CHECK(VerifyError(Region("f32[2]",
                           "      %n: f32[2,2] = add(%a, %c)\n"
                           "      %s: f32[2] = sum(%n) {dims=[0], keepdim=false}\n"
                           "      %m: f32[2,2] = mul(%n, %s)\n",
                           "%m")) ==
        "node `%r: f32[2,2] = fused(%a, %c)`: its body's sum %s is read in its body, or not "
        "returned");
  CHECK(VerifyError(Region("f32[2]",
                           "      %n: f32[2,2] = add(%a, %c)\n"
                           "      %f: f32[4] = reshape(%n) {shape=[4]}\n",
                           "%n, %f", "%r: f32[2,2], %f: f32[4]")) ==
        "node `%r: f32[2,2], %f: f32[4] = fused(%a, %c)`: its body holds a reshape that is not a "
        "row-major pass's value read by sums: `%f: f32[4] = reshape(%n) {shape=[4]}`");
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
