// The saving half of plan_processes_test: for each case, trains a step two
// runs, saves its plan, runs it three more, and writes what those runs gave
// (losses, parameters, optimizer state) and the batch beside the plan, for
// plan_load_main to compare against in another process; then the same for
// the transformer's inference plan ("inference": its inputs and outputs).
//   plan_save_main DIR
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "codegen/fusing_compiler.h"
#include "nn/checkpoint.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "pipeline/compiler_pipeline.h"
#include "pipeline/plan.h"
#include "pipeline/train_step.h"
#include "runtime/gemm.h"

namespace tc {
namespace {

struct Case {
  const char* model;
  const char* optimizer;
  Precision precision;
};

absl::Status SaveCase(const Case& c, const std::string& dir) {
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel(c.model, 3));
  std::unique_ptr<nn::Optimizer> optimizer;
  if (std::string(c.optimizer) == "adam") {
    optimizer = std::make_unique<nn::Adam>(spec.module->named_parameters(), 1e-3);
  } else {
    optimizer = std::make_unique<nn::SGD>(spec.module->named_parameters(), 0.05, 0.9);
  }
  TC_ASSIGN_OR_RETURN(std::unique_ptr<TrainStep> step,
                      TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets,
                                        *optimizer, {.precision = c.precision}));
  std::vector<Tensor> batch = Flatten(spec.inputs).first;
  for (const Tensor& t : Flatten(spec.targets).first) batch.push_back(t);
  for (int i = 0; i < 2; ++i) TC_RETURN_IF_ERROR(step->Run(batch).status());
  const std::string name = absl::StrCat(dir, "/", c.model, "_", c.optimizer,
                                        c.precision == Precision::kBF16 ? "_bf16" : "");
  TC_RETURN_IF_ERROR(SavePlan(step->compiled(), name + ".tcplan"));
  nn::Metadata losses;
  for (int i = 0; i < 3; ++i) {
    TC_ASSIGN_OR_RETURN(const double loss, step->Run(batch));
    losses[absl::StrCat("loss.", i)] = absl::StrFormat("%a", loss);
  }
  nn::NamedTensors expected;
  for (size_t i = 0; i < batch.size(); ++i)
    expected.emplace_back(absl::StrCat("batch.", i), batch[i]);
  for (auto& [n, t] : spec.module->named_parameters()) expected.emplace_back("param." + n, t);
  for (auto& [n, t] : optimizer->state()) expected.emplace_back(n, t);
  return nn::SaveTensors(expected, name + ".expected", losses);
}

// The transformer's inference plan in eval mode, and its outputs on the
// example inputs.
absl::Status SaveInference(const std::string& dir) {
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel("transformer", 3));
  spec.module->eval();
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline,
                      CompilerPipeline::Create(*spec.module, spec.inputs));
  TC_RETURN_IF_ERROR(pipeline.generate_ir_for_inference());
  TC_ASSIGN_OR_RETURN(const InferenceGraph* graph, pipeline.inference_graph());
  TC_RETURN_IF_ERROR(SaveInferencePlan(graph->graph, pipeline.captured().inputs,
                                       pipeline.inference_constants(), dir + "/inference.tcplan"));
  TC_ASSIGN_OR_RETURN(codegen::Executable exe,
                      pipeline.inference_compile(codegen::fusing(), graph->graph));
  TC_ASSIGN_OR_RETURN(Function function, pipeline.make_inference_function(exe));
  TC_ASSIGN_OR_RETURN(TensorTree out, function(spec.inputs));
  nn::NamedTensors expected;
  const std::vector<Tensor> inputs = Flatten(spec.inputs).first;
  for (size_t i = 0; i < inputs.size(); ++i)
    expected.emplace_back(absl::StrCat("input.", i), inputs[i]);
  const std::vector<Tensor> outputs = Flatten(out).first;
  for (size_t i = 0; i < outputs.size(); ++i) {
    expected.emplace_back(absl::StrCat("output.", i), outputs[i]);
  }
  return nn::SaveTensors(expected, dir + "/inference.expected");
}

}  // namespace
}  // namespace tc

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: plan_save_main DIR\n");
    return 2;
  }
  // Both processes take the same products: a timed choice could differ.
  if (!tc::SetGemmChoice(tc::GemmChoice::kOneDnn).ok()) return 1;
  for (const tc::Case& c :
       {tc::Case{"mlp", "sgd", tc::Precision::kF32}, tc::Case{"cnn", "adam", tc::Precision::kF32},
        tc::Case{"transformer", "adam", tc::Precision::kF32},
        tc::Case{"mlp_dropout", "adam", tc::Precision::kF32},
        tc::Case{"transformer", "sgd", tc::Precision::kBF16}}) {
    if (const absl::Status s = tc::SaveCase(c, argv[1]); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.model, std::string(s.message()).c_str());
      return 1;
    }
  }
  if (const absl::Status s = tc::SaveInference(argv[1]); !s.ok()) {
    std::fprintf(stderr, "inference: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
