#include "partition/remat_milp.h"

#include <algorithm>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "partition/cbc_solver.h"

namespace tc::partition {
namespace {

// Memory rows allow half a byte over the budget: bytes are whole, so a peak
// of the budget itself fits and one byte more does not. A solution CBC's
// tolerances (1e-7 of the budget) let over is caught when its plan is
// measured in whole bytes; the start is returned instead, unproven.
constexpr double kHalfByte = 0.5;

// For each node, the highest node that descends from it (itself included).
std::vector<size_t> LastDescendants(const RematGraph& graph) {
  std::vector<size_t> last(graph.nodes.size());
  for (size_t v = 0; v < last.size(); ++v) last[v] = v;
  for (size_t v = graph.nodes.size(); v-- > 0;) {
    for (int u : graph.nodes[v].inputs) {
      last[static_cast<size_t>(u)] = std::max(last[static_cast<size_t>(u)], last[v]);
    }
  }
  return last;
}

// The program of remat_milp.h over `graph` at `budget_bytes`.
class CheckmateProgram {
 public:
  CheckmateProgram(const RematGraph& graph, double budget_bytes, bool integer)
      : graph_(graph), n_(graph.nodes.size()) {
    const std::vector<size_t> last_descendant = LastDescendants(graph);
    const double total = TotalCost(graph) > 0 ? TotalCost(graph) : 1;
    auto bytes = [&](size_t v) { return static_cast<double>(graph.nodes[v].bytes) / budget_bytes; };
    r_.assign(n_, std::vector<int>(n_, -1));
    s_.assign(n_, std::vector<int>(n_, -1));
    for (size_t t = 0; t < n_; ++t) {
      for (size_t i = 0; i <= t; ++i) {
        if (i != t && last_descendant[i] < t) continue;
        r_[t][i] = lp_.AddColumn({.lower = i == t ? 1.0 : 0.0,
                                  .upper = 1,
                                  .cost = graph.nodes[i].cost / total,
                                  .integer = integer});
        if (i < t) s_[t][i] = lp_.AddColumn({.integer = integer});
      }
    }
    for (size_t t = 0; t < n_; ++t) {
      for (size_t k = 0; k <= t; ++k) {
        if (R(t, k) < 0) continue;
        for (int j : graph.nodes[k].inputs) {
          const int row = lp_.AddRow(-kNoBound, 0);
          lp_.Set(row, R(t, k), 1);
          if (R(t, j) >= 0) lp_.Set(row, R(t, j), -1);
          if (S(t, j) >= 0) lp_.Set(row, S(t, j), -1);
        }
      }
      if (t + 1 == n_) continue;
      for (size_t i = 0; i <= t; ++i) {
        if (S(t + 1, i) < 0) continue;
        const int row = lp_.AddRow(-kNoBound, 0);
        lp_.Set(row, S(t + 1, i), 1);
        if (S(t, i) >= 0) lp_.Set(row, S(t, i), -1);
        if (R(t, i) >= 0) lp_.Set(row, R(t, i), -1);
      }
    }
    readers_.assign(n_, {});
    for (size_t v = 0; v < n_; ++v) {
      for (int u : graph.nodes[v].inputs) {
        readers_[static_cast<size_t>(u)].push_back(static_cast<int>(v));
      }
    }
    u_.assign(n_, std::vector<int>(n_, -1));
    for (size_t t = 0; t < n_; ++t) {
      std::vector<std::pair<int, double>>
          freed_before;  // (F column, bytes) after the previous node
      int previous = -1;
      for (size_t k = 0; k <= t; ++k) {
        if (R(t, k) < 0) continue;
        u_[t][k] = lp_.AddColumn({.upper = 1 + kHalfByte / budget_bytes});
        const int row = lp_.AddRow(0, 0);
        lp_.Set(row, u_[t][k], 1);
        lp_.Set(row, R(t, k), -bytes(k));
        if (previous < 0) {
          for (size_t i = 0; i < t; ++i) {
            if (S(t, i) >= 0) lp_.Set(row, S(t, i), -bytes(i));
          }
        } else {
          lp_.Set(row, previous, -1);
          for (const auto& [column, b] : freed_before) lp_.Set(row, column, b);
        }
        previous = u_[t][k];
        freed_before.clear();
        if (k == t) continue;  // what stage t frees after its last node, no row reads
        std::vector<int> freeable = graph.nodes[k].inputs;
        freeable.push_back(static_cast<int>(k));
        for (int i : freeable) {
          const int f = lp_.AddColumn({});
          frees_.push_back({t, static_cast<size_t>(i), k, f});
          freed_before.push_back({f, bytes(static_cast<size_t>(i))});
          AtMost(f, R(t, k));
          if (t + 1 < n_) AtMostOneMinus(f, S(t + 1, static_cast<size_t>(i)));
          for (int j : readers_[static_cast<size_t>(i)]) {
            if (static_cast<size_t>(j) > k && static_cast<size_t>(j) <= t) {
              AtMostOneMinus(f, R(t, static_cast<size_t>(j)));
            }
          }
        }
      }
    }
  }

  const LinearProgram& program() const { return lp_; }

  // The columns' values for `plan`, or empty if the program cannot express
  // it (a column it fixes at 0).
  std::vector<double> Assignment(const StagePlan& plan, double budget_bytes) const {
    std::vector<double> x(static_cast<size_t>(lp_.num_columns()), 0);
    std::vector<std::vector<char>> computes(n_, std::vector<char>(n_, 0));
    std::vector<std::vector<char>> kept(n_, std::vector<char>(n_, 0));
    for (size_t t = 0; t < n_; ++t) {
      for (int i : plan.computed[t]) {
        if (R(t, static_cast<size_t>(i)) < 0) return {};
        computes[t][static_cast<size_t>(i)] = 1;
        x[static_cast<size_t>(R(t, static_cast<size_t>(i)))] = 1;
      }
      for (int i : plan.kept[t]) {
        if (S(t, static_cast<size_t>(i)) < 0) return {};
        kept[t][static_cast<size_t>(i)] = 1;
        x[static_cast<size_t>(S(t, static_cast<size_t>(i)))] = 1;
      }
    }
    for (const Free& f : frees_) {
      bool freed = computes[f.t][f.k] && !(f.t + 1 < n_ && kept[f.t + 1][f.i]);
      for (int j : readers_[f.i]) {
        const auto reader = static_cast<size_t>(j);
        if (reader > f.k && reader <= f.t && computes[f.t][reader]) freed = false;
      }
      x[static_cast<size_t>(f.column)] = freed ? 1 : 0;
    }
    // The memory chain is PeakOfStage's walk: U after each node. frees_ is
    // in the order of the stages and their nodes.
    size_t next_free = 0;
    for (size_t t = 0; t < n_; ++t) {
      double memory = 0;
      for (int i : plan.kept[t])
        memory += static_cast<double>(graph_.nodes[static_cast<size_t>(i)].bytes);
      for (size_t k = 0; k <= t; ++k) {
        if (u_[t][k] < 0) continue;
        if (computes[t][k]) memory += static_cast<double>(graph_.nodes[k].bytes);
        x[static_cast<size_t>(u_[t][k])] = memory / budget_bytes;
        for (; next_free < frees_.size() && frees_[next_free].t == t && frees_[next_free].k == k;
             ++next_free) {
          const Free& f = frees_[next_free];
          if (x[static_cast<size_t>(f.column)] > 0.5)
            memory -= static_cast<double>(graph_.nodes[f.i].bytes);
        }
      }
    }
    return x;
  }

  // What each stage keeps in the solution `x`, rounded at `threshold`, or
  // at random with S's value as the probability when `rng` is given.
  std::vector<std::vector<int>> Kept(const std::vector<double>& x, double threshold,
                                     std::mt19937* rng) const {
    std::uniform_real_distribution<double> uniform(0, 1);
    std::vector<std::vector<int>> kept(n_);
    for (size_t t = 0; t < n_; ++t) {
      for (size_t i = 0; i < t; ++i) {
        if (S(t, i) < 0) continue;
        const double value = x[static_cast<size_t>(S(t, i))];
        if (rng != nullptr ? uniform(*rng) < value : value > threshold) {
          kept[t].push_back(static_cast<int>(i));
        }
      }
    }
    return kept;
  }

 private:
  struct Free {
    size_t t, i, k;
    int column;
  };

  int R(size_t t, size_t i) const { return r_[t][i]; }
  int S(size_t t, size_t i) const { return i < t ? s_[t][i] : -1; }
  // f <= y, for a column y.
  void AtMost(int f, int y) {
    const int row = lp_.AddRow(-kNoBound, 0);
    lp_.Set(row, f, 1);
    lp_.Set(row, y, -1);
  }
  // f <= 1 - y; nothing when y is fixed at 0 (no column).
  void AtMostOneMinus(int f, int y) {
    if (y < 0) return;
    const int row = lp_.AddRow(-kNoBound, 1);
    lp_.Set(row, f, 1);
    lp_.Set(row, y, 1);
  }

  const RematGraph& graph_;
  size_t n_;
  LinearProgram lp_;
  std::vector<std::vector<int>> r_, s_, u_;  // columns, -1 where fixed at 0
  std::vector<std::vector<int>> readers_;    // of each node, ascending
  std::vector<Free> frees_;
};

double PlanCost(const RematGraph& graph, const StagePlan& plan) {
  double cost = 0;
  for (const std::vector<int>& stage : plan.computed) {
    for (int v : stage) cost += graph.nodes[static_cast<size_t>(v)].cost;
  }
  return cost;
}

bool Fits(const RematGraph& graph, const StagePlan& plan, int64_t budget_bytes) {
  for (size_t t = 0; t < plan.computed.size(); ++t) {
    if (PeakOfStage(graph, plan, t) > budget_bytes) return false;
  }
  return true;
}

// The cheapest plan that fits among `samples` roundings of a relaxation's
// optimum `x` (the first at 1/2, the rest at random), or nullopt.
absl::StatusOr<std::optional<StagePlan>> BestRounding(const RematGraph& graph,
                                                      const CheckmateProgram& program,
                                                      const std::vector<double>& x,
                                                      int64_t budget_bytes, int samples,
                                                      std::mt19937& rng) {
  std::optional<StagePlan> best;
  for (int sample = 0; sample < samples; ++sample) {
    TC_ASSIGN_OR_RETURN(StagePlan plan,
                        CompleteStages(graph, program.Kept(x, 0.5, sample == 0 ? nullptr : &rng)));
    if (!Fits(graph, plan, budget_bytes)) continue;
    if (!best.has_value() || PlanCost(graph, plan) < PlanCost(graph, *best)) best = std::move(plan);
  }
  return best;
}

}  // namespace

absl::StatusOr<RematResult> CheckmateMilpSchedule(const RematGraph& graph, int64_t budget_bytes,
                                                  const RematMilpOptions& options) {
  constexpr char kStrategy[] = "milp";
  if (!(options.time_limit_seconds > 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the MILP time limit must be positive, got %g seconds", options.time_limit_seconds));
  }
  if (std::optional<RematResult> no = InfeasibleByNode(graph, budget_bytes, kStrategy)) return *no;
  const absl::Time began = absl::Now();
  const double budget = static_cast<double>(budget_bytes);
  const CheckmateProgram program(graph, budget, /*integer=*/true);
  const StagePlan* start = nullptr;
  for (const StagePlan* plan : options.starts) {
    if (plan != nullptr && Fits(graph, *plan, budget_bytes) &&
        (start == nullptr || PlanCost(graph, *plan) < PlanCost(graph, *start))) {
      start = plan;
    }
  }
  CbcOptions cbc{.time_limit_seconds = options.time_limit_seconds};
  if (start != nullptr) cbc.start = program.Assignment(*start, budget);
  // Checkmate's rounding of the root relaxation, which branch and bound
  // solves anyway, as a second start: the MILP is then never worse than
  // lp_rounding's first relaxation.
  std::optional<StagePlan> rounded;
  absl::Status rounding_status;
  cbc.start_from_relaxation = [&](const std::vector<double>& relaxed) -> std::vector<double> {
    std::mt19937 rng(0);
    absl::StatusOr<std::optional<StagePlan>> best =
        BestRounding(graph, program, relaxed, budget_bytes, options.roundings, rng);
    if (!best.ok()) rounding_status = best.status();
    if (!best.ok() || !best->has_value() ||
        (start != nullptr && PlanCost(graph, **best) >= PlanCost(graph, *start))) {
      return {};
    }
    rounded = **std::move(best);
    start = &*rounded;
    return program.Assignment(*rounded, budget);
  };
  const CbcSolution solution = SolveWithCbc(program.program(), cbc);
  TC_RETURN_IF_ERROR(rounding_status);
  RematResult result;
  result.strategy = kStrategy;
  result.lower_bound = std::max(TotalCost(graph), solution.bound * TotalCost(graph));
  result.proven_optimal = solution.proven_optimal;
  std::optional<StagePlan> plan;
  bool over_by_tolerance = false;
  if (solution.found) {
    TC_ASSIGN_OR_RETURN(StagePlan solved,
                        CompleteStages(graph, program.Kept(solution.x, 0.5, nullptr)));
    over_by_tolerance = !Fits(graph, solved, budget_bytes);
    if (!over_by_tolerance) plan = std::move(solved);
  }
  if (over_by_tolerance) result.proven_optimal = false;
  if (!plan.has_value() && start != nullptr) plan = *start;
  result.seconds = absl::ToDoubleSeconds(absl::Now() - began);
  if (!plan.has_value()) {
    result.proven_infeasible = solution.proven_infeasible;
    result.why_not =
        solution.proven_infeasible
            ? absl::StrFormat("CBC proves that no schedule fits in %d bytes", budget_bytes)
        : over_by_tolerance
            ? absl::StrFormat("CBC's schedule exceeds %d bytes within its tolerances", budget_bytes)
            : absl::StrFormat("CBC found no schedule within %d bytes in %.1f s", budget_bytes,
                              solution.seconds);
    return result;
  }
  return ResultOfPlan(graph, *plan, budget_bytes, std::move(result));
}

absl::StatusOr<RematResult> LpRoundingSchedule(const RematGraph& graph, int64_t budget_bytes,
                                               const LpRoundingOptions& options) {
  constexpr char kStrategy[] = "lp_rounding";
  if (!(options.time_limit_seconds > 0) || options.samples < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "LP rounding needs a positive time limit and at least one sample, got %g seconds and %d",
        options.time_limit_seconds, options.samples));
  }
  if (std::optional<RematResult> no = InfeasibleByNode(graph, budget_bytes, kStrategy)) return *no;
  const absl::Time began = absl::Now();
  RematResult result;
  result.strategy = kStrategy;
  std::mt19937 rng(options.seed);
  std::optional<StagePlan> best;
  bool first = true;  // the relaxation at the budget itself
  for (double fraction : {1.0, 0.9, 0.8, 0.7}) {
    const double left = options.time_limit_seconds - absl::ToDoubleSeconds(absl::Now() - began);
    if (left <= 0) break;
    const double budget = fraction * static_cast<double>(budget_bytes);
    const CheckmateProgram program(graph, budget, /*integer=*/false);
    const CbcSolution relaxed = SolveWithCbc(program.program(), {.time_limit_seconds = left});
    if (!relaxed.found) {
      if (first) {
        result.proven_infeasible = relaxed.proven_infeasible;
        result.why_not =
            relaxed.proven_infeasible
                ? absl::StrFormat("the LP relaxation proves that no schedule fits in %d bytes",
                                  budget_bytes)
                : "CBC did not solve the LP relaxation";
      }
      break;
    }
    if (first) result.lower_bound = relaxed.objective * TotalCost(graph);
    first = false;
    TC_ASSIGN_OR_RETURN(
        best, BestRounding(graph, program, relaxed.x, budget_bytes, options.samples, rng));
    if (best.has_value()) break;
  }
  result.seconds = absl::ToDoubleSeconds(absl::Now() - began);
  if (!best.has_value()) {
    if (result.why_not.empty()) {
      result.why_not =
          absl::StrFormat("no rounding of the LP relaxation fits in %d bytes", budget_bytes);
    }
    return result;
  }
  return ResultOfPlan(graph, *best, budget_bytes, std::move(result));
}

}  // namespace tc::partition
