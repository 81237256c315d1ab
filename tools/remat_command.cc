// `tensorcut remat --graph FILE.json [--budget 0.8] [--strategy S]`: a
// rematerialization research graph (partition/remat_graph.h) read, checked
// and measured, or with --model NAME that model's joint graph as the same
// problem (partition/remat_of_joint.h): its nodes and edges, the peak of one pass without
// recomputation (the budgets' 100%) and its compute. With --budget (a
// fraction of that peak, or bytes with a unit), it is scheduled under the
// budget by greedy, lp_rounding or milp (the default; warm-started from
// greedy), or all three (--strategy all). --json prints one object per
// schedule (an array for all).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "nn/models/models.h"
#include "partition/remat_graph.h"
#include "partition/remat_greedy.h"
#include "partition/remat_milp.h"
#include "partition/remat_of_joint.h"
#include "partition/remat_stages.h"
#include "tools/cli.h"
#include "tools/flags.h"
#include "tools/subcommands.h"
#include "tools/training.h"

namespace tc {
namespace {

absl::StatusOr<std::vector<partition::RematResult>> Schedule(const partition::RematGraph& graph,
                                                             int64_t budget,
                                                             const std::string& strategy) {
  const double seconds = absl::GetFlag(FLAGS_milp_seconds);
  std::vector<partition::RematResult> results;
  if (strategy == "greedy" || strategy == "all") {
    TC_ASSIGN_OR_RETURN(partition::RematResult greedy,
                        partition::GreedyRematSchedule(graph, budget));
    results.push_back(std::move(greedy));
  }
  if (strategy == "lp_rounding" || strategy == "all") {
    TC_ASSIGN_OR_RETURN(
        partition::RematResult rounded,
        partition::LpRoundingSchedule(graph, budget, {.time_limit_seconds = seconds}));
    results.push_back(std::move(rounded));
  }
  if (strategy == "milp" || strategy == "all") {
    const std::optional<partition::StagePlan> start = partition::GreedyRematPlan(graph, budget);
    partition::RematMilpOptions options{.time_limit_seconds = seconds};
    if (start.has_value()) options.starts.push_back(&*start);
    TC_ASSIGN_OR_RETURN(partition::RematResult milp,
                        partition::CheckmateMilpSchedule(graph, budget, options));
    results.push_back(std::move(milp));
  }
  if (results.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy ", strategy, ": remat schedules with greedy, lp_rounding, milp or all"));
  }
  return results;
}

// The least overhead any schedule of the strategy's model can have: its
// lower bound on compute over one pass's.
double OverheadBound(const partition::RematGraph& graph, const partition::RematResult& r) {
  const double one_pass = partition::TotalCost(graph);
  return one_pass > 0 ? std::max(0.0, r.lower_bound / one_pass - 1) : 0;
}

nlohmann::ordered_json ScheduleJson(const partition::RematGraph& graph, int64_t peak,
                                    int64_t budget, const partition::RematResult& r) {
  nlohmann::ordered_json out = {{"graph", graph.name},    {"nodes", graph.nodes.size()},
                                {"edges", graph.edges},   {"no_remat_peak_bytes", peak},
                                {"budget_bytes", budget}, {"strategy", r.strategy},
                                {"found", r.found}};
  if (!r.found) {
    out["proven_infeasible"] = r.proven_infeasible;
    out["why_not"] = r.why_not;
  } else {
    out["peak_bytes"] = r.cost.peak_bytes;
    out["overhead"] = r.cost.overhead;
    out["recomputed"] = r.cost.recomputed;
    out["proven_optimal"] = r.proven_optimal;
    out["proven_gap"] = partition::ProvenGap(r);
    out["overhead_lower_bound"] = OverheadBound(graph, r);
  }
  out["solve_seconds"] = r.seconds;
  return out;
}

std::string ScheduleLine(const partition::RematGraph& graph, const partition::RematResult& r) {
  if (!r.found) {
    return absl::StrFormat("  %-12s %s %s", r.strategy,
                           r.proven_infeasible ? "infeasible:" : "none:", r.why_not);
  }
  const std::string proof = r.proven_optimal ? "proven optimal"
                                             : absl::StrFormat("gap %.2f%% (overhead >= %.2f%%)",
                                                               100 * partition::ProvenGap(r),
                                                               100 * OverheadBound(graph, r));
  return absl::StrFormat("  %-12s peak %.3f GB, overhead %.2f%% (%d recomputed), %s, %.2f s",
                         r.strategy, r.cost.peak_bytes / 1e9, 100 * r.cost.overhead,
                         r.cost.recomputed, proof, r.seconds);
}

// --graph's research graph, or --model's joint graph as the same problem.
absl::StatusOr<partition::RematGraph> Problem() {
  const std::string path = absl::GetFlag(FLAGS_graph);
  if (!path.empty()) return partition::ReadNodeLinkGraph(OutputPath(path));
  if (!FlagGiven("model")) {
    return absl::InvalidArgumentError(
        "--graph FILE.json (a graph in networkx node-link JSON) or --model NAME (its joint "
        "graph)");
  }
  const std::string model = absl::GetFlag(FLAGS_model);
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel(model, absl::GetFlag(FLAGS_seed)));
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline, JointPipeline(*spec.module, spec.inputs));
  TC_ASSIGN_OR_RETURN(const JointGraph* joint, pipeline.joint_graph());
  return partition::RematGraphOfJoint(joint->graph, joint->layout, model).graph;
}

absl::Status Run() {
  TC_ASSIGN_OR_RETURN(const partition::RematGraph graph, Problem());
  int64_t backward = 0;
  for (const partition::RematGraph::Node& node : graph.nodes) backward += node.backward;
  const int64_t peak = partition::NoRematPeak(graph);
  const double compute = partition::TotalCost(graph);
  const bool json = absl::GetFlag(FLAGS_json);
  if (!FlagGiven("budget")) {
    if (json) {
      const nlohmann::ordered_json out = {
          {"graph", graph.name},        {"nodes", graph.nodes.size()}, {"edges", graph.edges},
          {"backward_nodes", backward}, {"no_remat_peak_bytes", peak}, {"compute", compute}};
      std::printf("%s\n", out.dump().c_str());
      return absl::OkStatus();
    }
    std::printf("%s: %zu nodes (%lld backward), %lld edges\n", graph.name.c_str(),
                graph.nodes.size(), static_cast<long long>(backward),
                static_cast<long long>(graph.edges));
    std::printf("one pass without recomputation: peak %.3f GB, compute %g\n", peak / 1e9, compute);
    return absl::OkStatus();
  }
  TC_ASSIGN_OR_RETURN(const int64_t budget,
                      partition::ParseBudget(absl::GetFlag(FLAGS_budget), peak));
  // --strategy's default is the partition commands' min_cut; remat's is milp.
  const std::string strategy = FlagGiven("strategy") ? absl::GetFlag(FLAGS_strategy) : "milp";
  TC_ASSIGN_OR_RETURN(const std::vector<partition::RematResult> results,
                      Schedule(graph, budget, strategy));
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const partition::RematResult& r : results) {
      out.push_back(ScheduleJson(graph, peak, budget, r));
    }
    std::printf("%s\n", (results.size() == 1 ? out[0] : out).dump().c_str());
    return absl::OkStatus();
  }
  std::printf("%s: %zu nodes, one pass peaks at %.3f GB; budget %.3f GB (%.3f of it)\n",
              graph.name.c_str(), graph.nodes.size(), peak / 1e9, budget / 1e9,
              peak > 0 ? static_cast<double>(budget) / static_cast<double>(peak) : 0.0);
  for (const partition::RematResult& r : results)
    std::printf("%s\n", ScheduleLine(graph, r).c_str());
  return absl::OkStatus();
}

}  // namespace

int RematCommand() { return ExitCode("remat", Run()); }

}  // namespace tc
