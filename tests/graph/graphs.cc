#include "tests/graph/graphs.h"

#include "catch2/catch.hpp"
#include "graph/parser.h"
#include "graph/printer.h"

namespace tc::testing {

std::vector<Value*> Add(Graph& g, OpKind op, std::vector<Value*> inputs, Attrs attrs,
                        std::string source) {
  absl::StatusOr<std::vector<Value*>> out =
      g.AddNode(op, inputs, std::move(attrs), std::move(source));
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  return *out;
}

TensorType F32(Shape shape) { return {DType::kF32, std::move(shape)}; }

Graph ParseOk(const std::string& text) {
  absl::StatusOr<Graph> g = Parse(text);
  INFO(g.status().ToString());
  REQUIRE(g.ok());
  return *std::move(g);
}

std::pair<std::string, bool> RunOnText(const std::string& text, const std::vector<Pass>& passes) {
  Graph g = ParseOk(text);
  absl::StatusOr<bool> changed = RunPasses(g, passes);
  INFO(changed.status().ToString());
  REQUIRE(changed.ok());
  // What a pass makes prints and parses back.
  const std::string printed = ToString(g);
  REQUIRE(ToString(ParseOk(printed)) == printed);
  return {printed, *changed};
}

Graph Mlp() {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({4, 3}));
  Value* w1 = g.AddPlaceholder("p_fc1_weight", F32({8, 3}));
  Value* b1 = g.AddPlaceholder("p_fc1_bias", F32({8}));
  Value* w2 = g.AddPlaceholder("p_fc2_weight", F32({2, 8}));
  Value* b2 = g.AddPlaceholder("p_fc2_bias", F32({2}));
  Value* h = Add(g, OpKind::kLinear, {x, w1, b1}, {}, "fc1")[0];
  Value* r = Add(g, OpKind::kRelu, {h}, {}, "act")[0];
  Value* y = Add(g, OpKind::kLinear, {r, w2, b2}, {}, "fc2")[0];
  Value* out = Add(g, OpKind::kLogSoftmax, {y}, {{"dim", int64_t{1}}})[0];
  REQUIRE(g.SetOutputs({out}).ok());
  return g;
}

Graph ConvNet() {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({2, 3, 8, 8}));
  Value* w = g.AddPlaceholder("p_conv_weight", F32({4, 3, 3, 3}));
  Value* gamma = g.AddPlaceholder("p_bn_weight", F32({4}));
  Value* beta = g.AddPlaceholder("p_bn_bias", F32({4}));
  const std::vector<int64_t> ones = {1, 1};
  Value* c = Add(g, OpKind::kConv2d, {x, w},
                 {{"stride", ones}, {"padding", ones}, {"dilation", ones}, {"groups", int64_t{1}}},
                 "conv")[0];
  std::vector<Value*> bn = Add(g, OpKind::kBatchNorm, {c, gamma, beta}, {{"eps", 1e-5}}, "bn");
  Value* r = Add(g, OpKind::kRelu, {bn[0]})[0];
  const std::vector<int64_t> two = {2, 2}, zero = {0, 0};
  Value* p = Add(g, OpKind::kMaxPool2d, {r}, {{"kernel", two}, {"stride", two}, {"padding", zero}},
                 "pool")[0];
  REQUIRE(g.SetOutputs({p, bn[1], bn[2]}).ok());
  return g;
}

Graph Attention() {
  Graph g;
  Value* q = g.AddPlaceholder("q", F32({2, 4, 8}));
  Value* k = g.AddPlaceholder("k", F32({2, 4, 8}));
  Value* v = g.AddPlaceholder("v", F32({2, 4, 8}));
  Value* kt = Add(g, OpKind::kPermute, {k}, {{"dims", std::vector<int64_t>{0, 2, 1}}}, "attn")[0];
  Value* s = Add(g, OpKind::kMatmul, {q, kt}, {}, "attn")[0];
  Value* scale =
      Add(g, OpKind::kFull, {},
          {{"shape", std::vector<int64_t>{}}, {"dtype", DType::kF32}, {"value", 0.125}}, "attn")[0];
  Value* scaled = Add(g, OpKind::kMul, {s, scale}, {}, "attn")[0];
  Value* p = Add(g, OpKind::kSoftmax, {scaled}, {{"dim", int64_t{-1}}}, "attn")[0];
  Value* o = Add(g, OpKind::kMatmul, {p, v}, {}, "attn")[0];
  REQUIRE(g.SetOutputs({o}).ok());
  return g;
}

}  // namespace tc::testing
