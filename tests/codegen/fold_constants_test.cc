// The fold-constants lowering pass as text in, text out: elementwise ops and
// views of `full` values become `full` values of the kernel's result, chains
// fold at once, and the folded graph gives the unfolded graph's bits; what
// reads a placeholder, draws random numbers or would not be finite stays.
#include "codegen/fold_constants.h"

#include <cmath>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/interpreter.h"
#include "tests/graph/graphs.h"
#include "tests/test_util.h"

namespace tc::codegen {
namespace {

std::pair<std::string, bool> Fold(const std::string& text) {
  return testing::RunOnText(text, {FoldConstants()});
}

TEST_CASE("ops and views of constants fold into constants, chains at once") {
  const auto [text, changed] = Fold(
      "graph(%x: f32[4,3], %y: f32[12]) {\n"
      "  %0: f32[] = full() {dtype=f32, shape=[], value=2}\n"
      "  %1: f32[4,3] = full() {dtype=f32, shape=[4,3], value=3}  # c\n"
      "  %2: f32[4,3] = mul(%0, %1)  # scale\n"
      "  %3: f32[12] = reshape(%2) {shape=[12]}\n"
      "  %4: f32[12] = sqrt(%3)\n"
      "  %5: f32[4,3] = add(%x, %1)\n"
      "  %6: f32[12] = add(%y, %4)\n"
      "  return (%6, %5)\n"
      "}\n");
  CHECK(changed);
  // sqrt(6) in f32, printed to round-trip: the bits the kernel gave.
  CHECK(text ==
        "graph(%x: f32[4,3], %y: f32[12]) {\n"
        "  %1: f32[4,3] = full() {dtype=f32, shape=[4,3], value=3}  # c\n"
        "  %4: f32[12] = full() {dtype=f32, shape=[12], value=2.4494898319244385}\n"
        "  %5: f32[4,3] = add(%x, %1)\n"
        "  %6: f32[12] = add(%y, %4)\n"
        "  return (%6, %5)\n"
        "}\n");
}

TEST_CASE("comparisons, casts and i64 fold in their own dtypes") {
  const auto [text, changed] = Fold(
      "graph(%b: bool[2], %f: f32[2]) {\n"
      "  %0: i64[2] = full() {dtype=i64, shape=[2], value=7}\n"
      "  %1: i64[2] = full() {dtype=i64, shape=[2], value=-3}\n"
      "  %2: i64[2] = add(%0, %1)\n"
      "  %3: bool[2] = gt(%0, %1)\n"
      "  %4: f32[2] = cast(%2) {dtype=f32}\n"
      "  %5: bool[2] = eq(%3, %b)\n"
      "  %6: f32[2] = mul(%4, %f)\n"
      "  return (%5, %6)\n"
      "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%b: bool[2], %f: f32[2]) {\n"
        "  %3: bool[2] = full() {dtype=bool, shape=[2], value=1.0}\n"
        "  %4: f32[2] = full() {dtype=f32, shape=[2], value=4.0}\n"
        "  %5: bool[2] = eq(%3, %b)\n"
        "  %6: f32[2] = mul(%4, %f)\n"
        "  return (%5, %6)\n"
        "}\n");
}

TEST_CASE("random ops, outputs, expands, integer division, non-finite results stay") {
  const std::string in =
      "graph(%x: f32[3]) {\n"
      "  %0: f32[3] = full() {dtype=f32, shape=[3], value=0}\n"
      "  %1: f32[3] = log(%0)\n"
      "  %s: i64[] = full() {dtype=i64, shape=[], value=1}\n"
      "  %2: f32[3] = dropout(%0, %s, %s) {p=0.5}\n"
      "  %3: f32[3] = mul(%x, %0)\n"
      "  %4: f32[1] = sum(%0) {dims=[], keepdim=true}\n"
      "  %5: f32[3] = neg(%0)\n"
      "  %6: f32[] = full() {dtype=f32, shape=[], value=1}\n"
      "  %7: f32[3] = expand(%6) {shape=[3]}\n"
      "  %8: i64[3] = full() {dtype=i64, shape=[3], value=1}\n"
      "  %9: i64[3] = full() {dtype=i64, shape=[3], value=0}\n"
      "  %10: i64[3] = div(%8, %9)\n"
      "  %11: f32[3] = add(%x, %1)\n"
      "  %12: f32[3] = add(%x, %7)\n"
      "  %13: i64[3] = neg(%10)\n"
      "  %14: f32[3] = add(%x, %2)\n"
      "  return (%11, %14, %3, %4, %5, %12, %13)\n"
      "}\n";
  const auto [text, changed] = Fold(in);
  CHECK(!changed);
  CHECK(text == in);
}

TEST_CASE("a zero's sign survives folding") {
  Graph g = testing::ParseOk(
      "graph(%x: f32[2]) {\n"
      "  %0: f32[2] = full() {dtype=f32, shape=[2], value=0}\n"
      "  %1: f32[2] = neg(%0)\n"
      "  %2: f32[2] = div(%x, %1)\n"
      "  return (%2)\n"
      "}\n");
  REQUIRE(RunPasses(g, {FoldConstants()}).value());
  const std::vector<float> out =
      Interpret(g).value()({from_vector<float>({1, -1}, {2})}).value()[0].to_vector<float>();
  CHECK(out == std::vector<float>{-INFINITY, INFINITY});
}

TEST_CASE("a folded graph gives the unfolded graph's bits") {
  Graph g = testing::ParseOk(
      "graph(%x: f32[2,3]) {\n"
      "  %0: f32[] = full() {dtype=f32, shape=[], value=0.70710678118654757}\n"
      "  %1: f32[] = exp(%0)\n"
      "  %2: f32[] = gelu(%1) {approximate=\"tanh\"}\n"
      "  %3: f32[2,3] = mul(%x, %2)\n"
      "  %4: f32[2,3] = add(%3, %2)\n"
      "  return (%4)\n"
      "}\n");
  const std::vector<Tensor> args = {testing::Random({2, 3}, DType::kF32, 1)};
  const std::vector<Tensor> want = Interpret(g).value()(args).value();
  REQUIRE(RunPasses(g, {FoldConstants()}).value());
  REQUIRE(g.num_nodes() == 3);  // the folded gelu, the mul and the add
  const std::vector<Tensor> got = Interpret(g).value()(args).value();
  for (size_t i = 0; i < got.size(); ++i) REQUIRE_TENSORS_CLOSE(got[i], want[i], 0, 0);
}

}  // namespace
}  // namespace tc::codegen
