// The peak budget: the chosen partition's planned peak fits the limit and
// never grows as the budget falls, on every reference and zoo model; 0 is the least
// peak of the candidates, 1 recomputes nothing; the compiled step under it
// equals eager in f64; budgets outside [0, 1] are refused.
#include "pipeline/peak_budget.h"

#include <limits>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "graph/decompositions.h"
#include "nn/models/models.h"
#include "partition/accounting.h"
#include "partition/strategies.h"
#include "pipeline/step_memory.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

// Budgets from 1 down to 0 on `name`: each choice's planned peak is what its
// partition compiles to, fits the limit, and is no larger than the last.
void CheckPeakFalls(const std::string& name, const std::vector<double>& budgets) {
  nn::ModelSpec spec = nn::MakeModel(name, 0).value();
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
  REQUIRE(pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
  const JointGraph& joint = *pipeline.joint_graph().value();
  int64_t previous = std::numeric_limits<int64_t>::max();
  for (double budget : budgets) {
    PeakBudgetChoice choice;
    const partition::PartitionResult part =
        pipeline
            .partition(PeakBudgetPartitioner(pipeline, codegen::fusing(), budget, &choice), joint)
            .value();
    INFO(name << " at budget " << budget << ": " << PeakBudgetChoiceText(choice));
    REQUIRE(PlannedStepMemory(pipeline, codegen::fusing(), part).value().peak_bytes() ==
            choice.peak_bytes);
    REQUIRE(choice.candidates == 12);
    REQUIRE(choice.peak_bytes <= choice.limit_bytes);
    REQUIRE(choice.peak_bytes <= previous);
    previous = choice.peak_bytes;
    if (budget == 1.0) REQUIRE(partition::Recomputed(part).flops == 0);
    if (budget == 0.0) REQUIRE(choice.peak_bytes == choice.least_bytes);
  }
}

TEST_CASE("the peak budget's step never grows as the budget falls, on every reference model") {
  for (const std::string& name : nn::ModelNames()) CheckPeakFalls(name, {1, 0.75, 0.5, 0.25, 0});
}

TEST_CASE("the peak budget's step never grows as the budget falls, on every zoo model") {
  for (const std::string& name : nn::ZooModelNames()) CheckPeakFalls(name, {1, 0.5, 0});
}

TEST_CASE("cnn's least-peak step plans 4 MB less than the byte budget's at 0") {
  nn::ModelSpec spec = nn::MakeModel("cnn", 0).value();
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
  REQUIRE(pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
  const JointGraph& joint = *pipeline.joint_graph().value();
  PeakBudgetChoice choice;
  pipeline.partition(PeakBudgetPartitioner(pipeline, codegen::fusing(), 0, &choice), joint).value();
  const partition::PartitionResult budget_0 =
      pipeline.partition(partition::MemoryBudgetPartitioner(0), joint).value();
  const int64_t budget_0_peak =
      PlannedStepMemory(pipeline, codegen::fusing(), budget_0).value().peak_bytes();
  INFO(PeakBudgetChoiceText(choice));
  // Saving the least bytes is not the least memory: budget 0 recomputes
  // batch norms and ReLUs whose values then share the backward's arena with
  // the gradients.
  REQUIRE(choice.peak_bytes == choice.least_bytes);
  REQUIRE(choice.candidate != "budget 0");
  REQUIRE(budget_0_peak - choice.peak_bytes > 4000000);
}

TEST_CASE("cnn in f64 under the peak budget: the compiled step equals eager") {
  for (double budget : {0.0, 0.5}) {
    INFO("budget " << budget);
    nn::ModelSpec eager = nn::MakeModel("cnn", 1).value();
    eager.module->to(DType::kF64);
    const Tensor x = eager.inputs.leaf().to(DType::kF64);
    const Tensor out_e = (*eager.module)(x);
    eager.loss(TensorTree::MakeLeaf(out_e), eager.targets).backward();

    nn::ModelSpec compiled = nn::MakeModel("cnn", 1).value();
    compiled.module->to(DType::kF64);
    CompilerPipeline pipeline =
        CompilerPipeline::Create(*compiled.module, TensorTree::MakeLeaf(x)).value();
    const Function step =
        testing::CompileStages(pipeline, PeakBudgetPartitioner(pipeline, codegen::fusing(), budget),
                               nullptr, codegen::fusing());
    const Tensor out_c = step(TensorTree::MakeLeaf(x)).value().leaf();
    REQUIRE_TENSORS_CLOSE(out_c, out_e, 1e-10, 1e-10);
    compiled.loss(TensorTree::MakeLeaf(out_c), compiled.targets).backward();
    testing::RequireSameState(*compiled.module, *eager.module, 1e-10, /*grads=*/true);
  }
}

TEST_CASE("a peak budget outside [0, 1], or another pipeline's graph, is refused") {
  nn::ModelSpec spec = nn::MakeModel("linear", 0).value();
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
  REQUIRE(pipeline.generate_ir_for_training().ok());
  const absl::StatusOr<partition::PartitionResult> part = pipeline.partition(
      PeakBudgetPartitioner(pipeline, codegen::fusing(), 1.5), *pipeline.joint_graph().value());
  REQUIRE(part.status().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(part.status().message().find("1.5") != std::string::npos);

  // Another pipeline's graph would compile against this one's layout.
  nn::ModelSpec other = nn::MakeModel("linear", 1).value();
  CompilerPipeline other_pipeline = CompilerPipeline::Create(*other.module, other.inputs).value();
  REQUIRE(other_pipeline.generate_ir_for_training().ok());
  const absl::StatusOr<partition::PartitionResult> foreign =
      other_pipeline.partition(PeakBudgetPartitioner(pipeline, codegen::fusing(), 0.5),
                               *other_pipeline.joint_graph().value());
  REQUIRE(foreign.status().code() == absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tc
