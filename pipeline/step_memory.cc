#include "pipeline/step_memory.h"

#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace tc {

StepMemory PlannedStepMemory(const codegen::Executable& forward,
                             const codegen::Executable& backward) {
  return {forward.planned_memory(), backward.planned_memory()};
}

absl::StatusOr<StepMemory> PlannedStepMemory(const CompilerPipeline& pipeline,
                                             const codegen::Compiler& compiler,
                                             const partition::PartitionResult& partition) {
  TC_ASSIGN_OR_RETURN(const CompiledForward forward, pipeline.fw_compile(compiler, partition));
  TC_ASSIGN_OR_RETURN(const CompiledBackward backward,
                      pipeline.bw_compile(compiler, partition, forward));
  return PlannedStepMemory(forward.run, backward.run);
}

std::string StepMemoryText(const StepMemory& memory) {
  const auto mb = [](int64_t bytes) { return bytes / 1e6; };
  return absl::StrFormat(
      "forward arena %.2f MB + saved %.2f MB + outputs %.2f MB, backward arena %.2f MB + outputs "
      "%.2f MB: peak %.2f MB",
      mb(memory.forward.arena_bytes), mb(memory.forward.saved_bytes),
      mb(memory.forward.outside_bytes), mb(memory.backward.arena_bytes),
      mb(memory.backward.outside_bytes), mb(memory.peak_bytes()));
}

}  // namespace tc
