#include "partition/remat_schedule.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace tc::partition {
namespace {

absl::Status StepError(size_t step, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("schedule step ", step, ": ", what));
}

std::string Label(const RematGraph& graph, int node) {
  return absl::StrCat("node ", node, " (", graph.nodes[static_cast<size_t>(node)].name, ")");
}

}  // namespace

absl::StatusOr<ScheduleCost> CheckSchedule(const RematGraph& graph, const RematSchedule& schedule) {
  const size_t n = graph.nodes.size();
  std::vector<bool> live(n, false), computed(n, false);
  ScheduleCost cost;
  int64_t bytes = 0;
  int64_t computes = 0;
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    const RematSchedule::Step& step = schedule.steps[s];
    if (step.node < 0 || static_cast<size_t>(step.node) >= n) {
      return StepError(s, absl::StrCat("node ", step.node, " is not in the graph of ", n));
    }
    const auto v = static_cast<size_t>(step.node);
    const RematGraph::Node& node = graph.nodes[v];
    if (step.kind == RematSchedule::Step::Kind::kFree) {
      if (!live[v])
        return StepError(
            s, absl::StrCat("frees ", Label(graph, step.node), ", which is not in memory"));
      live[v] = false;
      bytes -= node.bytes;
      continue;
    }
    if (live[v]) {
      return StepError(
          s, absl::StrCat("computes ", Label(graph, step.node), ", which is in memory already"));
    }
    for (int input : node.inputs) {
      if (!live[static_cast<size_t>(input)]) {
        return StepError(s, absl::StrCat(Label(graph, step.node), " reads ", Label(graph, input),
                                         ", which is not in memory"));
      }
    }
    live[v] = true;
    bytes += node.bytes;
    cost.peak_bytes = std::max(cost.peak_bytes, bytes);
    cost.compute += node.cost;
    computed[v] = true;
    ++computes;
  }
  for (size_t v = 0; v < n; ++v) {
    if (!computed[v]) {
      return absl::InvalidArgumentError(
          absl::StrCat("schedule: ", Label(graph, static_cast<int>(v)), " is never computed"));
    }
  }
  const double one_pass = TotalCost(graph);
  cost.overhead = one_pass > 0 ? cost.compute / one_pass - 1 : 0;
  cost.recomputed = computes - static_cast<int64_t>(n);
  return cost;
}

RematSchedule NoRematSchedule(const RematGraph& graph) {
  const size_t n = graph.nodes.size();
  const std::vector<size_t> last_read = LastReaders(graph);
  std::vector<std::vector<int>> dies_after(n);
  for (size_t u = 0; u < n; ++u) dies_after[last_read[u]].push_back(static_cast<int>(u));
  RematSchedule schedule;
  for (size_t t = 0; t < n; ++t) {
    schedule.steps.push_back({RematSchedule::Step::Kind::kCompute, static_cast<int>(t)});
    for (int u : dies_after[t]) schedule.steps.push_back({RematSchedule::Step::Kind::kFree, u});
  }
  return schedule;
}

}  // namespace tc::partition
