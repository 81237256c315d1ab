// The partition benchmark behind `tensorcut compare --sweep`: every strategy
// on a model, the budgeted ones (budget, peak_budget, milp) over a sweep of
// budgets, each partition compiled and timed, and each row that is not
// milp's set beside the milp optimum at the same saved bytes.
//
//   std::vector<SuiteRow> rows = RunPartitionSuite("cnn", {.budgets = {0, 0.5, 1}}).value();
//   WriteTextFile("suite.csv", SuiteCsv(rows));
//   WriteTextFile("cnn.svg", SvgPlot(SuitePlot("cnn", rows)));
//
// The gap to the optimum: for a row that saves S bytes, milp is solved again
// under S (MilpOptions::max_saved_bytes), so the two choose among the same
// partitions; (row's recompute FLOPs - milp's) / milp's is how much more the
// strategy recomputes than it had to. A milp row is its own optimum (gap 0).
#ifndef TENSORCUT_TOOLS_PARTITION_SUITE_H_
#define TENSORCUT_TOOLS_PARTITION_SUITE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nn/models/models.h"
#include "pipeline/compiled_function.h"
#include "tools/svg_plot.h"

namespace tc {

struct SuiteOptions {
  std::vector<double> budgets = {0, 0.25, 0.5, 0.75, 1};
  int step_runs = 5;  // timed steps per row (median), after one warm-up
  double milp_seconds = 10;
  uint64_t seed = 0;  // the model's parameters and example inputs
};

struct SuiteRow {
  std::string model, strategy;
  std::optional<double> budget;  // budget, peak_budget and milp rows only
  int64_t saved_bytes = 0;
  int64_t measured_peak_bytes = 0;  // the compiled step's plans, all held at once
  double recompute_flops = 0;
  double step_ms = 0;       // median compiled step (forward, loss, backward)
  double partition_ms = 0;  // the partitioner's own time
  // milp under this row's saved bytes: its recompute FLOPs and whether the
  // solver proved them optimal before its time limit.
  double milp_flops = 0;
  bool milp_proven = false;
  // The solver's own gap when its time limit stopped it: (its FLOPs - its
  // lower bound) / its FLOPs; 0 when proven.
  double milp_solver_gap = 0;
  // (recompute_flops - milp_flops) / milp_flops; 0 when both are 0, unset
  // when only milp's is (no ratio exists).
  std::optional<double> gap_to_milp;
  // The partition as a schedule of the joint graph's rematerialization
  // problem (partition/remat_of_joint.h): the most activation bytes it holds
  // at once; and the least FLOPs any schedule recomputes within that peak
  // (partition/remat_milp.h, from the partition's own plan), proven or not
  // (on graphs too large for the MILP, the best of the partition's plan and
  // the greedy schedule, never proven).
  // recompute_flops - best_schedule_flops is what the partition's form (each
  // value saved, or recomputed once for the whole backward) costs.
  int64_t schedule_peak_bytes = 0;
  double best_schedule_flops = 0;
  bool best_schedule_proven = false;
};

// The median time of a compiled training step (forward, loss, backward) on
// the model's example inputs, after one warm-up step.
double CompiledStepMs(nn::ModelSpec& spec, const Function& step, int runs);

// "all" is every reference and zoo model (nn/models/models.h); otherwise a
// comma-separated list of model names, each checked (MakeModel's error for
// one unknown or empty, InvalidArgument for one named twice).
absl::StatusOr<std::vector<std::string>> SuiteModelNames(absl::string_view spec);

// The rows of one model: default, min_cut and recompute_all once, then
// budget, peak_budget and milp at each of `options.budgets` (ascending:
// each milp solve also starts from the one before).
absl::StatusOr<std::vector<SuiteRow>> RunPartitionSuite(absl::string_view model,
                                                        const SuiteOptions& options);

// A header line, then a line per row; an unset budget or gap is empty.
std::string SuiteCsv(const std::vector<SuiteRow>& rows);
// An array of objects with the CSV's fields; unset ones null.
std::string SuiteJson(const std::vector<SuiteRow>& rows);
// The rows as a table for a terminal, sizes in MB and MFLOP.
std::string SuiteTable(const std::vector<SuiteRow>& rows);
// `model`'s rows: planned peak (MB) against step time (ms), a series per
// strategy, milp's points joined in order of their peak (the optimum's
// curve; the step times are measured, so noisy).
Plot SuitePlot(absl::string_view model, const std::vector<SuiteRow>& rows);
// `model`'s rows in the rematerialization problem's terms: activation peak
// (MB) against FLOPs recomputed, a series per strategy, and the best
// schedules at the same peaks joined.
Plot SchedulePlot(absl::string_view model, const std::vector<SuiteRow>& rows);

}  // namespace tc

#endif  // TENSORCUT_TOOLS_PARTITION_SUITE_H_
