#include "partition/remat_stages.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tc::partition {
namespace {

// For each value, its last reader's position in `computed` (-1: none).
std::vector<int> LastReadPositions(const RematGraph& graph, const std::vector<int>& computed) {
  std::vector<int> last(graph.nodes.size(), -1);
  for (size_t p = 0; p < computed.size(); ++p) {
    for (int u : graph.nodes[static_cast<size_t>(computed[p])].inputs) {
      last[static_cast<size_t>(u)] = static_cast<int>(p);
    }
  }
  return last;
}

std::vector<char> Membership(size_t n, const std::vector<int>& values) {
  std::vector<char> member(n, 0);
  for (int v : values) member[static_cast<size_t>(v)] = 1;
  return member;
}

const std::vector<int>& KeptAfter(const StagePlan& plan, size_t t) {
  static const std::vector<int> kNone;
  return t + 1 < plan.kept.size() ? plan.kept[t + 1] : kNone;
}

// Runs stage t: `compute(node, bytes_after)` for each node computed,
// `free(value)` for each value freed after it.
template <typename Compute, typename Free>
void RunStage(const RematGraph& graph, const StagePlan& plan, size_t t, Compute compute,
              Free free) {
  const std::vector<int>& computed = plan.computed[t];
  const std::vector<int> last_read = LastReadPositions(graph, computed);
  const std::vector<char> kept_on = Membership(graph.nodes.size(), KeptAfter(plan, t));
  int64_t bytes = 0;
  for (int v : plan.kept[t]) bytes += graph.nodes[static_cast<size_t>(v)].bytes;
  for (size_t p = 0; p < computed.size(); ++p) {
    const int k = computed[p];
    const RematGraph::Node& node = graph.nodes[static_cast<size_t>(k)];
    bytes += node.bytes;
    compute(k, bytes);
    auto release = [&](int v) {
      const auto i = static_cast<size_t>(v);
      if (last_read[i] <= static_cast<int>(p) && !kept_on[i]) {
        bytes -= graph.nodes[i].bytes;
        free(v);
      }
    };
    for (int u : node.inputs) release(u);
    release(k);
  }
}

}  // namespace

std::vector<char> ComputedFor(const RematGraph& graph, const std::vector<int>& roots,
                              const std::vector<char>& in_memory) {
  std::vector<char> computes(graph.nodes.size(), 0);
  std::vector<int> stack = roots;
  for (int v : stack) computes[static_cast<size_t>(v)] = 1;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for (int u : graph.nodes[static_cast<size_t>(v)].inputs) {
      const auto i = static_cast<size_t>(u);
      if (in_memory[i] || computes[i]) continue;
      computes[i] = 1;
      stack.push_back(u);
    }
  }
  return computes;
}

absl::StatusOr<StagePlan> CompleteStages(const RematGraph& graph,
                                         std::vector<std::vector<int>> kept) {
  const size_t n = graph.nodes.size();
  if (kept.size() > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("a plan keeps values for ", kept.size(), " stages; the graph has ", n));
  }
  kept.resize(n);
  for (size_t t = 0; t < n; ++t) {
    std::sort(kept[t].begin(), kept[t].end());
    kept[t].erase(std::unique(kept[t].begin(), kept[t].end()), kept[t].end());
    for (int v : kept[t]) {
      if (v < 0 || static_cast<size_t>(v) >= t) {
        return absl::InvalidArgumentError(
            absl::StrCat("stage ", t, " keeps node ", v, ": a stage keeps only nodes below it"));
      }
    }
  }
  StagePlan plan;
  plan.kept = std::move(kept);
  plan.computed.resize(n);
  for (size_t t = n; t-- > 0;) {
    const std::vector<char> in_memory = Membership(n, plan.kept[t]);
    std::vector<int> roots = {static_cast<int>(t)};
    for (int v : KeptAfter(plan, t)) {
      if (!in_memory[static_cast<size_t>(v)]) roots.push_back(v);
    }
    const std::vector<char> computes = ComputedFor(graph, roots, in_memory);
    std::vector<char> read(n, 0);
    for (size_t v = 0; v <= t; ++v) {
      if (!computes[v]) continue;
      plan.computed[t].push_back(static_cast<int>(v));
      for (int u : graph.nodes[v].inputs) read[static_cast<size_t>(u)] = 1;
    }
    const std::vector<char> kept_on = Membership(n, KeptAfter(plan, t));
    std::vector<int>& here = plan.kept[t];
    here.erase(std::remove_if(here.begin(), here.end(),
                              [&](int v) {
                                const auto i = static_cast<size_t>(v);
                                return !read[i] && !kept_on[i];
                              }),
               here.end());
  }
  return plan;
}

int64_t PeakOfStage(const RematGraph& graph, const StagePlan& plan, size_t t) {
  int64_t peak = 0;
  RunStage(
      graph, plan, t, [&](int, int64_t bytes) { peak = std::max(peak, bytes); }, [](int) {});
  return peak;
}

RematSchedule StagesToSchedule(const RematGraph& graph, const StagePlan& plan) {
  using Kind = RematSchedule::Step::Kind;
  RematSchedule schedule;
  for (size_t t = 0; t < plan.computed.size(); ++t) {
    RunStage(
        graph, plan, t,
        [&](int node, int64_t) {
          schedule.steps.push_back({Kind::kCompute, node});
        },
        [&](int value) {
          schedule.steps.push_back({Kind::kFree, value});
        });
  }
  return schedule;
}

std::optional<NodeNeed> NodeOverBudget(const RematGraph& graph, int64_t budget_bytes) {
  for (size_t v = 0; v < graph.nodes.size(); ++v) {
    int64_t bytes = graph.nodes[v].bytes;
    for (int u : graph.nodes[v].inputs) bytes += graph.nodes[static_cast<size_t>(u)].bytes;
    if (bytes > budget_bytes) return NodeNeed{static_cast<int>(v), bytes};
  }
  return std::nullopt;
}

std::optional<RematResult> InfeasibleByNode(const RematGraph& graph, int64_t budget_bytes,
                                            const std::string& strategy) {
  const std::optional<NodeNeed> need = NodeOverBudget(graph, budget_bytes);
  if (!need.has_value()) return std::nullopt;
  RematResult result;
  result.strategy = strategy;
  result.proven_infeasible = true;
  result.why_not = absl::StrFormat(
      "no schedule fits in %d bytes: node %d (%s) needs %d bytes for its inputs and output",
      budget_bytes, need->node, graph.nodes[static_cast<size_t>(need->node)].name, need->bytes);
  return result;
}

double ProvenGap(const RematResult& result) {
  if (!result.found || result.proven_optimal || result.cost.compute <= 0) return 0;
  return std::max(0.0, (result.cost.compute - result.lower_bound) / result.cost.compute);
}

absl::StatusOr<RematResult> ResultOfPlan(const RematGraph& graph, const StagePlan& plan,
                                         int64_t budget_bytes, RematResult result) {
  result.schedule = StagesToSchedule(graph, plan);
  absl::StatusOr<ScheduleCost> cost = CheckSchedule(graph, result.schedule);
  if (!cost.ok()) {
    return absl::InternalError(absl::StrCat(
        result.strategy, " made a schedule the checker refuses: ", cost.status().message()));
  }
  if (cost->peak_bytes > budget_bytes) {
    return absl::InternalError(absl::StrCat(result.strategy, " made a schedule whose peak ",
                                            cost->peak_bytes, " exceeds the budget ",
                                            budget_bytes));
  }
  result.found = true;
  result.cost = *cost;
  result.lower_bound = std::min(result.lower_bound, cost->compute);
  return result;
}

absl::StatusOr<int64_t> ParseBudget(const std::string& text, int64_t no_remat_peak) {
  static constexpr std::pair<const char*, double> kUnits[] = {{"KiB", 1024.0},
                                                              {"MiB", 1024.0 * 1024},
                                                              {"GiB", 1024.0 * 1024 * 1024},
                                                              {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                                              {"KB", 1e3},
                                                              {"MB", 1e6},
                                                              {"GB", 1e9},
                                                              {"TB", 1e12},
                                                              {"B", 1}};
  const std::string trimmed(absl::StripAsciiWhitespace(text));
  double scale = 0;  // 0: a fraction of the peak
  absl::string_view number = trimmed;
  for (const auto& [suffix, bytes] : kUnits) {
    if (absl::EndsWith(number, suffix)) {
      number.remove_suffix(std::char_traits<char>::length(suffix));
      scale = bytes;
      break;
    }
  }
  double value = 0;
  if (!absl::SimpleAtod(number, &value) || !std::isfinite(value) || value <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "budget \"%s\": expected a positive fraction of the peak without recomputation (0.8) or "
        "bytes with a unit (12GB, 500MiB, 4096B)",
        text));
  }
  const double bytes = scale == 0 ? value * static_cast<double>(no_remat_peak) : value * scale;
  if (bytes >= 9.2e18) {
    return absl::InvalidArgumentError(absl::StrFormat("budget \"%s\" is too large", text));
  }
  return static_cast<int64_t>(std::floor(bytes));
}

}  // namespace tc::partition
