// `tensorcut compare`: every partition strategy on one reference model in one
// table (saved bytes, recomputation, the backward's estimated peak, the
// compiled step's planned peak, what its steps add to the process's resident
// memory at their peak, and the median time of its steps), and with --sweep
// the budget strategy's Pareto curve as CSV and an SVG plot.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
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
#include "tools/subcommands.h"
#include "tools/svg_plot.h"
#include "tools/training.h"

namespace tc {
namespace {

constexpr int kDefaultSteps = 5;

// The median time of a compiled training step (forward, loss, backward) on
// the model's example inputs.
double StepMs(nn::ModelSpec& spec, const Function& step, int runs) {
  return MedianMs(runs, [&] {
    const TensorTree out = ValueOrThrow(step(spec.inputs));
    const Tensor loss = spec.loss(out, spec.targets);
    spec.module->zero_grad();
    loss.backward();
  });
}

absl::Status Sweep(const nn::ModelSpec& spec, const JointGraph& joint) {
  std::vector<double> budgets;
  for (int i = 0; i <= 10; ++i) budgets.push_back(i / 10.0);
  TC_ASSIGN_OR_RETURN(std::vector<partition::ParetoPoint> points,
                      partition::BudgetSweep(joint.graph, joint.layout, budgets));
  std::string csv = "budget,saved_bytes,saved_activation_bytes,recompute_flops\n";
  Plot plot{absl::StrCat("budget sweep: ", spec.name),
            "saved activations (MB)",
            "recomputed in the backward (MFLOP)",
            {}};
  for (const partition::ParetoPoint& p : points) {
    absl::StrAppendFormat(&csv, "%g,%d,%d,%.17g\n", p.budget, p.saved_bytes,
                          p.saved_activation_bytes, p.recompute_flops);
    plot.points.push_back(
        {p.saved_activation_bytes / 1e6, p.recompute_flops / 1e6, absl::StrFormat("%g", p.budget)});
  }
  const std::string csv_flag = absl::GetFlag(FLAGS_csv), plot_flag = absl::GetFlag(FLAGS_plot);
  if (csv_flag.empty()) {
    std::printf("\n%s", csv.c_str());
  } else {
    TC_RETURN_IF_ERROR(WriteTextFile(OutputPath(csv_flag), csv));
    std::printf("\nsweep: %zu budgets written to %s\n", points.size(),
                OutputPath(csv_flag).c_str());
  }
  if (!plot_flag.empty()) {
    TC_RETURN_IF_ERROR(WriteTextFile(OutputPath(plot_flag), SvgPlot(plot)));
    std::printf("plot: %s\n", OutputPath(plot_flag).c_str());
  }
  return absl::OkStatus();
}

absl::Status Run() {
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec,
                      nn::MakeModel(absl::GetFlag(FLAGS_model), absl::GetFlag(FLAGS_seed)));
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline, JointPipeline(*spec.module, spec.inputs));
  const JointGraph& joint = **pipeline.joint_graph();
  const int runs = absl::GetFlag(FLAGS_steps) > 0 ? absl::GetFlag(FLAGS_steps) : kDefaultSteps;
  const double budget = absl::GetFlag(FLAGS_budget);

  {
    // One compiled step first: what the process sets up once (threads,
    // kernels' code, pages of its own code) then counts in no strategy's
    // resident growth.
    TC_ASSIGN_OR_RETURN(partition::PartitionResult part,
                        pipeline.partition(partition::DefaultPartition, joint));
    TC_ASSIGN_OR_RETURN(Function step, pipeline.compile_training(codegen::fusing(), part));
    StepMs(spec, step, /*runs=*/1);
  }

  std::printf("%s: joint graph %d nodes; step = forward + loss + backward, median of %d\n\n",
              spec.name.c_str(), joint.graph.num_nodes(), runs);
  std::printf("%-14s %9s %9s %10s %5s %5s %9s %9s %8s %9s %8s\n", "strategy", "saved MB", "act. MB",
              "recomp MF", "fw", "bw", "bw est MB", "plan MB", "rss+ MB", "part. ms", "step ms");
  for (const std::string& name : partition::StrategyNames()) {
    TC_ASSIGN_OR_RETURN(partition::PartitionFn fn, partition::PartitionerByName(name, budget));
    if (name == "milp") {
      fn = partition::MilpPartitioner(budget, absl::GetFlag(FLAGS_milp_seconds));
    }
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
    const double step_ms = StepMs(spec, step, runs);
    const int64_t rss_bytes = PeakResidentBytes() - resident_before;
    const std::string label =
        name == "budget" || name == "milp" ? absl::StrFormat("%s %g", name, budget) : name;
    std::printf("%-14s %9.3f %9.3f %10.3f %5d %5d %9.3f %9.3f %8.1f %9.2f %8.2f\n", label.c_str(),
                r.saved_bytes / 1e6, r.saved_activation_bytes / 1e6, r.recompute_flops / 1e6,
                r.fw_nodes, r.bw_nodes, r.bw_peak_bytes / 1e6, plan_bytes / 1e6, rss_bytes / 1e6,
                partition_ms, step_ms);
  }
  if (absl::GetFlag(FLAGS_sweep) || !absl::GetFlag(FLAGS_csv).empty() ||
      !absl::GetFlag(FLAGS_plot).empty()) {
    return Sweep(spec, joint);
  }
  return absl::OkStatus();
}

}  // namespace

int CompareCommand() { return ExitCode("compare", Run()); }

}  // namespace tc
