// The rematerialization schedulers against schedules worked out by hand (a
// chain, a value computed three times, a diamond no budget below its peak
// fits), against every plan of small random graphs enumerated, and the
// stage machinery and budget parsing they share. Every schedule returned
// has been replayed by the checker (ResultOfPlan); the tests check it again.
#include <random>

#include "catch2/catch.hpp"
#include "partition/remat_greedy.h"
#include "partition/remat_milp.h"
#include "partition/remat_stages.h"

namespace tc::partition {
namespace {

// Nodes "n<i>" with the given bytes, cost 1 each, and inputs.
RematGraph Graph(const std::vector<int64_t>& bytes, const std::vector<std::vector<int>>& inputs,
                 std::vector<double> costs = {}) {
  RematGraph g;
  for (size_t i = 0; i < bytes.size(); ++i) {
    g.nodes.push_back({.name = "n" + std::to_string(i),
                       .cost = costs.empty() ? 1 : costs[i],
                       .bytes = bytes[i],
                       .inputs = inputs[i]});
  }
  return g;
}

std::vector<RematResult> EveryStrategy(const RematGraph& g, int64_t budget) {
  std::vector<RematResult> results = {GreedyRematSchedule(g, budget).value(),
                                      LpRoundingSchedule(g, budget, {}).value()};
  const std::optional<StagePlan> start = GreedyRematPlan(g, budget);
  RematMilpOptions options;
  if (start.has_value()) options.starts.push_back(&*start);
  results.push_back(CheckmateMilpSchedule(g, budget, options).value());
  for (const RematResult& r : results) {
    if (!r.found) continue;
    const ScheduleCost cost = CheckSchedule(g, r.schedule).value();
    CHECK(cost.peak_bytes <= budget);
    CHECK(cost.compute == r.cost.compute);
  }
  return results;
}

TEST_CASE("a chain fits in its largest node's need, with nothing computed twice") {
  // 0 -> 1 -> 2 -> 3, bytes 3, 1, 4, 2: the need of node 2 is 1 + 4.
  const RematGraph chain = Graph({3, 1, 4, 2}, {{}, {0}, {1}, {2}});
  CHECK(NoRematPeak(chain) == 6);
  for (const RematResult& r : EveryStrategy(chain, 6)) {
    INFO(r.strategy);
    REQUIRE(r.found);
    CHECK(r.cost.recomputed == 0);
    CHECK(r.cost.peak_bytes == 6);
  }
  // Below 6, node 3 (reading node 2) cannot be computed: proven, named.
  for (const RematResult& r : EveryStrategy(chain, 5)) {
    INFO(r.strategy);
    CHECK_FALSE(r.found);
    CHECK(r.proven_infeasible);
    CHECK_THAT(r.why_not, Catch::Contains("node 3 (n3) needs 6 bytes"));
  }
}

TEST_CASE("freeing a value and computing it again: one recomputation, as worked out by hand") {
  // x(5) -> y(5) -> z(5) -> w(1), w reads x too. One pass peaks at 15 (x, y,
  // z). At 11, x is freed after y and computed again for w: z + x + w = 11,
  // compute 5 of 4. At 10, w itself needs 11.
  const RematGraph g = Graph({5, 5, 5, 1}, {{}, {0}, {1}, {2, 0}});
  for (const RematResult& r : EveryStrategy(g, 11)) {
    INFO(r.strategy);
    REQUIRE(r.found);
    CHECK(r.cost.compute == 5);
    CHECK(r.cost.overhead == Approx(0.25));
  }
  const RematResult milp = CheckmateMilpSchedule(g, 11, {}).value();
  CHECK(milp.proven_optimal);
  CHECK(ProvenGap(milp) == 0);
  CHECK(CheckmateMilpSchedule(g, 10, {}).value().proven_infeasible);
}

TEST_CASE("a value read three times under a tight budget is computed three times") {
  // a(1) is read by p, r and u; p(4) -> q(4) -> r(1) -> s(4) -> t(4) -> u(1).
  // At 8, a cannot be in memory while q (p + q = 8) or t (s + t = 8) is
  // computed, yet r and u read it: a is computed before p, r and u, and
  // nothing cheaper exists. One pass peaks at 9.
  const RematGraph g = Graph({1, 4, 4, 1, 4, 4, 1}, {{}, {0}, {1}, {2, 0}, {3}, {4}, {5, 0}});
  CHECK(NoRematPeak(g) == 9);
  const RematResult milp = CheckmateMilpSchedule(g, 8, {}).value();
  REQUIRE(milp.found);
  CHECK(milp.proven_optimal);
  CHECK(milp.cost.compute == 9);
  CHECK(milp.cost.recomputed == 2);
  int computes_of_a = 0;
  for (const RematSchedule::Step& step : milp.schedule.steps) {
    computes_of_a += step.kind == RematSchedule::Step::Kind::kCompute && step.node == 0;
  }
  CHECK(computes_of_a == 3);
  for (const RematResult& r : EveryStrategy(g, 8)) {
    INFO(r.strategy);
    if (r.found) CHECK(r.cost.compute >= 9);
  }
}

TEST_CASE("a diamond fits in no budget below its peak; the MILP proves it") {
  // a(4) feeds b(4) and c(4), which d(1) reads. Whichever of b and c comes
  // second is computed while a and the other are in memory: 12, the one-pass
  // peak. Every node alone needs at most 9.
  const RematGraph diamond = Graph({4, 4, 4, 1}, {{}, {0}, {0}, {1, 2}});
  CHECK(NoRematPeak(diamond) == 12);
  CHECK_FALSE(NodeOverBudget(diamond, 11).has_value());
  const RematResult milp = CheckmateMilpSchedule(diamond, 11, {}).value();
  CHECK_FALSE(milp.found);
  CHECK(milp.proven_infeasible);
  CHECK_THAT(milp.why_not, Catch::Contains("no schedule fits in 11 bytes"));
  const RematResult greedy = GreedyRematSchedule(diamond, 11).value();
  CHECK_FALSE(greedy.found);
  CHECK_FALSE(greedy.proven_infeasible);
  CHECK(CheckmateMilpSchedule(diamond, 12, {}).value().cost.recomputed == 0);
}

// The cheapest fitting plan of every plan there is (each stage keeping any
// subset of the nodes below it), completed as the schedulers complete theirs.
std::optional<double> BestPlanCost(const RematGraph& g, int64_t budget) {
  const size_t n = g.nodes.size();
  std::optional<double> best;
  const uint64_t plans = uint64_t{1} << (n * (n - 1) / 2);
  for (uint64_t bits = 0; bits < plans; ++bits) {
    std::vector<std::vector<int>> kept(n);
    uint64_t b = bits;
    for (size_t t = 1; t < n; ++t) {
      for (size_t i = 0; i < t; ++i, b >>= 1) {
        if (b & 1) kept[t].push_back(static_cast<int>(i));
      }
    }
    const StagePlan plan = CompleteStages(g, kept).value();
    double cost = 0;
    bool fits = true;
    for (size_t t = 0; t < n && fits; ++t) {
      fits = PeakOfStage(g, plan, t) <= budget;
      for (int v : plan.computed[t]) cost += g.nodes[static_cast<size_t>(v)].cost;
    }
    if (fits && (!best.has_value() || cost < *best)) best = cost;
  }
  return best;
}

TEST_CASE("on small random graphs the MILP finds the cheapest of every plan enumerated") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 12; ++trial) {
    const int n = 4 + trial % 3;
    std::vector<int64_t> bytes;
    std::vector<double> costs;
    std::vector<std::vector<int>> inputs(static_cast<size_t>(n));
    for (int v = 0; v < n; ++v) {
      bytes.push_back(1 + static_cast<int64_t>(rng() % 6));
      costs.push_back(1 + static_cast<double>(rng() % 5));
      for (int k = 0; v > 0 && k < 2; ++k) {
        const int u = static_cast<int>(rng() % static_cast<unsigned>(v));
        auto& in = inputs[static_cast<size_t>(v)];
        if (std::find(in.begin(), in.end(), u) == in.end()) in.push_back(u);
      }
    }
    const RematGraph g = Graph(bytes, inputs, costs);
    for (double fraction : {0.6, 0.8, 1.0}) {
      const auto budget = static_cast<int64_t>(fraction * static_cast<double>(NoRematPeak(g)));
      INFO("trial " << trial << ", budget " << budget);
      const std::optional<double> best = BestPlanCost(g, budget);
      const std::vector<RematResult> results = EveryStrategy(g, budget);
      const RematResult& milp = results.back();
      REQUIRE(milp.found == best.has_value());
      if (!best.has_value()) continue;
      CHECK(milp.proven_optimal);
      CHECK(milp.cost.compute == Approx(*best));
      for (const RematResult& r : results) {
        INFO(r.strategy);
        if (r.found) CHECK(r.cost.compute >= *best - 1e-9);
        // Each strategy's bound holds: no plan computes less.
        CHECK(r.lower_bound <= *best + 1e-6);
        CHECK(r.lower_bound >= TotalCost(g) - 1e-6);
      }
    }
  }
}

TEST_CASE("a plan keeps only what its stage reads or keeps on, and computes the rest") {
  // 0 -> 1 -> 2, and 2 reads 0. Stage 2 keeping 0 and 1: computes 2 alone.
  // Stage 1 keeping nothing while stage 2 keeps 0: stage 1 computes 0 again.
  const RematGraph g = Graph({1, 1, 1}, {{}, {0}, {1, 0}});
  const StagePlan keep_all = CompleteStages(g, {{}, {0}, {0, 1}}).value();
  CHECK(keep_all.computed == std::vector<std::vector<int>>{{0}, {1}, {2}});
  const StagePlan again = CompleteStages(g, {{}, {}, {0, 1}}).value();
  CHECK(again.computed == std::vector<std::vector<int>>{{0}, {0, 1}, {2}});
  // A kept value its stage never reads and does not keep on is dropped.
  const RematGraph chain = Graph({1, 1, 1}, {{}, {0}, {1}});
  CHECK(CompleteStages(chain, {{}, {0}, {0, 1}}).value().kept[2] == std::vector<int>{1});
  CHECK_THAT(std::string(CompleteStages(g, {{}, {1}}).status().message()),
             Catch::Contains("stage 1 keeps node 1: a stage keeps only nodes below it"));
}

TEST_CASE("budgets are fractions of the one-pass peak or bytes with a unit") {
  CHECK(ParseBudget("0.8", 1000).value() == 800);
  CHECK(ParseBudget("12GB", 1).value() == 12'000'000'000);
  CHECK(ParseBudget("500MiB", 1).value() == 500 * 1024 * 1024);
  CHECK(ParseBudget("4096B", 1).value() == 4096);
  for (const char* bad : {"", "-0.5", "0", "12XB", "nan", "GB", "1e30GB"}) {
    INFO(bad);
    CHECK_FALSE(ParseBudget(bad, 1000).ok());
  }
  CHECK_THAT(std::string(ParseBudget("12XB", 1).status().message()),
             Catch::Contains("budget \"12XB\": expected a positive fraction"));
}

TEST_CASE("the schedulers refuse a time limit or sample count that is not positive") {
  const RematGraph g = Graph({1, 1}, {{}, {0}});
  CHECK_FALSE(CheckmateMilpSchedule(g, 2, {.time_limit_seconds = 0}).ok());
  CHECK_FALSE(LpRoundingSchedule(g, 2, {.samples = 0}).ok());
}

}  // namespace
}  // namespace tc::partition
