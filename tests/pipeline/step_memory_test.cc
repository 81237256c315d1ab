// The memory a compiled training step's plans reserve: a step whose arenas,
// saved region and outputs are worked out by hand, and, on every reference
// model, a forward whose memory never grows as the activation memory budget
// falls.
#include "pipeline/step_memory.h"

#include <limits>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "graph/decompositions.h"
#include "graph/ir.h"
#include "nn/models/models.h"
#include "partition/strategies.h"
#include "pipeline/compiler_pipeline.h"

namespace tc {
namespace {

Value* Matmul(Graph& g, Value* a, Value* b) {
  return g.AddNode(OpKind::kMatmul, {a, b}).value()[0];
}

TEST_CASE("a step's peak adds both halves' arenas, the saved region and the outputs") {
  // Every value is a [256, 256] f32 matrix, 262144 bytes (a multiple of
  // the plan's 64-byte alignment), "B" below. Forward: a = x x, b = a a,
  // c = b b, d = c c; it returns d and saves a and b. a and b are outputs,
  // so the one value that dies inside is c: arena B. Saved region a + b =
  // 2B, d outside = B.
  const TensorType m{DType::kF32, {256, 256}};
  constexpr int64_t B = 256 * 256 * 4;
  Graph fw;
  Value* x = fw.AddPlaceholder("x", m);
  Value* a = Matmul(fw, x, x);
  Value* b = Matmul(fw, a, a);
  Value* c = Matmul(fw, b, b);
  Value* d = Matmul(fw, c, c);
  REQUIRE(fw.SetOutputs({d, a, b}).ok());
  // Backward: takes a, b and the tangent g; e = g b dies in f = e a, the
  // output: arena B, outside B.
  Graph bw;
  Value* saved_a = bw.AddPlaceholder("a", m);
  Value* saved_b = bw.AddPlaceholder("b", m);
  Value* g = bw.AddPlaceholder("g", m);
  REQUIRE(bw.SetOutputs({Matmul(bw, Matmul(bw, g, saved_b), saved_a)}).ok());

  const codegen::Executable forward = codegen::fusing()(fw, {.saved_outputs_from = 1}).value();
  const codegen::Executable backward = codegen::fusing()(bw).value();
  const StepMemory memory = PlannedStepMemory(forward, backward);
  CHECK(memory.forward.arena_bytes == B);
  CHECK(memory.forward.saved_bytes == 2 * B);
  CHECK(memory.forward.outside_bytes == B);
  CHECK(memory.backward.arena_bytes == B);
  CHECK(memory.backward.saved_bytes == 0);
  CHECK(memory.backward.outside_bytes == B);
  CHECK(memory.peak_bytes() == 6 * B);
  CHECK(StepMemoryText(memory) ==
        "forward arena 0.26 MB + saved 0.52 MB + outputs 0.26 MB, backward arena 0.26 MB + "
        "outputs 0.26 MB: peak 1.57 MB");
}

// What the budget trades: a value it no longer saves dies in the forward
// instead, so the forward's memory (arena, saved region, outputs) never
// grows as the budget falls. The backward's arena may: a recomputed value is
// live beside the gradients. On cnn at budget 0 it holds 4.2 MB more for no
// fewer saved bytes than at 0.25, on convbn at 0.25 384 bytes more for 64
// fewer saved, so the whole step's peak grows there: the budget counts saved
// bytes, not the peak (pipeline/peak_budget.h bounds the peak itself).
TEST_CASE(
    "the forward's planned memory never grows as the budget falls, on every reference model") {
  for (const std::string& name : nn::ModelNames()) {
    nn::ModelSpec spec = nn::MakeModel(name, 0).value();
    CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
    REQUIRE(pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
    const JointGraph& joint = *pipeline.joint_graph().value();
    int64_t previous = std::numeric_limits<int64_t>::max();
    for (double budget : {1.0, 0.75, 0.5, 0.25, 0.0}) {
      const partition::PartitionResult part =
          pipeline.partition(partition::PartitionerByName("budget", budget).value(), joint).value();
      const StepMemory memory = PlannedStepMemory(pipeline, codegen::fusing(), part).value();
      INFO(name << " at budget " << budget << ": " << StepMemoryText(memory));
      CHECK(memory.forward.total_bytes() <= previous);
      previous = memory.forward.total_bytes();
    }
  }
}

}  // namespace
}  // namespace tc
