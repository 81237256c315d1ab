// The fuse-attention pass (graph/passes/fuse_attention.h): text in, text out.
#include "graph/passes/fuse_attention.h"

#include "catch2/catch.hpp"
#include "tests/graph/graphs.h"

namespace tc {
namespace {

std::pair<std::string, bool> Run(const std::string& text) {
  return testing::RunOnText(text, {FuseAttention()});
}

TEST_CASE("fuse-attention: heads with a scale and two masks become one sdpa") {
  const auto [text, changed] =
      Run("graph(%q: f32[2,4,5,8], %k: f32[2,4,6,8], %v: f32[2,4,6,3], %pad: f32[2,1,1,6], "
          "%bias: f32[5,6]) {\n"
          "  %kt: f32[2,4,8,6] = permute(%k) {dims=[0,1,3,2]}\n"
          "  %s: f32[2,4,5,6] = matmul(%q, %kt)  # attn\n"
          "  %c: f32[] = full() {dtype=f32, shape=[], value=0.25}\n"
          "  %scaled: f32[2,4,5,6] = mul(%s, %c)\n"
          "  %m1: f32[2,4,5,6] = add(%scaled, %bias)\n"
          "  %m2: f32[2,4,5,6] = add(%pad, %m1)\n"
          "  %p: f32[2,4,5,6] = softmax(%m2) {dim=-1}\n"
          "  %o: f32[2,4,5,3] = matmul(%p, %v)  # attn\n"
          "  %r: f32[2,4,5,3] = relu(%o)\n"
          "  return (%r)\n"
          "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%q: f32[2,4,5,8], %k: f32[2,4,6,8], %v: f32[2,4,6,3], %pad: f32[2,1,1,6], "
        "%bias: f32[5,6]) {\n"
        "  %0: f32[2,1,5,6] = add(%bias, %pad)  # attn\n"
        "  %1: f32[2,4,5,3], %2: f32[2,4,5] = sdpa(%q, %k, %v, %0) {causal=false, scale=0.25}  "
        "# attn\n"
        "  %r: f32[2,4,5,3] = relu(%1)\n"
        "  return (%r)\n"
        "}\n");
}

TEST_CASE("fuse-attention: a divided scale, keys given transposed, no mask") {
  const auto [text, changed] =
      Run("graph(%q: f64[3,5,8], %kt: f64[3,8,7], %v: f64[3,7,2]) {\n"
          "  %s: f64[3,5,7] = matmul(%q, %kt)\n"
          "  %c: f64[] = full() {dtype=f64, shape=[], value=4}\n"
          "  %scaled: f64[3,5,7] = div(%s, %c)\n"
          "  %p: f64[3,5,7] = softmax(%scaled) {dim=2}\n"
          "  %o: f64[3,5,2] = matmul(%p, %v)\n"
          "  return (%o)\n"
          "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%q: f64[3,5,8], %kt: f64[3,8,7], %v: f64[3,7,2]) {\n"
        "  %0: f64[3,7,8] = permute(%kt) {dims=[0,2,1]}\n"
        "  %1: f64[3,5,2], %2: f64[3,5] = sdpa(%q, %0, %v) {causal=false, scale=0.25}\n"
        "  return (%1)\n"
        "}\n");
}

TEST_CASE("fuse-attention leaves attention alone where the pattern does not hold") {
  const std::vector<std::string> unchanged = {
      // the probabilities are returned too
      "graph(%q: f32[2,5,4], %k: f32[2,6,4], %v: f32[2,6,3]) {\n"
      "  %0: f32[2,4,6] = permute(%k) {dims=[0,2,1]}\n"
      "  %1: f32[2,5,6] = matmul(%q, %0)\n"
      "  %2: f32[2,5,6] = softmax(%1) {dim=-1}\n"
      "  %3: f32[2,5,3] = matmul(%2, %v)\n"
      "  return (%3, %2)\n"
      "}\n",
      // softmax over the queries
      "graph(%q: f32[2,5,4], %k: f32[2,6,4], %v: f32[2,5,3]) {\n"
      "  %0: f32[2,4,6] = permute(%k) {dims=[0,2,1]}\n"
      "  %1: f32[2,5,6] = matmul(%q, %0)\n"
      "  %2: f32[2,5,6] = softmax(%1) {dim=1}\n"
      "  %3: f32[2,6,5] = permute(%2) {dims=[0,2,1]}\n"
      "  %4: f32[2,6,3] = matmul(%3, %v)\n"
      "  return (%4)\n"
      "}\n",
      // keys broadcast over the batch (matmul broadcasts, sdpa does not)
      "graph(%q: f32[2,5,4], %kt: f32[1,4,6], %v: f32[2,6,3]) {\n"
      "  %1: f32[2,5,6] = matmul(%q, %kt)\n"
      "  %2: f32[2,5,6] = softmax(%1) {dim=-1}\n"
      "  %3: f32[2,5,3] = matmul(%2, %v)\n"
      "  return (%3)\n"
      "}\n",
      // a scale that is not a constant
      "graph(%q: f32[2,5,4], %kt: f32[2,4,6], %v: f32[2,6,3], %t: f32[]) {\n"
      "  %1: f32[2,5,6] = matmul(%q, %kt)\n"
      "  %2: f32[2,5,6] = mul(%1, %t)\n"
      "  %3: f32[2,5,6] = softmax(%2) {dim=-1}\n"
      "  %4: f32[2,5,3] = matmul(%3, %v)\n"
      "  return (%4)\n"
      "}\n",
  };
  for (const std::string& graph : unchanged) {
    const auto [text, changed] = Run(graph);
    CHECK_FALSE(changed);
    CHECK(text == graph);
  }
}

}  // namespace
}  // namespace tc
