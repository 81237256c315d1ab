// Dinic's max flow against brute force over every s-t cut of small random
// graphs, and hand cases.
#include "partition/max_flow.h"

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "catch2/catch.hpp"

namespace tc::partition {
namespace {

using Edge = std::tuple<int, int, int64_t>;

FlowGraph Build(int n, const std::vector<Edge>& edges) {
  FlowGraph g(n);
  for (auto [a, b, c] : edges) g.AddEdge(a, b, c);
  return g;
}

// The capacity of the cut whose source side is `side`, capped like flows.
int64_t CutValue(const std::vector<Edge>& edges, const std::vector<bool>& side) {
  int64_t total = 0;
  for (auto [a, b, c] : edges) {
    if (side[a] && !side[b])
      total = std::min(total + std::min(c, kInfiniteCapacity), kInfiniteCapacity);
  }
  return total;
}

// The minimum over all 2^(n-2) cuts separating s from t.
int64_t BruteForceMinCut(int n, const std::vector<Edge>& edges, int s, int t) {
  int64_t best = kInfiniteCapacity;
  for (int mask = 0; mask < (1 << n); ++mask) {
    std::vector<bool> side(n);
    for (int i = 0; i < n; ++i) side[i] = (mask >> i) & 1;
    if (!side[s] || side[t]) continue;
    best = std::min(best, CutValue(edges, side));
  }
  return best;
}

TEST_CASE("hand cases: the header's example, no path, parallel and infinite edges") {
  const std::vector<Edge> example = {{0, 1, 3}, {1, 3, kInfiniteCapacity}, {0, 2, 2}, {2, 3, 1}};
  MinCut cut = MaxFlowMinCut(Build(4, example), 0, 3);
  CHECK(cut.flow == 4);
  CHECK(cut.source_side == std::vector<bool>{true, false, true, false});

  cut = MaxFlowMinCut(Build(3, {{0, 1, 5}}), 0, 2);  // the sink is unreachable
  CHECK(cut.flow == 0);
  CHECK(cut.source_side == std::vector<bool>{true, true, false});

  cut = MaxFlowMinCut(Build(2, {{0, 1, 2}, {0, 1, 3}, {1, 0, 7}}), 0, 1);
  CHECK(cut.flow == 5);

  // Only infinite paths: the flow is capped, not overflowed.
  cut = MaxFlowMinCut(Build(3, {{0, 1, kInfiniteCapacity},
                                {0, 1, kInfiniteCapacity},
                                {1, 2, kInfiniteCapacity},
                                {1, 2, kInfiniteCapacity}}),
                      0, 2);
  CHECK(cut.flow == kInfiniteCapacity);

  // A flow that must be rerouted through a reverse edge (the classic
  // augmenting-path example): 0->1->2->3 first, then 0->2, 1->3.
  cut = MaxFlowMinCut(Build(4, {{0, 1, 1}, {0, 2, 1}, {1, 2, 1}, {1, 3, 1}, {2, 3, 1}}), 0, 3);
  CHECK(cut.flow == 2);
}

TEST_CASE("flow equals the brute-force minimum cut on random graphs") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 7);  // 2..8 nodes
    const int num_edges = static_cast<int>(rng() % (3 * n));
    std::vector<Edge> edges;
    for (int e = 0; e < num_edges; ++e) {
      const int a = static_cast<int>(rng() % n), b = static_cast<int>(rng() % n);
      const int64_t c = rng() % 8 == 0 ? kInfiniteCapacity : static_cast<int64_t>(rng() % 10);
      edges.push_back({a, b, c});
    }
    const int s = static_cast<int>(rng() % n);
    const int t = (s + 1 + static_cast<int>(rng() % (n - 1))) % n;
    INFO("trial " << trial);
    const MinCut cut = MaxFlowMinCut(Build(n, edges), s, t);
    REQUIRE(cut.flow == BruteForceMinCut(n, edges, s, t));
    REQUIRE(cut.source_side.size() == static_cast<size_t>(n));
    if (cut.flow < kInfiniteCapacity) {
      // The reported source side is itself a minimum cut.
      REQUIRE(cut.source_side[s]);
      REQUIRE_FALSE(cut.source_side[t]);
      REQUIRE(CutValue(edges, cut.source_side) == cut.flow);
    }
  }
}

}  // namespace
}  // namespace tc::partition
