// Shape inference over symbolic dims, as text: graphs whose declared result
// types the parser checks against inference, printed back unchanged; and
// the errors of what inference cannot prove, each naming the dim.
#include <string>

#include "catch2/catch.hpp"
#include "graph/parser.h"
#include "graph/printer.h"

namespace tc {
namespace {

// Parses `text` (its types checked against inference) and prints it back.
std::string RoundTrip(const std::string& text) {
  absl::StatusOr<Graph> g = Parse(text);
  INFO(text);
  INFO(g.status().message());
  REQUIRE(g.ok());
  return ToString(*g);
}

std::string InferenceError(const std::string& text) {
  absl::StatusOr<Graph> g = Parse(text);
  REQUIRE_FALSE(g.ok());
  return std::string(g.status().message());
}

TEST_CASE("a batch dim flows through an mlp, its flattening and its mean") {
  const std::string text =
      "graph(%x: f32[s0,1,28,28], %w: f32[10,784], %b: f32[10]) {\n"
      "  %0: f32[s0,784] = reshape(%x) {shape=[s0,784]}\n"
      "  %1: f32[784*s0] = reshape(%x) {shape=[784*s0]}\n"
      "  %2: f32[s0,10] = linear(%0, %w, %b)\n"
      "  %3: f32[s0,10] = log_softmax(%2) {dim=1}\n"
      "  %4: f32[] = mean(%3) {dims=[], keepdim=false}\n"
      "  %5: f32[] = size_scalar() {dtype=f32, size=10*s0}\n"
      "  %6: f32[10,s0] = permute(%3) {dims=[1,0]}\n"
      "  %7: f32[10,784] = matmul(%6, %0)\n"
      "  %8: f32[2*s0,10] = concat(%3, %3) {dim=0}\n"
      "  %9: f32[s0+2,10] = pad(%3) {pads=[1,1,0,0], value=0.0}\n"
      "  %10: f32[s0,10] = slice(%9) {dim=0, end=s0+1, start=1, step=1}\n"
      "  %11: f32[3,s0,10] = expand(%3) {shape=[3,s0,10]}\n"
      "  %12: f32[s0+1,10] = slice(%9) {dim=0, end=9223372036854775807, start=1, step=1}\n"
      "  %13: f32[1,10] = slice(%9) {dim=0, end=-1, start=-2, step=1}\n"
      "  return (%1, %4, %5, %7, %8, %10, %11, %12, %13)\n"
      "}\n";
  CHECK(RoundTrip(text) == text);
}

TEST_CASE("products of two symbols: a batch times a sequence length") {
  const std::string flattened =
      "graph(%x: f32[s0,s1,64], %w: f32[32,64], %b: f32[32]) {\n"
      "  %0: f32[s0*s1,64] = reshape(%x) {shape=[s0*s1,64]}\n"
      "  %1: f32[s0*s1,32] = linear(%0, %w, %b)\n"
      "  %2: f32[s0,s1,32] = reshape(%1) {shape=[s0,s1,32]}\n"
      "  return (%2)\n"
      "}\n";
  CHECK(RoundTrip(flattened) == flattened);
  const std::string text =
      "graph(%x: f32[s0,s1,64], %w: f32[32,64], %b: f32[32]) {\n"
      "  %0: f32[s0*s1,64] = reshape(%x) {shape=[s0*s1,64]}\n"
      "  %1: f32[s0*s1,32] = linear(%0, %w, %b)\n"
      "  %2: f32[s0,s1,32] = reshape(%1) {shape=[s0,s1,32]}\n"
      "  %3: f32[s0,s1,s1] = matmul(%x, %x) \n"
      "  return (%2)\n"
      "}\n";
  // The matmul line is wrong on purpose: [s0,s1,64] x [s0,s1,64] needs 64 == s1.
  CHECK(InferenceError(text).find("matmul: inner dims differ: [s0,s1,64] x [s0,s1,64]") !=
        std::string::npos);
}

TEST_CASE("what inference cannot prove is an error naming the dim") {
  CHECK(InferenceError("graph(%a: f32[s0,3], %b: f32[5,3]) {\n"
                       "  %0: f32[5,3] = add(%a, %b)\n"
                       "  return (%0)\n"
                       "}\n")
            .find("add: shapes [s0,3] and [5,3] do not broadcast") != std::string::npos);
  CHECK(InferenceError("graph(%a: f32[s0,3], %b: f32[s1,3]) {\n"
                       "  %0: f32[s0,3] = add(%a, %b)\n"
                       "  return (%0)\n"
                       "}\n")
            .find("shapes [s0,3] and [s1,3] do not broadcast") != std::string::npos);
  CHECK(InferenceError("graph(%x: f32[s0,784]) {\n"
                       "  %0: f32[s0,783] = reshape(%x) {shape=[s0,783]}\n"
                       "  return (%0)\n"
                       "}\n")
            .find("cannot reshape f32[s0,784] (784*s0 elements) to [s0,783]") != std::string::npos);
  CHECK(InferenceError("graph(%x: f32[s0,4]) {\n"
                       "  %0: f32[2,4] = slice(%x) {dim=0, end=2, start=0, step=1}\n"
                       "  return (%0)\n"
                       "}\n")
            .find("slice [0:2:1] of a dim of size s0 is not provably in range") !=
        std::string::npos);
  CHECK(InferenceError("graph(%x: f32[2,3,s1,s1], %w: f32[4,3,3,3]) {\n"
                       "  %0: f32[2,4,s1,s1] = conv2d(%x, %w) {dilation=[1,1], groups=1, "
                       "padding=[1,1], stride=[1,1]}\n"
                       "  return (%0)\n"
                       "}\n")
            .find("conv2d: input f32[2,3,s1,s1] has symbolic dim 2 (s1) where a number is "
                  "needed: only dim 0 may be symbolic") != std::string::npos);
}

TEST_CASE("a symbolic batch passes through convolution, pooling and batch norm") {
  const std::string text =
      "graph(%x: f32[s0,3,8,8], %w: f32[4,3,3,3], %g: f32[4], %b: f32[4]) {\n"
      "  %0: f32[s0,4,8,8] = conv2d(%x, %w) {dilation=[1,1], groups=1, padding=[1,1], "
      "stride=[1,1]}\n"
      "  %1: f32[s0,4,8,8], %2: f32[4], %3: f32[4] = batch_norm(%0, %g, %b) "
      "{eps=1.0000000000000001e-05}\n"
      "  %4: f32[s0,4,4,4] = max_pool2d(%1) {kernel=[2,2], padding=[0,0], stride=[2,2]}\n"
      "  %5: f32[s0,3,8,8] = conv2d_backward_data(%0, %w) {dilation=[1,1], groups=1, "
      "input_shape=[s0,3,8,8], padding=[1,1], stride=[1,1]}\n"
      "  return (%4, %5)\n"
      "}\n";
  CHECK(RoundTrip(text) == text);
}

}  // namespace
}  // namespace tc
