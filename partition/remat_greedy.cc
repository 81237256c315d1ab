#include "partition/remat_greedy.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace tc::partition {
namespace {

constexpr char kStrategy[] = "greedy";

// One stage of the greedy pass: what it computes, and the memory it reaches
// when `keep` says which values go on to the next stage.
class Stage {
 public:
  Stage(const RematGraph& graph, size_t t, const std::vector<char>& in_memory)
      : graph_(graph), in_memory_(in_memory), position_(graph.nodes.size(), -1) {
    const std::vector<char> computes = ComputedFor(graph, {static_cast<int>(t)}, in_memory);
    for (size_t v = 0; v <= t; ++v) {
      if (!computes[v]) continue;
      position_[v] = static_cast<int>(computed_.size());
      computed_.push_back(static_cast<int>(v));
    }
    last_read_.assign(graph.nodes.size(), -1);
    for (size_t p = 0; p < computed_.size(); ++p) {
      for (int u : graph.nodes[static_cast<size_t>(computed_[p])].inputs) {
        last_read_[static_cast<size_t>(u)] = static_cast<int>(p);
      }
    }
  }

  const std::vector<int>& computed() const { return computed_; }
  int last_read(int v) const { return last_read_[static_cast<size_t>(v)]; }
  // -1 for a value in memory when the stage starts.
  int position(int v) const { return position_[static_cast<size_t>(v)]; }

  // The peak bytes and the position of the node computed then.
  std::pair<int64_t, int> Peak(const std::vector<char>& keep) const {
    int64_t bytes = 0;
    for (size_t v = 0; v < in_memory_.size(); ++v) {
      if (in_memory_[v] && (last_read_[v] >= 0 || keep[v])) bytes += graph_.nodes[v].bytes;
    }
    std::pair<int64_t, int> peak = {-1, 0};
    for (size_t p = 0; p < computed_.size(); ++p) {
      const RematGraph::Node& node = graph_.nodes[static_cast<size_t>(computed_[p])];
      bytes += node.bytes;
      if (bytes > peak.first) peak = {bytes, static_cast<int>(p)};
      auto release = [&](int v) {
        const auto i = static_cast<size_t>(v);
        if (last_read_[i] <= static_cast<int>(p) && !keep[i]) bytes -= graph_.nodes[i].bytes;
      };
      for (int u : node.inputs) release(u);
      release(computed_[p]);
    }
    return peak;
  }

 private:
  const RematGraph& graph_;
  const std::vector<char>& in_memory_;
  std::vector<int> computed_;
  std::vector<int> position_;
  std::vector<int> last_read_;
};

}  // namespace

std::optional<StagePlan> GreedyRematPlan(const RematGraph& graph, int64_t budget_bytes) {
  const size_t n = graph.nodes.size();
  const std::vector<size_t> last_reader = LastReaders(graph);
  std::vector<std::vector<int>> readers(n);
  for (size_t v = 0; v < n; ++v) {
    for (int u : graph.nodes[v].inputs)
      readers[static_cast<size_t>(u)].push_back(static_cast<int>(v));
  }
  std::vector<std::vector<int>> kept(n);
  std::vector<char> in_memory(n, 0);
  for (size_t t = 0; t < n; ++t) {
    const Stage stage(graph, t, in_memory);
    std::vector<char> keep(n, 0);
    for (size_t v = 0; v <= t; ++v) {
      const bool here = in_memory[v] || stage.position(static_cast<int>(v)) >= 0;
      keep[v] = here && last_reader[v] > t;
    }
    while (true) {
      const auto [peak, at] = stage.Peak(keep);
      if (peak <= budget_bytes) break;
      // Of the kept values in memory at the peak and not read from it on, the
      // cheapest to compute again per byte and per stage until it is read.
      int victim = -1;
      double best = std::numeric_limits<double>::infinity();
      for (size_t v = 0; v <= t; ++v) {
        const int value = static_cast<int>(v);
        if (!keep[v] || graph.nodes[v].bytes == 0 || stage.last_read(value) >= at) continue;
        if (stage.position(value) >= at) continue;
        double again = graph.nodes[v].cost;
        for (int u : graph.nodes[v].inputs) {
          if (!keep[static_cast<size_t>(u)]) again += graph.nodes[static_cast<size_t>(u)].cost;
        }
        const auto next =
            std::upper_bound(readers[v].begin(), readers[v].end(), static_cast<int>(t));
        const double distance = static_cast<double>(*next) - static_cast<double>(t);
        const double score = again / (static_cast<double>(graph.nodes[v].bytes) * distance);
        if (score < best) {
          best = score;
          victim = value;
        }
      }
      if (victim < 0) return std::nullopt;
      keep[static_cast<size_t>(victim)] = 0;
    }
    in_memory = keep;
    if (t + 1 < n) {
      for (size_t v = 0; v <= t; ++v) {
        if (keep[v]) kept[t + 1].push_back(static_cast<int>(v));
      }
    }
  }
  absl::StatusOr<StagePlan> plan = CompleteStages(graph, std::move(kept));
  if (!plan.ok()) return std::nullopt;
  return *std::move(plan);
}

absl::StatusOr<RematResult> GreedyRematSchedule(const RematGraph& graph, int64_t budget_bytes) {
  if (std::optional<RematResult> no = InfeasibleByNode(graph, budget_bytes, kStrategy)) return *no;
  const absl::Time began = absl::Now();
  std::optional<StagePlan> plan = GreedyRematPlan(graph, budget_bytes);
  RematResult result;
  result.strategy = kStrategy;
  result.seconds = absl::ToDoubleSeconds(absl::Now() - began);
  result.lower_bound = TotalCost(graph);
  if (!plan.has_value()) {
    result.why_not = absl::StrFormat(
        "the greedy rule found no schedule within %d bytes (one may exist: try milp)",
        budget_bytes);
    return result;
  }
  return ResultOfPlan(graph, *plan, budget_bytes, std::move(result));
}

}  // namespace tc::partition
