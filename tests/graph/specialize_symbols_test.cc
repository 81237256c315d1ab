// Symbol specialization, as text in and text out: types, integer attributes
// and size scalars take their values; a static graph is left unchanged; a
// symbol without a value, or a value that breaks shape inference, fails.
#include "graph/passes/specialize_symbols.h"

#include <string>

#include "catch2/catch.hpp"
#include "graph/pass.h"
#include "graph/printer.h"
#include "tests/graph/graphs.h"

namespace tc {
namespace {

using testing::ParseOk;
using testing::RunOnText;

constexpr char kMeanOfBatch[] =
    "graph(%x: f32[s0,1,28,28], %w: f32[10,784], %b: f32[10]) {\n"
    "  %0: f32[s0,784] = reshape(%x) {shape=[s0,784]}\n"
    "  %1: f32[s0,10] = linear(%0, %w, %b)  # fc\n"
    "  %2: f32[] = sum(%1) {dims=[], keepdim=false}\n"
    "  %3: f32[] = size_scalar() {dtype=f32, size=10*s0}\n"
    "  %4: f32[] = div(%2, %3)\n"
    "  %5: f32[s0+1,10] = pad(%1) {pads=[0,1,0,0], value=0.0}\n"
    "  %6: f32[s0,10] = slice(%5) {dim=0, end=s0, start=0, step=1}\n"
    "  return (%4, %6)\n"
    "}\n";

TEST_CASE("every symbolic dim takes its value; a size scalar becomes a constant") {
  const auto [text, changed] = RunOnText(kMeanOfBatch, {SpecializeSymbols({{0, 96}})});
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[96,1,28,28], %w: f32[10,784], %b: f32[10]) {\n"
        "  %0: f32[96,784] = reshape(%x) {shape=[96,784]}\n"
        "  %1: f32[96,10] = linear(%0, %w, %b)  # fc\n"
        "  %2: f32[] = sum(%1) {dims=[], keepdim=false}\n"
        "  %3: f32[] = full() {dtype=f32, shape=[], value=960.0}\n"
        "  %4: f32[] = div(%2, %3)\n"
        "  %5: f32[97,10] = pad(%1) {pads=[0,1,0,0], value=0.0}\n"
        "  %6: f32[96,10] = slice(%5) {dim=0, end=96, start=0, step=1}\n"
        "  return (%4, %6)\n"
        "}\n");
  // A batch of one is a size like any other.
  CHECK(RunOnText(kMeanOfBatch, {SpecializeSymbols({{0, 1}})}).first.find("f32[1,784]") !=
        std::string::npos);
}

TEST_CASE("a static graph is left as it is") {
  const std::string mlp = ToString(testing::Mlp());
  CHECK(RunOnText(mlp, {SpecializeSymbols({{0, 96}})}) == std::make_pair(mlp, false));
  CHECK_FALSE(HasSymbolicDims(testing::Mlp()));
  CHECK(HasSymbolicDims(ParseOk(kMeanOfBatch)));
}

TEST_CASE("a symbol without a value is an error naming it") {
  Graph g = ParseOk(kMeanOfBatch);
  absl::StatusOr<bool> changed = RunPasses(g, {SpecializeSymbols({{1, 96}})});
  REQUIRE_FALSE(changed.ok());
  CHECK(std::string(changed.status().message()) ==
        "pass 'specialize-symbols': no size for symbol s0 of dimension s0");
}

}  // namespace
}  // namespace tc
