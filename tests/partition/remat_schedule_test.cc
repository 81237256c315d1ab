// The schedule checker: one pass in order replays to the peak NoRematPeak
// measures (on hand-made and random graphs), a schedule that frees a value
// and computes it again lowers the peak as worked out by hand, and every
// invalid schedule is refused naming its step.
#include "partition/remat_schedule.h"

#include <random>

#include "catch2/catch.hpp"

namespace tc::partition {
namespace {

using Kind = RematSchedule::Step::Kind;

// Nodes "n<i>" with the given bytes, cost 1 each, and inputs.
RematGraph Graph(const std::vector<int64_t>& bytes, const std::vector<std::vector<int>>& inputs) {
  RematGraph g;
  for (size_t i = 0; i < bytes.size(); ++i) {
    g.nodes.push_back(
        {.name = "n" + std::to_string(i), .cost = 1, .bytes = bytes[i], .inputs = inputs[i]});
  }
  return g;
}

TEST_CASE("one pass in order replays to the peak without recomputation") {
  const RematGraph diamond = Graph({1, 2, 4, 8}, {{}, {0}, {0}, {1, 2}});
  const ScheduleCost cost = CheckSchedule(diamond, NoRematSchedule(diamond)).value();
  CHECK(cost.peak_bytes == 14);
  CHECK(cost.peak_bytes == NoRematPeak(diamond));
  CHECK(cost.compute == 4);
  CHECK(cost.overhead == 0);
  CHECK(cost.recomputed == 0);
  // Random graphs: each node reads up to three earlier ones.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 40);
    std::vector<int64_t> bytes;
    std::vector<std::vector<int>> inputs(static_cast<size_t>(n));
    for (int v = 0; v < n; ++v) {
      bytes.push_back(1 + static_cast<int64_t>(rng() % 100));
      for (int k = 0; v > 0 && k < 3; ++k) {
        const int u = static_cast<int>(rng() % static_cast<unsigned>(v));
        auto& in = inputs[static_cast<size_t>(v)];
        if (std::find(in.begin(), in.end(), u) == in.end()) in.push_back(u);
      }
    }
    const RematGraph g = Graph(bytes, inputs);
    INFO("trial " << trial);
    CHECK(CheckSchedule(g, NoRematSchedule(g)).value().peak_bytes == NoRematPeak(g));
  }
}

TEST_CASE("computing a value again after freeing it lowers the peak, at its cost") {
  // x(5) -> y(5) -> z(5) -> w(1), and w reads x too. One pass holds x, y and
  // z at z: 15. Freeing x after y and computing it again before w: 11.
  const RematGraph g = Graph({5, 5, 5, 1}, {{}, {0}, {1}, {2, 0}});
  CHECK(NoRematPeak(g) == 15);
  const RematSchedule remat{{{Kind::kCompute, 0},
                             {Kind::kCompute, 1},
                             {Kind::kFree, 0},
                             {Kind::kCompute, 2},
                             {Kind::kFree, 1},
                             {Kind::kCompute, 0},
                             {Kind::kCompute, 3}}};
  const ScheduleCost cost = CheckSchedule(g, remat).value();
  CHECK(cost.peak_bytes == 11);
  CHECK(cost.compute == 5);
  CHECK(cost.overhead == 0.25);
  CHECK(cost.recomputed == 1);
}

TEST_CASE("an invalid schedule is refused, naming its step") {
  const RematGraph g = Graph({1, 1, 1}, {{}, {0}, {1}});
  auto error = [&](const std::vector<RematSchedule::Step>& steps) {
    return std::string(CheckSchedule(g, RematSchedule{steps}).status().message());
  };
  CHECK(error({{Kind::kCompute, 0}, {Kind::kFree, 0}, {Kind::kCompute, 1}}) ==
        "schedule step 2: node 1 (n1) reads node 0 (n0), which is not in memory");
  CHECK(error({{Kind::kCompute, 0}, {Kind::kCompute, 0}}) ==
        "schedule step 1: computes node 0 (n0), which is in memory already");
  CHECK(error({{Kind::kFree, 2}}) == "schedule step 0: frees node 2 (n2), which is not in memory");
  CHECK(error({{Kind::kCompute, 0}, {Kind::kCompute, 1}}) ==
        "schedule: node 2 (n2) is never computed");
  CHECK(error({{Kind::kCompute, 3}}) == "schedule step 0: node 3 is not in the graph of 3");
}

}  // namespace
}  // namespace tc::partition
