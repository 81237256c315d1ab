// Partitioning a joint graph over a symbolic batch: one partition for every
// size, the symbols the backward needs listed, a size that no saved value
// would carry saved in a value that has it, and byte figures as formulas.
#include <string>

#include "catch2/catch.hpp"
#include "graph/parser.h"
#include "graph/printer.h"
#include "partition/min_cut.h"
#include "partition/partition.h"
#include "partition/report.h"

namespace tc {
namespace {

// The joint graph of mean(x) over x: f32[s0,4]: the gradient needs s0,
// which the tangent (a scalar) does not carry.
constexpr char kMeanJoint[] =
    "graph(%x: f32[s0,4], %tangent: f32[]) {\n"
    "  %0: f32[] = mean(%x) {dims=[], keepdim=false}\n"
    "  %1: f32[s0,4] = expand(%tangent) {shape=[s0,4]}\n"
    "  %2: f32[] = size_scalar() {dtype=f32, size=4*s0}\n"
    "  %3: f32[s0,4] = div(%1, %2)\n"
    "  return (%0, %3)\n"
    "}\n";

const JointLayout kLayout{
    .num_primals = 1, .num_tangents = 1, .num_forward_outputs = 1, .grad_primal_indices = {0}};

TEST_CASE("a size the backward needs travels in a saved value that has it as a dim") {
  const Graph joint = Parse(kMeanJoint).value();
  for (const partition::PartitionFn& fn : {partition::PartitionFn(partition::DefaultPartition),
                                           partition::PartitionFn(partition::MinCutPartition)}) {
    const partition::PartitionResult part = fn(joint, kLayout).value();
    REQUIRE(part.symbols_for_bw == std::vector<int64_t>{0});
    REQUIRE(part.saved.size() == 1);
    CHECK(part.saved[0].name == "x");
    CHECK(ToString(part.backward) ==
          "graph(%x: f32[s0,4], %tangent: f32[]) {\n"
          "  %1: f32[s0,4] = expand(%tangent) {shape=[s0,4]}\n"
          "  %2: f32[] = size_scalar() {dtype=f32, size=4*s0}\n"
          "  %3: f32[s0,4] = div(%1, %2)\n"
          "  return (%3)\n"
          "}\n");
  }
}

TEST_CASE("report bytes are at the example size, with their formula in the symbols") {
  const Graph joint = Parse(kMeanJoint).value();
  const partition::PartitionResult part = partition::DefaultPartition(joint, kLayout).value();
  const partition::PartitionReport report = partition::MakeReport(joint, kLayout, part);
  CHECK(report.saved_bytes_formula == "16*s0");
  CHECK(report.saved_bytes == 16);  // at s0's hint: 1 for a symbol first met in text
  CHECK(partition::ReportText(report).find(
            "; 16*s0 bytes in the symbols (figures at the example size)") != std::string::npos);
  CHECK(partition::ReportJson(report).find("\"shape\":[\"s0\",4]") != std::string::npos);
}

}  // namespace
}  // namespace tc
