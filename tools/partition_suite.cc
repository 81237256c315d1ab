#include "tools/partition_suite.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "codegen/fusing_compiler.h"
#include "nlohmann/json.hpp"
#include "partition/accounting.h"
#include "partition/milp.h"
#include "partition/remat_greedy.h"
#include "partition/remat_milp.h"
#include "partition/remat_of_joint.h"
#include "partition/remat_schedule.h"
#include "partition/remat_stages.h"
#include "partition/report.h"
#include "partition/strategies.h"
#include "pipeline/step_memory.h"
#include "runtime/error.h"
#include "tools/cli.h"
#include "tools/training.h"

namespace tc {
namespace {

// Each row's partition as a schedule of the joint graph's rematerialization
// problem (partition/remat_of_joint.h), and the least FLOPs any schedule
// recomputes within the same activation peak: Checkmate's MILP started from
// the partition's own plan, so a solve the time limit stops is never worse
// than the partition. Proven optima are shared by rows of the same peak.
// Above kMilpNodes problem nodes CBC's root LP alone outlasts any time limit
// (minutes at 164 nodes), so there the best of the partition's plan and the
// greedy schedule at its peak stands in, unproven.
constexpr size_t kMilpNodes = 100;
class ScheduleReference {
 public:
  ScheduleReference(const JointGraph& joint, absl::string_view model, double seconds)
      : problem_(partition::RematGraphOfJoint(joint.graph, joint.layout, std::string(model))),
        seconds_(seconds) {}

  absl::Status Fill(const partition::PartitionResult& part, SuiteRow& row) {
    std::vector<std::string> saved;
    for (const partition::SavedValue& s : part.saved) saved.push_back(s.name);
    TC_ASSIGN_OR_RETURN(const partition::StagePlan plan,
                        partition::PlanOfPartition(problem_, saved));
    const partition::RematSchedule steps = partition::StagesToSchedule(problem_.graph, plan);
    TC_ASSIGN_OR_RETURN(const partition::ScheduleCost cost,
                        partition::CheckSchedule(problem_.graph, steps));
    row.schedule_peak_bytes = cost.peak_bytes;
    if (auto found = proven_.find(cost.peak_bytes); found != proven_.end()) {
      row.best_schedule_flops = found->second;
      row.best_schedule_proven = true;
      return absl::OkStatus();
    }
    const double one_pass = partition::TotalCost(problem_.graph);
    if (problem_.graph.nodes.size() > kMilpNodes) {
      TC_ASSIGN_OR_RETURN(const partition::RematResult greedy,
                          partition::GreedyRematSchedule(problem_.graph, cost.peak_bytes));
      row.best_schedule_flops =
          std::min(cost.compute, greedy.found ? greedy.cost.compute : cost.compute) - one_pass;
      row.best_schedule_proven = false;
      return absl::OkStatus();
    }
    partition::RematMilpOptions options{.time_limit_seconds = seconds_};
    options.starts.push_back(&plan);
    TC_ASSIGN_OR_RETURN(const partition::RematResult best,
                        partition::CheckmateMilpSchedule(problem_.graph, cost.peak_bytes, options));
    if (!best.found) {
      return absl::InternalError(absl::StrCat("the MILP lost its start: ", best.why_not));
    }
    row.best_schedule_flops = best.cost.compute - one_pass;
    row.best_schedule_proven = best.proven_optimal;
    if (best.proven_optimal) proven_[cost.peak_bytes] = row.best_schedule_flops;
    return absl::OkStatus();
  }

 private:
  const partition::JointRematGraph problem_;
  double seconds_;
  absl::flat_hash_map<int64_t, double> proven_;  // FLOPs recomputed, by peak
};

// The strategies run once; the budgeted ones at every budget of the sweep.
constexpr const char* kUnbudgeted[] = {"default", "min_cut", "recompute_all"};
constexpr const char* kBudgeted[] = {"budget", "peak_budget", "milp"};

// milp's recompute FLOPs under a row's saved bytes, starting from the row
// itself, so that a solve the time limit stops is never worse than the row.
// A proven optimum serves every row of the same bytes; an unproven one is
// solved again from each row (one may start better than the last).
class MilpReference {
 public:
  MilpReference(const JointGraph& joint, double seconds) : joint_(joint), seconds_(seconds) {}

  struct Optimum {
    double flops = 0;
    bool proven = false;
    double solver_gap = 0;
  };

  absl::StatusOr<Optimum> At(const partition::PartitionResult& row, int64_t saved_bytes) {
    auto found = proven_.find(saved_bytes);
    if (found != proven_.end()) return found->second;
    TC_ASSIGN_OR_RETURN(
        partition::MilpPartitionResult r,
        partition::MilpPartition(
            joint_.graph, joint_.layout,
            {.max_saved_bytes = saved_bytes, .time_limit_seconds = seconds_, .starts = {&row}}));
    const Optimum optimum{partition::Recomputed(r.partition).flops, r.solve.proven_optimal,
                          r.solve.relative_gap};
    if (optimum.proven) proven_.emplace(saved_bytes, optimum);
    return optimum;
  }

 private:
  const JointGraph& joint_;
  double seconds_;
  absl::flat_hash_map<int64_t, Optimum> proven_;
};

std::optional<double> Gap(double flops, double optimum) {
  if (optimum == 0) return flops == 0 ? std::optional<double>(0) : std::nullopt;
  return (flops - optimum) / optimum;
}

std::string BudgetText(const SuiteRow& row) {
  return row.budget ? absl::StrFormat("%g", *row.budget) : "";
}

}  // namespace

double CompiledStepMs(nn::ModelSpec& spec, const Function& step, int runs) {
  return MedianMs(runs, [&] {
    const TensorTree out = ValueOrThrow(step(spec.inputs));
    const Tensor loss = spec.loss(out, spec.targets);
    spec.module->zero_grad();
    loss.backward();
  });
}

absl::StatusOr<std::vector<std::string>> SuiteModelNames(absl::string_view spec) {
  std::vector<std::string> known = nn::ModelNames(), zoo = nn::ZooModelNames();
  known.insert(known.end(), zoo.begin(), zoo.end());
  if (spec == "all") return known;
  std::vector<std::string> chosen;
  for (absl::string_view name : absl::StrSplit(spec, ',')) {
    name = absl::StripAsciiWhitespace(name);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      // MakeModel's error names every model there is.
      TC_RETURN_IF_ERROR(nn::MakeModel(name, /*seed=*/0).status());
    }
    if (std::find(chosen.begin(), chosen.end(), name) != chosen.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model \"", name, "\" is named twice in \"", spec, "\""));
    }
    chosen.emplace_back(name);
  }
  return chosen;
}

absl::StatusOr<std::vector<SuiteRow>> RunPartitionSuite(absl::string_view model,
                                                        const SuiteOptions& options) {
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel(model, options.seed));
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline, JointPipeline(*spec.module, spec.inputs));
  const JointGraph& joint = **pipeline.joint_graph();
  MilpReference reference(joint, options.milp_seconds);
  ScheduleReference schedules(joint, model, options.milp_seconds);

  std::vector<std::pair<std::string, std::optional<double>>> runs;
  for (const char* name : kUnbudgeted) runs.push_back({name, std::nullopt});
  for (const char* name : kBudgeted) {
    for (double budget : options.budgets) runs.push_back({name, budget});
  }
  std::vector<SuiteRow> rows;
  // milp's partition at the budget before.
  std::optional<partition::PartitionResult> previous_milp;
  for (const auto& [strategy, budget] : runs) {
    SuiteRow row{.model = std::string(model), .strategy = strategy, .budget = budget};
    partition::MilpSolve solve;
    partition::PartitionFn fn;
    if (strategy == "milp") {
      // Also from milp's partition at the budget before (it fits the larger
      // budgets after it).
      std::vector<const partition::PartitionResult*> starts;
      if (previous_milp.has_value()) starts.push_back(&*previous_milp);
      fn = partition::MilpPartitioner(*budget, options.milp_seconds, &solve, std::move(starts));
    } else {
      TC_ASSIGN_OR_RETURN(fn, PipelinePartitioner(strategy, budget.value_or(1), pipeline));
    }
    const Clock::time_point start = Clock::now();
    TC_ASSIGN_OR_RETURN(partition::PartitionResult part, pipeline.partition(fn, joint));
    row.partition_ms = 1e3 * Seconds(start);
    const partition::PartitionReport report =
        partition::MakeReport(joint.graph, joint.layout, part);
    row.saved_bytes = report.saved_bytes;
    row.recompute_flops = report.recompute_flops;

    TC_ASSIGN_OR_RETURN(const CompiledForward fw, pipeline.fw_compile(codegen::fusing(), part));
    TC_ASSIGN_OR_RETURN(const CompiledBackward bw,
                        pipeline.bw_compile(codegen::fusing(), part, fw));
    TC_ASSIGN_OR_RETURN(Function step, pipeline.make_autograd_function(fw, bw, part));
    row.measured_peak_bytes = PlannedStepMemory(fw.run, bw.run).peak_bytes();
    row.step_ms = CompiledStepMs(spec, step, options.step_runs);

    if (strategy == "milp") {
      row.milp_flops = row.recompute_flops;
      row.milp_proven = solve.proven_optimal;
      row.milp_solver_gap = solve.relative_gap;
      previous_milp = std::move(part);
    } else {
      TC_ASSIGN_OR_RETURN(const MilpReference::Optimum optimum,
                          reference.At(part, row.saved_bytes));
      row.milp_flops = optimum.flops;
      row.milp_proven = optimum.proven;
      row.milp_solver_gap = optimum.solver_gap;
    }
    row.gap_to_milp = Gap(row.recompute_flops, row.milp_flops);
    TC_RETURN_IF_ERROR(schedules.Fill(strategy == "milp" ? *previous_milp : part, row));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string SuiteCsv(const std::vector<SuiteRow>& rows) {
  std::string csv =
      "model,strategy,budget,saved_bytes,measured_peak_bytes,recompute_flops,step_ms,"
      "partition_ms,milp_flops,milp_proven,milp_solver_gap,gap_to_milp,schedule_peak_bytes,"
      "best_schedule_flops,best_schedule_proven\n";
  for (const SuiteRow& r : rows) {
    absl::StrAppendFormat(&csv, "%s,%s,%s,%d,%d,%.17g,%.4f,%.4f,%.17g,%d,%.6g,%s,%d,%.17g,%d\n",
                          r.model, r.strategy, BudgetText(r), r.saved_bytes, r.measured_peak_bytes,
                          r.recompute_flops, r.step_ms, r.partition_ms, r.milp_flops, r.milp_proven,
                          r.milp_solver_gap,
                          r.gap_to_milp ? absl::StrFormat("%.6g", *r.gap_to_milp) : "",
                          r.schedule_peak_bytes, r.best_schedule_flops, r.best_schedule_proven);
  }
  return csv;
}

std::string SuiteJson(const std::vector<SuiteRow>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const SuiteRow& r : rows) {
    nlohmann::ordered_json row;
    row["model"] = r.model;
    row["strategy"] = r.strategy;
    row["budget"] = r.budget ? nlohmann::ordered_json(*r.budget) : nullptr;
    row["saved_bytes"] = r.saved_bytes;
    row["measured_peak_bytes"] = r.measured_peak_bytes;
    row["recompute_flops"] = r.recompute_flops;
    row["step_ms"] = r.step_ms;
    row["partition_ms"] = r.partition_ms;
    row["milp_flops"] = r.milp_flops;
    row["milp_proven"] = r.milp_proven;
    row["milp_solver_gap"] = r.milp_solver_gap;
    row["gap_to_milp"] = r.gap_to_milp ? nlohmann::ordered_json(*r.gap_to_milp) : nullptr;
    row["schedule_peak_bytes"] = r.schedule_peak_bytes;
    row["best_schedule_flops"] = r.best_schedule_flops;
    row["best_schedule_proven"] = r.best_schedule_proven;
    out.push_back(std::move(row));
  }
  return out.dump(2);
}

std::string SuiteTable(const std::vector<SuiteRow>& rows) {
  std::string table = absl::StrFormat(
      "%-19s %-16s %9s %9s %10s %9s %9s %10s %9s %9s %10s\n", "model", "strategy", "saved MB",
      "peak MB", "recomp MF", "step ms", "part. ms", "milp MF", "gap", "sched MB", "best MF");
  for (const SuiteRow& r : rows) {
    const std::string strategy =
        r.budget ? absl::StrCat(r.strategy, " ", BudgetText(r)) : r.strategy;
    const std::string gap =
        !r.gap_to_milp ? "inf"
        : r.strategy == "milp"
            ? (r.milp_proven ? "optimal" : absl::StrFormat("lim %.2f%%", 100 * r.milp_solver_gap))
            : absl::StrFormat("%.2f%%%s", 100 * *r.gap_to_milp, r.milp_proven ? "" : "*");
    absl::StrAppendFormat(
        &table, "%-19s %-16s %9.3f %9.3f %10.3f %9.2f %9.2f %10.3f %9s %9.3f %10s\n", r.model,
        strategy, r.saved_bytes / 1e6, r.measured_peak_bytes / 1e6, r.recompute_flops / 1e6,
        r.step_ms, r.partition_ms, r.milp_flops / 1e6, gap, r.schedule_peak_bytes / 1e6,
        absl::StrFormat("%.3f%s", r.best_schedule_flops / 1e6, r.best_schedule_proven ? "" : "*"));
  }
  return table;
}

namespace {

// `model`'s strategies in the order its rows first name them, but `last`,
// which (when named) comes at the end.
std::vector<std::string> StrategyOrder(absl::string_view model, const std::vector<SuiteRow>& rows,
                                       absl::string_view last = "") {
  std::vector<std::string> order;
  for (const SuiteRow& r : rows) {
    if (r.model == model && r.strategy != last &&
        std::find(order.begin(), order.end(), r.strategy) == order.end()) {
      order.push_back(r.strategy);
    }
  }
  if (!last.empty()) order.emplace_back(last);
  return order;
}

}  // namespace

Plot SuitePlot(absl::string_view model, const std::vector<SuiteRow>& rows) {
  Plot plot{absl::StrCat(model, ": planned peak against step time"),
            "planned peak (MB)",
            "step (ms)",
            {}};
  // A series per strategy, in the order the rows first name them; milp's
  // frontier last, so that its line is drawn over the others' points.
  for (const std::string& strategy : StrategyOrder(model, rows, "milp")) {
    PlotSeries series{strategy, {}, /*joined=*/strategy == "milp"};
    for (const SuiteRow& r : rows) {
      if (r.model != model || r.strategy != strategy) continue;
      series.points.push_back({r.measured_peak_bytes / 1e6, r.step_ms, BudgetText(r)});
    }
    std::sort(series.points.begin(), series.points.end(),
              [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
    if (!series.points.empty()) plot.series.push_back(std::move(series));
  }
  return plot;
}

Plot SchedulePlot(absl::string_view model, const std::vector<SuiteRow>& rows) {
  Plot plot{absl::StrCat(model, ": partitions and the best schedules at their peaks"),
            "activation peak (MB)",
            "recomputed (MFLOP)",
            {}};
  PlotSeries best{"best schedule", {}, /*joined=*/true};
  for (const std::string& strategy : StrategyOrder(model, rows)) {
    PlotSeries series{strategy, {}, /*joined=*/false};
    for (const SuiteRow& r : rows) {
      if (r.model != model || r.strategy != strategy) continue;
      const double peak = r.schedule_peak_bytes / 1e6;
      series.points.push_back({peak, r.recompute_flops / 1e6, BudgetText(r)});
      auto same = std::find_if(best.points.begin(), best.points.end(),
                               [&](const PlotPoint& p) { return p.x == peak; });
      if (same == best.points.end()) {
        best.points.push_back({peak, r.best_schedule_flops / 1e6, ""});
      } else {
        same->y = std::min(same->y, r.best_schedule_flops / 1e6);
      }
    }
    plot.series.push_back(std::move(series));
  }
  std::sort(best.points.begin(), best.points.end(),
            [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
  if (!best.points.empty()) plot.series.push_back(std::move(best));
  return plot;
}

}  // namespace tc
