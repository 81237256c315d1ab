// The fuse-sums lowering pass as text in, text out: a sum of a loop
// region's result (or of a reshape of a row-major one) moves into the
// region's pass, and a result only such sums read leaves its outputs; sums
// the fused kernel cannot add up in its pass are left as they are.
#include "codegen/fuse_sums.h"

#include <string>
#include <utility>

#include "catch2/catch.hpp"
#include "tests/graph/graphs.h"

namespace tc::codegen {
namespace {

std::pair<std::string, bool> Fuse(const std::string& text) {
  return testing::RunOnText(text, {FuseSums()});
}

TEST_CASE("a bias gradient moves into the lone op before it, which is then never written") {
  const auto [text, changed] = Fuse(
      "graph(%d: f32[64,32], %y: f32[64,32]) {\n"
      "  %g: f32[64,32] = mul(%d, %y)  # fc\n"
      "  %s: f32[32] = sum(%g) {dims=[0], keepdim=false}  # fc\n"
      "  return (%s)\n"
      "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%d: f32[64,32], %y: f32[64,32]) {\n"
        "  %s: f32[32] = fused(%d, %y) {  # fc\n"
        "    graph(%d: f32[64,32], %y: f32[64,32]) {\n"
        "      %g: f32[64,32] = mul(%d, %y)  # fc\n"
        "      %s: f32[32] = sum(%g) {dims=[0], keepdim=false}  # fc\n"
        "      return (%s)\n"
        "    }\n"
        "  }\n"
        "  return (%s)\n"
        "}\n");
}

TEST_CASE("sums of a region's results join its outputs, after the ones still read") {
  const auto [text, changed] = Fuse(
      "graph(%y: f32[2,16,128], %t: f32[2,16,128]) {\n"
      "  %p: f32[2,16,128], %e: f32[2,16,128] = fused(%y, %t) {\n"
      "    graph(%y: f32[2,16,128], %t: f32[2,16,128]) {\n"
      "      %p: f32[2,16,128] = mul(%y, %t)\n"
      "      %e: f32[2,16,128] = exp(%p)\n"
      "      return (%p, %e)\n"
      "    }\n"
      "  }\n"
      "  %s: f32[2,16,1] = sum(%p) {dims=[-1], keepdim=true}\n"
      "  %f: f32[2,16,128] = reshape(%e) {shape=[2,16,128]}\n"
      "  %u: f32[2,128] = sum(%e) {dims=[1], keepdim=false}\n"
      "  %c: f32[128] = sum(%f) {dims=[0,1], keepdim=false}\n"
      "  return (%e, %s, %c)\n"
      "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%y: f32[2,16,128], %t: f32[2,16,128]) {\n"
        "  %e: f32[2,16,128], %s: f32[2,16,1], %c: f32[128] = fused(%y, %t) {\n"
        "    graph(%y: f32[2,16,128], %t: f32[2,16,128]) {\n"
        "      %p: f32[2,16,128] = mul(%y, %t)\n"
        "      %e: f32[2,16,128] = exp(%p)\n"
        "      %s: f32[2,16,1] = sum(%p) {dims=[-1], keepdim=true}\n"
        "      %f: f32[2,16,128] = reshape(%e) {shape=[2,16,128]}\n"
        "      %c: f32[128] = sum(%f) {dims=[0,1], keepdim=false}\n"
        "      return (%e, %s, %c)\n"
        "    }\n"
        "  }\n"
        "  %u: f32[2,128] = sum(%e) {dims=[1], keepdim=false}\n"
        "  return (%e, %s, %c)\n"
        "}\n");
}

TEST_CASE("a sum through reshapes of a row-major result holds one reshape, and the rest go") {
  const auto [text, changed] = Fuse(
      "graph(%x: f32[8,16,32]) {\n"
      "  %y: f32[8,16,32] = sigmoid(%x)\n"
      "  %a: f32[128,32] = reshape(%y) {shape=[128,32]}\n"
      "  %b: f32[4,32,32] = reshape(%a) {shape=[4,32,32]}\n"
      "  %s: f32[32] = sum(%b) {dims=[0,1], keepdim=false}\n"
      "  return (%y, %s)\n"
      "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[8,16,32]) {\n"
        "  %y: f32[8,16,32], %s: f32[32] = fused(%x) {\n"
        "    graph(%x: f32[8,16,32]) {\n"
        "      %y: f32[8,16,32] = sigmoid(%x)\n"
        "      %b: f32[4,32,32] = reshape(%y) {shape=[4,32,32]}\n"
        "      %s: f32[32] = sum(%b) {dims=[0,1], keepdim=false}\n"
        "      return (%y, %s)\n"
        "    }\n"
        "  }\n"
        "  return (%y, %s)\n"
        "}\n");
}

TEST_CASE("sums of what no pass computes stay: an integer's cast, a sum a region returns") {
  const std::string in =
      "graph(%i: i64[64,32], %x: f32[64,32]) {\n"
      "  %f: f32[64,32] = cast(%i) {dtype=f32}\n"
      "  %a: f32[32] = sum(%f) {dims=[0], keepdim=false}\n"
      "  %s: f32[32] = fused(%x) {\n"
      "    graph(%x: f32[64,32]) {\n"
      "      %e: f32[64,32] = exp(%x)\n"
      "      %s: f32[32] = sum(%e) {dims=[0], keepdim=false}\n"
      "      return (%s)\n"
      "    }\n"
      "  }\n"
      "  %t: f32[] = sum(%s) {dims=[], keepdim=false}\n"
      "  return (%a, %t)\n"
      "}\n";
  const auto [text, changed] = Fuse(in);
  CHECK(!changed);
  CHECK(text == in);
}

TEST_CASE("sums the pass cannot take stay") {
  const std::string in =
      "graph(%x: f32[4,20,100], %v: f32[4,3,8,8]:nhwc) {\n"
      "  %y: f32[4,20,100] = exp(%x)\n"
      "  %a: f32[4,100] = sum(%y) {dims=[1], keepdim=false}\n"  // a middle dim
      "  %b: f32[4,20] = sum(%y) {dims=[2], keepdim=false}\n"   // rows of 100
      "  %f: f32[800,10] = reshape(%y) {shape=[800,10]}\n"
      "  %c: f32[10] = sum(%f) {dims=[0], keepdim=false}\n"  // 10 kept of an outer sum
      "  %r: f32[4,3,8,8]:nhwc = relu(%v)\n"
      "  %g: f32[4,192] = reshape(%r) {shape=[4,192]}\n"
      "  %d: f32[192] = sum(%g) {dims=[0], keepdim=false}\n"    // a reshape of NHWC data
      "  %e: f32[4,100] = sum(%x) {dims=[1], keepdim=false}\n"  // nothing computes %x
      "  return (%a, %b, %c, %d, %e)\n"
      "}\n";
  const auto [text, changed] = Fuse(in);
  CHECK(!changed);
  CHECK(text == in);
}

}  // namespace
}  // namespace tc::codegen
