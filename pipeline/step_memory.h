// The memory a compiled training step's plans reserve: the forward's arena,
// its saved region and its other outputs (the loss, updated buffers), the
// backward's arena and its outputs (the gradients). Each program keeps what
// it reserved from call to call (codegen/program.h's execution contexts), so
// from the second step on all of it is held at once: that sum is the step's
// peak, the figure a partition strategy changes.
//
//   CompiledForward fw = pipeline.fw_compile(codegen::fusing(), part).value();
//   CompiledBackward bw = pipeline.bw_compile(codegen::fusing(), part, fw).value();
//   StepMemory m = PlannedStepMemory(fw.run, bw.run);
//   // or, compiling both halves with one compiler:
//   StepMemory m = PlannedStepMemory(pipeline, codegen::fusing(), part).value();
//   m.peak_bytes();       // forward's three parts + backward's arena and outputs
//   StepMemoryText(m);    // "forward arena 1.20 MB + saved 3.40 MB + ..."
//
// What no plan holds is not counted: results of ops that run their eager
// kernel (they allocate per call), constants, and the caller's arguments
// (parameters, the batch).
#ifndef TENSORCUT_PIPELINE_STEP_MEMORY_H_
#define TENSORCUT_PIPELINE_STEP_MEMORY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/executable.h"
#include "partition/partition.h"
#include "pipeline/compiler_pipeline.h"

namespace tc {

struct StepMemory {
  codegen::PlannedMemory forward, backward;
  int64_t peak_bytes() const { return forward.total_bytes() + backward.total_bytes(); }
};

StepMemory PlannedStepMemory(const codegen::Executable& forward,
                             const codegen::Executable& backward);
// Compiles `partition`'s halves with `compiler` (as compile_training does)
// and returns what their plans reserve.
absl::StatusOr<StepMemory> PlannedStepMemory(const CompilerPipeline& pipeline,
                                             const codegen::Compiler& compiler,
                                             const partition::PartitionResult& partition);

// "forward arena 1.20 MB + saved 3.40 MB + outputs 0.00 MB, backward arena
// 2.00 MB + outputs 0.50 MB: peak 7.10 MB"
std::string StepMemoryText(const StepMemory& memory);

}  // namespace tc

#endif  // TENSORCUT_PIPELINE_STEP_MEMORY_H_
