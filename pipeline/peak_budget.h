// A partition strategy whose budget bounds the compiled step's planned peak
// (pipeline/step_memory.h), not the saved bytes. The byte budget of
// partition/strategies.h counts what the forward saves, but the backward's
// arena holds what it recomputes beside the gradients, so saving less can
// make the whole step larger (on cnn, budget 0 saves 1 MB less than min-cut
// and plans 4 MB more). This strategy measures instead: it compiles each
// candidate partition (default, min-cut, recompute-all, and the byte budget
// at 0.1, 0.2, ..., 0.9), reads its plans' peak, and takes the one that
// recomputes the fewest FLOPs among those whose peak fits
//
//   limit(budget) = least + budget * (default's - least),
//
// `least` the smallest peak of any candidate, ties to the smaller peak. As
// the budget falls the limit falls and the candidates that fit are fewer, so
// the chosen peak never grows: 0 is the least-memory step of the
// candidates (not of every partition there is), 1 the default partition's
// (nothing recomputed).
//
//   PeakBudgetChoice choice;
//   PartitionResult part = pipeline.partition(
//       PeakBudgetPartitioner(pipeline, codegen::fusing(), 0.5, &choice), joint).value();
//   // choice.candidate: "budget 0.3"; choice.peak_bytes <= choice.limit_bytes
//
// The PartitionFn partitions `pipeline`'s joint graph only
// (FailedPrecondition for another's).
#ifndef TENSORCUT_PIPELINE_PEAK_BUDGET_H_
#define TENSORCUT_PIPELINE_PEAK_BUDGET_H_

#include <cstdint>
#include <string>

#include "codegen/executable.h"
#include "partition/partition.h"
#include "pipeline/compiler_pipeline.h"

namespace tc {

struct PeakBudgetChoice {
  std::string candidate;      // "min_cut", "budget 0.3", ...
  int64_t peak_bytes = 0;     // its compiled step's planned peak
  int64_t limit_bytes = 0;    // what the budget allowed
  int64_t least_bytes = 0;    // the least peak of any candidate
  int64_t default_bytes = 0;  // the default partition's peak
  int candidates = 0;         // compiled to choose
};

// A PartitionFn for `pipeline`'s joint graph, compiling candidates with
// `compiler` (the compiler the step will use: plans differ between
// compilers). `pipeline` and `*choice` must outlive it. InvalidArgument for a budget
// outside [0, 1]. Each call stores what it chose in `*choice` when given.
partition::PartitionFn PeakBudgetPartitioner(const CompilerPipeline& pipeline,
                                             const codegen::Compiler& compiler, double budget,
                                             PeakBudgetChoice* choice = nullptr);

// "budget 0.3: planned peak 34.98 MB of a limit of 36.20 MB (least 34.98 MB,
// default 47.56 MB; 12 candidates compiled)"
std::string PeakBudgetChoiceText(const PeakBudgetChoice& choice);

}  // namespace tc

#endif  // TENSORCUT_PIPELINE_PEAK_BUDGET_H_
