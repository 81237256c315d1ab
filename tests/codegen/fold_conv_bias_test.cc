// The fold-conv-bias lowering pass as text in, text out: a convolution whose
// only reader adds a [1, C, 1, 1] bias takes it as its third operand, placed
// where the add stood; every other convolution and add is left as it is.
#include "codegen/fold_conv_bias.h"

#include <string>
#include <utility>

#include "catch2/catch.hpp"
#include "tests/graph/graphs.h"

namespace tc::codegen {
namespace {

std::pair<std::string, bool> Fold(const std::string& text) {
  return testing::RunOnText(text, {FoldConvolutionBias()});
}

constexpr char kConv[] = "{dilation=[1,1], groups=1, padding=[1,1], stride=[1,1]}";

std::string Header() {
  return "graph(%x: f32[2,3,5,5], %w: f32[4,3,3,3], %b: f32[4], %b1: f32[1]) {\n";
}

TEST_CASE("a convolution's bias add folds into it, where the add stood") {
  const auto [text, changed] =
      Fold(Header() + "  %y: f32[2,4,5,5] = conv2d(%x, %w) " + kConv + "  # conv\n" +
           "  %b4: f32[1,4,1,1] = reshape(%b) {shape=[1,4,1,1]}  # conv\n" +
           "  %z: f32[2,4,5,5] = add(%y, %b4)  # conv\n" + "  %r: f32[2,4,5,5] = relu(%z)\n" +
           "  return (%r)\n}\n");
  CHECK(changed);
  CHECK(text == Header() + "  %b4: f32[1,4,1,1] = reshape(%b) {shape=[1,4,1,1]}  # conv\n" +
                    "  %z: f32[2,4,5,5] = conv2d(%x, %w, %b4) " + kConv + "  # conv\n" +
                    "  %r: f32[2,4,5,5] = relu(%z)\n" + "  return (%r)\n}\n");
}

TEST_CASE("a convolution read twice, returned, or biased already, and other adds stay") {
  const std::string in = Header() + "  %b4: f32[1,4,1,1] = reshape(%b) {shape=[1,4,1,1]}\n" +
                         "  %y: f32[2,4,5,5] = conv2d(%x, %w) " + kConv + "\n" +
                         "  %z: f32[2,4,5,5] = add(%y, %b4)\n" +  // %y is read again below
                         "  %s: f32[2,4,5,5] = add(%z, %y)\n" +   // not a [1,C,1,1] operand
                         "  %v: f32[2,4,5,5] = conv2d(%x, %w) " + kConv + "\n" +
                         "  %u: f32[2,4,5,5] = add(%v, %b4)\n" +  // %v is also returned
                         "  %c: f32[2,4,5,5] = conv2d(%x, %w, %b) " + kConv + "\n" +
                         "  %d: f32[2,4,5,5] = add(%c, %b4)\n" +  // %c has a bias already
                         "  %one: f32[1,1,1,1] = reshape(%b1) {shape=[1,1,1,1]}\n" +
                         "  %e: f32[1,4,1,1] = expand(%one) {shape=[1,4,1,1]}\n" +
                         "  %q: f32[2,4,5,5] = conv2d(%x, %w) " + kConv + "\n" +
                         "  %t: f32[2,4,5,5] = add(%q, %e)\n" +  // a bias not laid out densely
                         "  return (%s, %u, %v, %d, %t)\n}\n";
  const auto [text, changed] = Fold(in);
  CHECK(!changed);
  CHECK(text == in);
}

}  // namespace
}  // namespace tc::codegen
