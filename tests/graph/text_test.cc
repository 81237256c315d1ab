// The text form: exact goldens for three models, print -> parse -> print
// round trips, and the parser's error for each kind of malformed input.
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_join.h"
#include "catch2/catch.hpp"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "tests/graph/graphs.h"

namespace tc {
namespace {

using testing::Add;
using testing::F32;

constexpr char kMlpText[] =
    "graph(%x: f32[4,3], %p_fc1_weight: f32[8,3], %p_fc1_bias: f32[8], %p_fc2_weight: f32[2,8], "
    "%p_fc2_bias: f32[2]) {\n"
    "  %0: f32[4,8] = linear(%x, %p_fc1_weight, %p_fc1_bias)  # fc1\n"
    "  %1: f32[4,8] = relu(%0)  # act\n"
    "  %2: f32[4,2] = linear(%1, %p_fc2_weight, %p_fc2_bias)  # fc2\n"
    "  %3: f32[4,2] = log_softmax(%2) {dim=1}\n"
    "  return (%3)\n"
    "}\n";

constexpr char kConvNetText[] =
    "graph(%x: f32[2,3,8,8], %p_conv_weight: f32[4,3,3,3], %p_bn_weight: f32[4], "
    "%p_bn_bias: f32[4]) {\n"
    "  %0: f32[2,4,8,8] = conv2d(%x, %p_conv_weight) {dilation=[1,1], groups=1, padding=[1,1], "
    "stride=[1,1]}  # conv\n"
    "  %1: f32[2,4,8,8], %2: f32[4], %3: f32[4] = batch_norm(%0, %p_bn_weight, %p_bn_bias) "
    "{eps=1.0000000000000001e-05}  # bn\n"
    "  %4: f32[2,4,8,8] = relu(%1)\n"
    "  %5: f32[2,4,4,4] = max_pool2d(%4) {kernel=[2,2], padding=[0,0], stride=[2,2]}  # pool\n"
    "  return (%5, %2, %3)\n"
    "}\n";

constexpr char kAttentionText[] =
    "graph(%q: f32[2,4,8], %k: f32[2,4,8], %v: f32[2,4,8]) {\n"
    "  %0: f32[2,8,4] = permute(%k) {dims=[0,2,1]}  # attn\n"
    "  %1: f32[2,4,4] = matmul(%q, %0)  # attn\n"
    "  %2: f32[] = full() {dtype=f32, shape=[], value=0.125}  # attn\n"
    "  %3: f32[2,4,4] = mul(%1, %2)  # attn\n"
    "  %4: f32[2,4,4] = softmax(%3) {dim=-1}  # attn\n"
    "  %5: f32[2,4,8] = matmul(%4, %v)  # attn\n"
    "  return (%5)\n"
    "}\n";

// Parses `text`, which must succeed, verify, and print back as `text`.
Graph ParseRoundTrip(const std::string& text) {
  absl::StatusOr<Graph> g = Parse(text);
  INFO(g.status().ToString());
  REQUIRE(g.ok());
  CHECK(Verify(*g).ok());
  CHECK(ToString(*g) == text);
  return *std::move(g);
}

TEST_CASE("goldens: an MLP, a conv net and an attention block print exactly") {
  CHECK(ToString(testing::Mlp()) == kMlpText);
  CHECK(ToString(testing::ConvNet()) == kConvNetText);
  CHECK(ToString(testing::Attention()) == kAttentionText);
}

TEST_CASE("print -> parse -> print is the identity on the model graphs") {
  for (Graph (*build)() : {&testing::Mlp, &testing::ConvNet, &testing::Attention}) {
    const Graph g = build();
    Graph back = ParseRoundTrip(ToString(g));
    CHECK(back.num_nodes() == g.num_nodes());
    CHECK(back.placeholders().size() == g.placeholders().size());
    CHECK(back.outputs().size() == g.outputs().size());
  }
}

TEST_CASE("a parsed graph has the nodes, attributes and sources of the text") {
  Graph g = ParseRoundTrip(kConvNetText);
  const std::vector<Node*> nodes = g.nodes();
  REQUIRE(nodes.size() == 4);
  CHECK(nodes[1]->op() == OpKind::kBatchNorm);
  CHECK(nodes[1]->num_results() == 3);
  CHECK(nodes[1]->attrs().Float("eps") == 1e-5);
  CHECK(nodes[1]->source() == "bn");
  CHECK(nodes[2]->source().empty());
  CHECK(g.outputs()[1] == nodes[1]->result(1));
  CHECK(nodes[0]->attrs().Ints("padding") == std::vector<int64_t>{1, 1});
}

TEST_CASE("doubles, strings, dtypes, bools and odd names and sources round-trip exactly") {
  Graph g;
  Value* x = g.AddPlaceholder("encoder.layers.0.x", F32({3}));
  const double exponents[] = {0.1,
                              -0.0,
                              1e-300,
                              5e-324,
                              1e300,
                              3.0,
                              2.5,
                              std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity()};
  for (double e : exponents) Add(g, OpKind::kPow, {x}, {{"exponent", e}}, "pow # with a hash ");
  Add(g, OpKind::kGelu, {x}, {{"approximate", std::string("tanh")}});
  Add(g, OpKind::kCast, {x}, {{"dtype", DType::kI64}});
  Value* i32 = Add(g, OpKind::kCast, {x}, {{"dtype", DType::kI32}})[0];
  Add(g, OpKind::kMul, {i32, i32}, {});
  Add(g, OpKind::kSum, {x}, {{"dims", std::vector<int64_t>{}}, {"keepdim", true}});
  Add(g, OpKind::kArange, {},
      {{"start", int64_t{0}}, {"end", 5.5}, {"step", 0.5}, {"dtype", DType::kF64}});
  REQUIRE(g.SetOutputs({x, x}).ok());
  Graph back = ParseRoundTrip(ToString(g));
  const std::vector<Node*> a = g.nodes(), b = back.nodes();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(i);
    CHECK(a[i]->attrs() == b[i]->attrs());
    CHECK(a[i]->source() == b[i]->source());
  }
  CHECK(std::signbit(b[1]->attrs().Float("exponent")));
  CHECK(b.back()->attrs().Find("start")->index() == 0);  // stays an int
}

TEST_CASE("nodes added to a parsed graph continue its numbering") {
  Graph g = ParseRoundTrip(kMlpText);
  Value* y = Add(g, OpKind::kExp, {g.outputs()[0]})[0];
  CHECK(y->name() == "4");
}

TEST_CASE("the parser accepts free spacing and CRLF line ends") {
  absl::StatusOr<Graph> g =
      Parse("graph( %x :f32[ 2 , 2 ] ){\r\n%a:f32[2,2]=relu( %x )  #  src\r\nreturn(%a)}");
  REQUIRE(g.ok());
  CHECK(ToString(*g) ==
        "graph(%x: f32[2,2]) {\n  %a: f32[2,2] = relu(%x)  #  src\n  return (%a)\n}\n");
}

// Replaces the node line of a one-node graph over %x: f32[4,3].
std::string WithNode(const std::string& node_line) {
  return "graph(%x: f32[4,3]) {\n" + node_line + "\n  return (%0)\n}\n";
}

std::string ParseError(const std::string& text) {
  absl::StatusOr<Graph> g = Parse(text);
  REQUIRE(!g.ok());
  CHECK(g.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(g.status().message());
}

TEST_CASE("the well-formed base of the malformed cases parses") {
  ParseRoundTrip(WithNode("  %0: f32[4,3] = relu(%x)"));
}

TEST_CASE("a value's layout prints after its type and parses back") {
  ParseRoundTrip(
      "graph(%x: f32[2,3,4,4]:nhwc) {\n"
      "  %0: f32[2,3,4,4]:nhwc = relu(%x)\n"
      "  return (%0)\n"
      "}\n");
  CHECK(ParseError(WithNode("  %0: f32[4,3]:nchw = relu(%x)")) ==
        "line 2, column 16: expected 'nhwc', got 'nchw'");
}

TEST_CASE("a region op's body: required, parsed as a graph, its types checked") {
  CHECK(ParseError(WithNode("  %0: f32[4,3] = fused(%x)")) ==
        "line 3, column 3: expected '{', got 'return'");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = fused(%x) {\n"
                            "    graph(%y: f32[3]) {\n"
                            "      %1: f32[3] = relu(%y)\n"
                            "      return (%1)\n"
                            "    }\n"
                            "  }")) ==
        "line 2, column 18: fused: operand 0 is f32[4,3], its body's placeholder %y f32[3]");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = fused(%x) {\n"
                            "    graph(%y: f32[4,3]) {\n"
                            "      %1: f32[4,3] = relu(%z)\n"
                            "      return (%1)\n"
                            "    }\n"
                            "  }")) == "line 4, column 27: unknown value '%z'");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = fused(%x) {\n"
                            "    graph(%y: f32[4,3]) {\n"
                            "      %1: f32[4,3] = fused(%y) {\n")) ==
        "line 4, column 22: a region's body cannot hold fused");
}

TEST_CASE("malformed text is rejected with its line, column and what was expected") {
  // unknown op
  CHECK(ParseError(WithNode("  %0: f32[4,3] = relux(%x)")) ==
        "line 2, column 18: unknown op 'relux'");
  // unknown value
  CHECK(ParseError(WithNode("  %0: f32[4,3] = relu(%y)")) ==
        "line 2, column 23: unknown value '%y'");
  // redefined value: a placeholder, and a result within one node
  CHECK(ParseError(WithNode("  %x: f32[4,3] = relu(%x)")) ==
        "line 2, column 3: value '%x' is already defined");
  CHECK(ParseError("graph(%x: f32[4,3], %x: f32[2]) {\n  return ()\n}") ==
        "line 1, column 21: value '%x' is already defined");
  CHECK(ParseError(WithNode("  %0: f32[4,3], %0: f32[3], %1: f32[3] = batch_norm(%x, %x, %x) "
                            "{eps=0.1}")) == "line 2, column 17: value '%0' is already defined");
  // bad type
  CHECK(ParseError(WithNode("  %0: f32[4,x] = relu(%x)")) ==
        "line 2, column 13: bad dimension 'x': expected a number or s<k> at offset 0");
  CHECK(ParseError(WithNode("  %0: f32(4,3) = relu(%x)")) ==
        "line 2, column 10: expected '[', got '('");
  CHECK(ParseError(WithNode("  %0: f32[4,99999999999999999999] = relu(%x)")) ==
        "line 2, column 13: bad dimension '99999999999999999999': number out of range at offset 0");
  // bad dtype
  CHECK(ParseError(WithNode("  %0: f33[4,3] = relu(%x)")) ==
        "line 2, column 7: unknown dtype 'f33' (expected f32, f64, i64, bool, bf16 or i32)");
  // missing '='
  CHECK(ParseError(WithNode("  %0: f32[4,3] relu(%x)")) ==
        "line 2, column 16: expected '=', got 'relu'");
  // unterminated attribute list
  CHECK(ParseError(WithNode("  %0: f32[4,3] = softmax(%x) {dim=1")) ==
        "line 3, column 3: expected ',' or '}', got 'return'");
  // wrong attribute type, unknown and missing attributes: from InferTypes
  CHECK(ParseError(WithNode("  %0: f32[4,3] = softmax(%x) {dim=1.5}")) ==
        "line 2, column 18: softmax: attribute 'dim' must be int, got 1.5");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = softmax(%x) {dim=1, dims=[1]}")) ==
        "line 2, column 18: softmax: unknown attribute 'dims'");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = softmax(%x)")) ==
        "line 2, column 18: softmax: missing attribute 'dim'");
  // wrong arity and shapes that do not fit: from InferTypes
  CHECK(ParseError(WithNode("  %0: f32[4,3] = relu(%x, %x)")) ==
        "line 2, column 18: relu: expected 1 inputs, got 2");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = matmul(%x, %x)  # layer1")) ==
        "line 2, column 18: matmul: inner dims differ: [4,3] x [4,3] (at layer1)");
  // declared type disagreeing with inference, and a wrong number of results
  CHECK(ParseError(WithNode("  %0: f32[4,4] = relu(%x)")) ==
        "line 2, column 7: %0 declared f32[4,4], but relu infers f32[4,3]");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = batch_norm(%x, %x, %x) {eps=0.1}")) ==
        "line 2, column 18: batch_norm: weight and bias must be f32[3], got f32[4,3]");
  CHECK(ParseError("graph(%x: f32[4,3], %w: f32[3]) {\n"
                   "  %0: f32[4,3] = batch_norm(%x, %w, %w) {eps=0.1}\n  return (%0)\n}") ==
        "line 2, column 18: batch_norm: 1 result names given for 3 results");
  // missing return
  CHECK(ParseError("graph(%x: f32[4,3]) {\n  %0: f32[4,3] = relu(%x)\n}\n") ==
        "line 3, column 1: expected '%' or 'return', got '}'");
  // trailing garbage
  CHECK(ParseError(WithNode("  %0: f32[4,3] = relu(%x)") + "extra") ==
        "line 5, column 1: expected end of input, got 'extra'");
  // bad numbers
  CHECK(ParseError(WithNode("  %0: f32[4,3] = softmax(%x) {dim=1.2.3}")) ==
        "line 2, column 35: bad number '1.2.3'");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = softmax(%x) {dim=99999999999999999999}")) ==
        "line 2, column 35: bad number '99999999999999999999'");
  // numbers as low as a symbolic dim's handle, and sizes whose product
  // overflows: refused, never read as a symbol
  CHECK(ParseError(WithNode("  %0: f32[4,3] = softmax(%x) {dim=-4611686018427387905}")) ==
        "line 2, column 35: number '-4611686018427387905' out of range");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = reshape(%x) {shape=[-4611686018427387904]}")) ==
        "line 2, column 38: number '-4611686018427387904' out of range");
  CHECK(ParseError("graph(%x: f32[1099511627776*8388608]) {\n  return (%x)\n}") ==
        "line 1, column 11: shape [2305843009213693952] has more than 2^60 elements");
  CHECK(ParseError("graph(%x: f32[-1099511627776*4194304]) {\n  return (%x)\n}") ==
        "line 1, column 11: shape [-2305843009213693952] has a negative dimension");
  // other attribute syntax
  CHECK(ParseError(WithNode("  %0: f32[4,3] = gelu(%x) {approximate=\"tanh}")) ==
        "line 2, column 40: unterminated string");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = softmax(%x) {dim=one}")) ==
        "line 2, column 35: expected attribute value, got 'one'");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = softmax(%x) {dim=1, dim=2}")) ==
        "line 2, column 38: attribute 'dim' given twice");
  CHECK(ParseError(WithNode("  %0: f32[4,3] = permute(%x) {dims=[1,1.5]}")) ==
        "line 2, column 39: a list attribute holds integers only");
  // Dims whose product overflows (it once wrapped in NumElements).
  CHECK(ParseError("graph(%x: f32[9223372036854775807,2]) {\n  return (%x)\n}") ==
        "line 1, column 11: shape [9223372036854775807,2] has more than 2^60 elements");
  CHECK(ParseError("graph(%x: f32[" + absl::StrJoin(std::vector<int>(65, 1), ",") +
                   "]) {\n  return (%x)\n}") ==
        "line 1, column 11: a shape of 65 dims (at most 64)");
  // 5000 nested '[' once overflowed the stack.
  CHECK(ParseError(WithNode("  %0: f32[4,3] = permute(%x) {dims=[" + std::string(5000, '[') +
                            "}")) == "line 2, column 37: a list attribute holds integers only");
  // structure
  CHECK(ParseError("") == "line 1, column 1: expected 'graph', got end of input");
  CHECK(ParseError("grph(%x: f32[4]) {}") == "line 1, column 1: expected 'graph', got 'grph'");
  CHECK(ParseError("graph(%x: f32[4]) {\n  return (%x\n}") ==
        "line 3, column 1: expected ')', got '}'");
  CHECK(ParseError("graph(%x: f32[4]) {\n  return (%x)\n") ==
        "line 3, column 1: expected '}', got end of input");
}

}  // namespace
}  // namespace tc
