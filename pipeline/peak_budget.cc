#include "pipeline/peak_budget.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "partition/accounting.h"
#include "partition/min_cut.h"
#include "partition/strategies.h"
#include "pipeline/step_memory.h"

namespace tc {
namespace {

struct Candidate {
  std::string name;
  partition::PartitionResult partition;
  int64_t peak_bytes = 0;
  double recompute_flops = 0;
};

absl::StatusOr<std::vector<Candidate>> CompiledCandidates(const CompilerPipeline& pipeline,
                                                          const codegen::Compiler& compiler,
                                                          const Graph& joint,
                                                          const JointLayout& layout) {
  std::vector<std::pair<std::string, partition::PartitionFn>> fns = {
      {"default", partition::DefaultPartition},
      {"min_cut", partition::MinCutPartition},
      {"recompute_all", partition::RecomputeAllPartition}};
  // Budget 0 is recompute-all's partition and 1 min-cut's: the tenths
  // between.
  for (int tenths = 1; tenths <= 9; ++tenths) {
    const double budget = tenths / 10.0;
    fns.push_back(
        {absl::StrFormat("budget %g", budget), partition::MemoryBudgetPartitioner(budget)});
  }
  std::vector<Candidate> candidates;
  for (auto& [name, fn] : fns) {
    TC_ASSIGN_OR_RETURN(partition::PartitionResult part, fn(joint, layout));
    TC_ASSIGN_OR_RETURN(const StepMemory memory, PlannedStepMemory(pipeline, compiler, part));
    const double flops = partition::Recomputed(part).flops;
    candidates.push_back({std::move(name), std::move(part), memory.peak_bytes(), flops});
  }
  return candidates;
}

}  // namespace

partition::PartitionFn PeakBudgetPartitioner(const CompilerPipeline& pipeline,
                                             const codegen::Compiler& compiler, double budget,
                                             PeakBudgetChoice* choice) {
  return [&pipeline, compiler, budget, choice](
             const Graph& joint,
             const JointLayout& layout) -> absl::StatusOr<partition::PartitionResult> {
    TC_RETURN_IF_ERROR(partition::CheckActivationMemoryBudget(budget));
    // Candidates compile through `pipeline`: the graph must be its own.
    const absl::StatusOr<const JointGraph*> own = pipeline.joint_graph();
    if (!own.ok() || &(*own)->graph != &joint) {
      return absl::FailedPreconditionError(
          "PeakBudgetPartitioner: called on a joint graph that is not its pipeline's");
    }
    TC_ASSIGN_OR_RETURN(std::vector<Candidate> candidates,
                        CompiledCandidates(pipeline, compiler, joint, layout));
    const int64_t least = std::min_element(candidates.begin(), candidates.end(),
                                           [](const Candidate& a, const Candidate& b) {
                                             return a.peak_bytes < b.peak_bytes;
                                           })
                              ->peak_bytes;
    const int64_t default_peak = candidates[0].peak_bytes;  // "default" comes first
    const int64_t limit =
        least + static_cast<int64_t>(budget * static_cast<double>(default_peak - least));
    Candidate* best = nullptr;
    for (Candidate& c : candidates) {
      if (c.peak_bytes > limit) continue;
      if (best == nullptr || c.recompute_flops < best->recompute_flops ||
          (c.recompute_flops == best->recompute_flops && c.peak_bytes < best->peak_bytes)) {
        best = &c;
      }
    }
    // The least-peak candidate always fits, so `best` is set.
    if (choice != nullptr) {
      *choice = {best->name, best->peak_bytes, limit,
                 least,      default_peak,     static_cast<int>(candidates.size())};
    }
    return std::move(best->partition);
  };
}

std::string PeakBudgetChoiceText(const PeakBudgetChoice& choice) {
  return absl::StrFormat(
      "%s: planned peak %.2f MB of a limit of %.2f MB (least %.2f MB, default %.2f MB; %d "
      "candidates compiled)",
      choice.candidate, choice.peak_bytes / 1e6, choice.limit_bytes / 1e6, choice.least_bytes / 1e6,
      choice.default_bytes / 1e6, choice.candidates);
}

}  // namespace tc
