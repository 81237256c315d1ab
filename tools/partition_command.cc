// `tensorcut partition`: partitions a reference model's joint graph with one
// strategy and prints what it saves and recomputes (partition/report.h) and
// what the compiled step's memory plans reserve (pipeline/step_memory.h), as
// a table or one JSON object, optionally with the joint graph as DOT.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "codegen/fusing_compiler.h"
#include "nlohmann/json.hpp"
#include "nn/models/models.h"
#include "partition/milp.h"
#include "partition/report.h"
#include "partition/strategies.h"
#include "pipeline/step_memory.h"
#include "tools/cli.h"
#include "tools/flags.h"
#include "tools/subcommands.h"
#include "tools/training.h"

namespace tc {
namespace {

absl::Status Run() {
  const std::string strategy = absl::GetFlag(FLAGS_strategy);
  TC_ASSIGN_OR_RETURN(const double budget, BudgetFraction());
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec,
                      nn::MakeModel(absl::GetFlag(FLAGS_model), absl::GetFlag(FLAGS_seed)));
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline, JointPipeline(*spec.module, spec.inputs));
  const JointGraph& joint = **pipeline.joint_graph();
  partition::MilpSolve solve;
  PeakBudgetChoice choice;
  TC_ASSIGN_OR_RETURN(const partition::PartitionFn partition_fn,
                      PipelinePartitioner(strategy, budget, pipeline,
                                          absl::GetFlag(FLAGS_milp_seconds), &solve, &choice));

  const Clock::time_point start = Clock::now();
  TC_ASSIGN_OR_RETURN(partition::PartitionResult part, pipeline.partition(partition_fn, joint));
  const double partition_ms = 1e3 * Seconds(start);
  partition::PartitionReport report = partition::MakeReport(joint.graph, joint.layout, part);
  TC_ASSIGN_OR_RETURN(const StepMemory memory,
                      PlannedStepMemory(pipeline, codegen::fusing(), part));
  report.measured_peak_bytes = memory.peak_bytes();

  const bool budgeted = IsBudgetedStrategy(strategy);
  if (absl::GetFlag(FLAGS_json)) {
    // The run's own fields, then the report's.
    nlohmann::ordered_json row = {{"model", spec.name},
                                  {"strategy", strategy},
                                  {"budget", nullptr},
                                  {"partition_ms", partition_ms}};
    if (budgeted) row["budget"] = budget;
    row.update(nlohmann::ordered_json::parse(partition::ReportJson(report)));
    row["step_memory"] = {{"forward_arena_bytes", memory.forward.arena_bytes},
                          {"saved_region_bytes", memory.forward.saved_bytes},
                          {"forward_outputs_bytes", memory.forward.outside_bytes},
                          {"backward_arena_bytes", memory.backward.arena_bytes},
                          {"backward_outputs_bytes", memory.backward.outside_bytes}};
    if (strategy == "milp") {
      row["milp"] = {{"proven_optimal", solve.proven_optimal},
                     {"objective", solve.objective},
                     {"lower_bound", solve.lower_bound},
                     {"relative_gap", solve.relative_gap},
                     {"seconds", solve.seconds},
                     {"variables", solve.variables},
                     {"constraints", solve.constraints}};
    }
    if (strategy == "peak_budget") {
      row["peak_budget"] = {{"candidate", choice.candidate},
                            {"limit_bytes", choice.limit_bytes},
                            {"least_bytes", choice.least_bytes},
                            {"default_bytes", choice.default_bytes},
                            {"candidates", choice.candidates}};
    }
    std::printf("%s\n", row.dump().c_str());
  } else {
    std::printf("%s with %s%s: joint graph %d nodes, partitioned in %.1f ms\n\n", spec.name.c_str(),
                strategy.c_str(), budgeted ? absl::StrFormat(" %g", budget).c_str() : "",
                joint.graph.num_nodes(), partition_ms);
    std::printf("%s", partition::ReportText(report).c_str());
    std::printf("memory plan: %s\n", StepMemoryText(memory).c_str());
    if (strategy == "milp") std::printf("milp: %s\n", partition::MilpSolveText(solve).c_str());
    if (strategy == "peak_budget") {
      std::printf("peak_budget: %s\n", PeakBudgetChoiceText(choice).c_str());
    }
  }
  const std::string dot = absl::GetFlag(FLAGS_dot);
  if (!dot.empty()) {
    const std::string path = OutputPath(dot);
    TC_RETURN_IF_ERROR(WriteTextFile(path, partition::JointDot(joint.graph, joint.layout, part)));
    std::fprintf(stderr, "wrote %s\n", path.c_str());
  }
  return absl::OkStatus();
}

}  // namespace

int PartitionCommand() { return ExitCode("partition", Run()); }

}  // namespace tc
