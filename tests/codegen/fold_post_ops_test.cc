// The fold-post-ops lowering pass as text in, text out: the elementwise
// chain that is a kernel's only reader becomes its epilogue, one `fused`
// node led by the kernel, where the chain stood (or where the kernel stood,
// when something between reads batch norm's statistics); chains a kernel
// does not take are left as they are.
#include "codegen/fold_post_ops.h"

#include <string>
#include <utility>

#include "catch2/catch.hpp"
#include "tests/graph/graphs.h"

namespace tc::codegen {
namespace {

std::pair<std::string, bool> Fold(const std::string& text) {
  return testing::RunOnText(text, {FoldPostOps()});
}

TEST_CASE("a gelu and a residual add after a linear become its epilogue") {
  const auto [text, changed] = Fold(
      "graph(%x: f32[8,16], %w: f32[32,16], %b: f32[32], %r: f32[8,32]) {\n"
      "  %y: f32[8,32] = linear(%x, %w, %b)  # fc\n"
      "  %z: f32[8,32] = fused(%y, %r) {  # act\n"
      "    graph(%y: f32[8,32], %r: f32[8,32]) {\n"
      "      %g: f32[8,32] = gelu(%y) {approximate=\"tanh\"}  # act\n"
      "      %z: f32[8,32] = add(%r, %g)  # act\n"
      "      return (%z)\n"
      "    }\n"
      "  }\n"
      "  %o: f32[8,32] = neg(%z)\n"
      "  return (%o)\n"
      "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[8,16], %w: f32[32,16], %b: f32[32], %r: f32[8,32]) {\n"
        "  %z: f32[8,32] = fused(%x, %w, %b, %r) {  # act\n"
        "    graph(%x: f32[8,16], %w: f32[32,16], %b: f32[32], %r: f32[8,32]) {\n"
        "      %y: f32[8,32] = linear(%x, %w, %b)  # fc\n"
        "      %g: f32[8,32] = gelu(%y) {approximate=\"tanh\"}  # act\n"
        "      %z: f32[8,32] = add(%r, %g)  # act\n"
        "      return (%z)\n"
        "    }\n"
        "  }\n"
        "  %o: f32[8,32] = neg(%z)\n"
        "  return (%o)\n"
        "}\n");
}

TEST_CASE("a lone relu after a matmul, and a scale of a batched one") {
  const auto [text, changed] = Fold(
      "graph(%a: f32[4,8], %b: f32[8,3], %q: f32[2,4,8], %k: f32[2,8,4], %s: f32[]) {\n"
      "  %m: f32[4,3] = matmul(%a, %b)\n"
      "  %r: f32[4,3] = relu(%m)\n"
      "  %n: f32[2,4,4] = matmul(%q, %k)\n"
      "  %t: f32[2,4,4] = mul(%n, %s)\n"
      "  return (%r, %t)\n"
      "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%a: f32[4,8], %b: f32[8,3], %q: f32[2,4,8], %k: f32[2,8,4], %s: f32[]) {\n"
        "  %r: f32[4,3] = fused(%a, %b) {\n"
        "    graph(%a: f32[4,8], %b: f32[8,3]) {\n"
        "      %m: f32[4,3] = matmul(%a, %b)\n"
        "      %r: f32[4,3] = relu(%m)\n"
        "      return (%r)\n"
        "    }\n"
        "  }\n"
        "  %t: f32[2,4,4] = fused(%q, %k, %s) {\n"
        "    graph(%q: f32[2,4,8], %k: f32[2,8,4], %s: f32[]) {\n"
        "      %n: f32[2,4,4] = matmul(%q, %k)\n"
        "      %t: f32[2,4,4] = mul(%n, %s)\n"
        "      return (%t)\n"
        "    }\n"
        "  }\n"
        "  return (%r, %t)\n"
        "}\n");
}

TEST_CASE("batch norm's relu folds where batch norm stood when its statistics are read first") {
  const auto [text, changed] = Fold(
      "graph(%x: f32[4,8,5,5], %w: f32[8], %b: f32[8]) {\n"
      "  %y: f32[4,8,5,5], %mean: f32[8], %var: f32[8] = batch_norm(%x, %w, %b) {eps=0.25}\n"
      "  %m2: f32[8] = mul(%mean, %mean)\n"
      "  %r: f32[4,8,5,5] = relu(%y)\n"
      "  return (%m2, %r, %var)\n"
      "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[4,8,5,5], %w: f32[8], %b: f32[8]) {\n"
        "  %r: f32[4,8,5,5], %mean: f32[8], %var: f32[8] = fused(%x, %w, %b) {\n"
        "    graph(%x: f32[4,8,5,5], %w: f32[8], %b: f32[8]) {\n"
        "      %y: f32[4,8,5,5], %mean: f32[8], %var: f32[8] = batch_norm(%x, %w, %b) "
        "{eps=0.25}\n"
        "      %r: f32[4,8,5,5] = relu(%y)\n"
        "      return (%r, %mean, %var)\n"
        "    }\n"
        "  }\n"
        "  %m2: f32[8] = mul(%mean, %mean)\n"
        "  return (%m2, %r, %var)\n"
        "}\n");
}

TEST_CASE("chains a kernel cannot take, or that are not its result's only reader, stay") {
  const std::string in =
      "graph(%x: f32[8,16], %w: f32[32,16], %b: f32[32], %r: f32[8,32], %d: f64[8,16], "
      "%e: f64[32,16], %f: f64[32], %v: f32[4,8,5,5], %g: f32[8]) {\n"
      // returned as well
      "  %y0: f32[8,32] = linear(%x, %w, %b)\n"
      "  %z0: f32[8,32] = relu(%y0)\n"
      // the second operand of a subtraction
      "  %y1: f32[8,32] = linear(%x, %w, %b)\n"
      "  %z1: f32[8,32] = sub(%r, %y1)\n"
      // read twice by the chain
      "  %y2: f32[8,32] = linear(%x, %w, %b)\n"
      "  %z2: f32[8,32] = mul(%y2, %y2)\n"
      // f64 runs on Eigen, which takes no post-ops
      "  %y3: f64[8,32] = linear(%d, %e, %f)\n"
      "  %z3: f64[8,32] = relu(%y3)\n"
      // not an op oneDNN applies
      "  %y4: f32[8,32] = linear(%x, %w, %b)\n"
      "  %z4: f32[8,32] = pow(%y4) {exponent=2}\n"
      // batch norm takes a relu only
      "  %n: f32[4,8,5,5], %mean: f32[8], %var: f32[8] = batch_norm(%v, %g, %g) {eps=0.25}\n"
      "  %t: f32[4,8,5,5] = sigmoid(%n)\n"
      "  return (%y0, %z0, %z1, %z2, %z3, %z4, %t, %mean, %var)\n"
      "}\n";
  const auto [text, changed] = Fold(in);
  CHECK(!changed);
  CHECK(text == in);
}

TEST_CASE("a channels-last chain folds into a channels-last batch norm; other layouts stay") {
  const auto [text, changed] = Fold(
      "graph(%x: f32[4,8,5,5]:nhwc, %w: f32[8], %b: f32[8]) {\n"
      "  %y: f32[4,8,5,5]:nhwc, %mean: f32[8], %var: f32[8] = batch_norm(%x, %w, %b) "
      "{eps=0.25}\n"
      "  %r: f32[4,8,5,5]:nhwc = relu(%y)\n"
      "  %y1: f32[4,8,5,5]:nhwc, %mean1: f32[8], %var1: f32[8] = batch_norm(%x, %w, %b) "
      "{eps=0.25}\n"
      "  %r1: f32[4,8,5,5] = relu(%y1)\n"
      "  return (%r, %r1)\n"
      "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[4,8,5,5]:nhwc, %w: f32[8], %b: f32[8]) {\n"
        "  %r: f32[4,8,5,5]:nhwc, %mean: f32[8], %var: f32[8] = fused(%x, %w, %b) {\n"
        "    graph(%x: f32[4,8,5,5], %w: f32[8], %b: f32[8]) {\n"
        "      %y: f32[4,8,5,5]:nhwc, %mean: f32[8], %var: f32[8] = batch_norm(%x, %w, %b) "
        "{eps=0.25}\n"
        "      %r: f32[4,8,5,5]:nhwc = relu(%y)\n"
        "      return (%r, %mean, %var)\n"
        "    }\n"
        "  }\n"
        "  %y1: f32[4,8,5,5]:nhwc, %mean1: f32[8], %var1: f32[8] = batch_norm(%x, %w, %b) "
        "{eps=0.25}\n"
        "  %r1: f32[4,8,5,5] = relu(%y1)\n"
        "  return (%r, %r1)\n"
        "}\n");
}

}  // namespace
}  // namespace tc::codegen
