// `tensorcut compare`: every partition strategy on one model in one table
// (saved bytes, recomputation, the backward's estimated peak, the compiled
// step's planned peak, what its steps add to the process's resident memory
// at their peak, and the median time of its steps); with --sweep, the
// partition suite (tools/partition_suite.h) on one model, a list or all of
// them, as a table, CSV, JSON and an SVG plot per model.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "codegen/fusing_compiler.h"
#include "nn/models/models.h"
#include "partition/milp.h"
#include "partition/report.h"
#include "partition/strategies.h"
#include "pipeline/step_memory.h"
#include "runtime/error.h"
#include "tools/cli.h"
#include "tools/flags.h"
#include "tools/partition_suite.h"
#include "tools/subcommands.h"
#include "tools/svg_plot.h"
#include "tools/training.h"

namespace tc {
namespace {

constexpr int kDefaultSteps = 5;

// `path` for `model` when the suite covers several: "sweep.svg" becomes
// "sweep_cnn.svg".
std::string PlotPathFor(const std::string& path, const std::string& model, bool several) {
  if (!several) return path;
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  const bool has_extension =
      dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return has_extension ? absl::StrCat(path.substr(0, dot), "_", model, path.substr(dot))
                       : absl::StrCat(path, "_", model);
}

// --sweep: the partition suite on each model named (tools/partition_suite.h),
// its rows printed as each model finishes (or as JSON at the end, --json),
// the CSV of every row so far written to --csv after each model (a failure
// later keeps what was measured), and each model plotted to --plot.
absl::Status Sweep(const std::vector<std::string>& models, int runs) {
  const SuiteOptions options{.step_runs = runs,
                             .milp_seconds = absl::GetFlag(FLAGS_milp_seconds),
                             .seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_seed))};
  if (!(options.milp_seconds > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--milp_seconds must be positive, got ", options.milp_seconds));
  }
  const bool json = absl::GetFlag(FLAGS_json);
  const std::string csv_flag = absl::GetFlag(FLAGS_csv), plot_flag = absl::GetFlag(FLAGS_plot);
  std::vector<SuiteRow> all;
  for (const std::string& model : models) {
    TC_ASSIGN_OR_RETURN(const std::vector<SuiteRow> rows, RunPartitionSuite(model, options));
    if (!json) {
      std::string table = SuiteTable(rows);
      if (!all.empty()) table = table.substr(table.find('\n') + 1);  // the header once
      std::printf("%s", table.c_str());
      std::fflush(stdout);
    }
    if (!plot_flag.empty()) {
      const std::string path = OutputPath(PlotPathFor(plot_flag, model, models.size() > 1));
      TC_RETURN_IF_ERROR(WriteTextFile(path, SvgPlot(SuitePlot(model, rows))));
      const std::string schedules = OutputPath(
          PlotPathFor(PlotPathFor(plot_flag, model, models.size() > 1), "schedules", true));
      TC_RETURN_IF_ERROR(WriteTextFile(schedules, SvgPlot(SchedulePlot(model, rows))));
      if (!json) std::printf("plot: %s and %s\n", path.c_str(), schedules.c_str());
    }
    all.insert(all.end(), rows.begin(), rows.end());
    if (!csv_flag.empty()) TC_RETURN_IF_ERROR(WriteTextFile(OutputPath(csv_flag), SuiteCsv(all)));
  }
  if (json) std::printf("%s\n", SuiteJson(all).c_str());
  if (!csv_flag.empty() && !json) {
    std::printf("suite: %zu rows written to %s\n", all.size(), OutputPath(csv_flag).c_str());
  }
  return absl::OkStatus();
}

absl::Status Run() {
  const int runs = absl::GetFlag(FLAGS_steps) > 0 ? absl::GetFlag(FLAGS_steps) : kDefaultSteps;
  const std::string model = absl::GetFlag(FLAGS_model);
  if (absl::GetFlag(FLAGS_sweep)) {
    if (FlagGiven("budget")) {
      return absl::InvalidArgumentError(
          "--budget does not apply to --sweep, which runs budgets 0, 0.25, 0.5, 0.75 and 1");
    }
    TC_ASSIGN_OR_RETURN(const std::vector<std::string> models, SuiteModelNames(model));
    return Sweep(models, runs);
  }
  if (model == "all" || absl::StrContains(model, ',')) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model ", model, ": all models, or a list, need --sweep"));
  }
  for (const auto& [flag, given] : {std::pair{"csv", !absl::GetFlag(FLAGS_csv).empty()},
                                    std::pair{"plot", !absl::GetFlag(FLAGS_plot).empty()},
                                    std::pair{"json", absl::GetFlag(FLAGS_json)}}) {
    if (given) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, " is an output of --sweep; add --sweep"));
    }
  }
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel(model, absl::GetFlag(FLAGS_seed)));
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline, JointPipeline(*spec.module, spec.inputs));
  const JointGraph& joint = **pipeline.joint_graph();
  TC_ASSIGN_OR_RETURN(const double budget, BudgetFraction());

  {
    // One compiled step first: what the process sets up once (threads,
    // kernels' code, pages of its own code) then counts in no strategy's
    // resident growth.
    TC_ASSIGN_OR_RETURN(partition::PartitionResult part,
                        pipeline.partition(partition::DefaultPartition, joint));
    TC_ASSIGN_OR_RETURN(Function step, pipeline.compile_training(codegen::fusing(), part));
    CompiledStepMs(spec, step, /*runs=*/1);
  }

  std::printf("%s: joint graph %d nodes; step = forward + loss + backward, median of %d\n\n",
              spec.name.c_str(), joint.graph.num_nodes(), runs);
  std::printf("%-16s %9s %9s %10s %5s %5s %9s %9s %8s %9s %8s\n", "strategy", "saved MB", "act. MB",
              "recomp MF", "fw", "bw", "bw est MB", "plan MB", "rss+ MB", "part. ms", "step ms");
  for (const std::string& name : PipelineStrategyNames()) {
    TC_ASSIGN_OR_RETURN(
        const partition::PartitionFn fn,
        PipelinePartitioner(name, budget, pipeline, absl::GetFlag(FLAGS_milp_seconds)));
    const Clock::time_point start = Clock::now();
    TC_ASSIGN_OR_RETURN(partition::PartitionResult part, pipeline.partition(fn, joint));
    const double partition_ms = 1e3 * Seconds(start);
    const partition::PartitionReport r = partition::MakeReport(joint.graph, joint.layout, part);
    TC_ASSIGN_OR_RETURN(const CompiledForward fw, pipeline.fw_compile(codegen::fusing(), part));
    TC_ASSIGN_OR_RETURN(const CompiledBackward bw,
                        pipeline.bw_compile(codegen::fusing(), part, fw));
    TC_ASSIGN_OR_RETURN(Function step, pipeline.make_autograd_function(fw, bw, part));
    const int64_t plan_bytes = PlannedStepMemory(fw.run, bw.run).peak_bytes();
    // What the steps add to the resident set at their peak: the plans'
    // memory (taken at the first step), eager results, kernels' scratch.
    ResetPeakResident();
    const int64_t resident_before = ResidentBytes();
    const double step_ms = CompiledStepMs(spec, step, runs);
    const int64_t rss_bytes = PeakResidentBytes() - resident_before;
    const std::string label =
        IsBudgetedStrategy(name) ? absl::StrFormat("%s %g", name, budget) : name;
    std::printf("%-16s %9.3f %9.3f %10.3f %5d %5d %9.3f %9.3f %8.1f %9.2f %8.2f\n", label.c_str(),
                r.saved_bytes / 1e6, r.saved_activation_bytes / 1e6, r.recompute_flops / 1e6,
                r.fw_nodes, r.bw_nodes, r.bw_peak_bytes / 1e6, plan_bytes / 1e6, rss_bytes / 1e6,
                partition_ms, step_ms);
  }
  return absl::OkStatus();
}

}  // namespace

int CompareCommand() { return ExitCode("compare", Run()); }

}  // namespace tc
