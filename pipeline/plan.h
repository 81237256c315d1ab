// Plan files: a compiled training step saved as one file, which a program
// loads and trains without the model's code and without capturing,
// differentiating or partitioning anything, on this CPU or another (loading compiles the kernels
// and plans the memory for the CPU it runs on).
//
//   // Where the model is: compile, train a while, save.
//   std::unique_ptr<TrainStep> step = TrainStep::Create(model, loss, x, y, adam).value();
//   step->Run({x, y});
//   TC_RETURN_IF_ERROR(SavePlan(step->compiled(), "mlp.tcplan"));
//
//   // Anywhere: load and go on training, bit for bit as the saving process would.
//   std::unique_ptr<LoadedStep> plan = LoadPlan("mlp.tcplan").value();
//   double loss = plan->Run({x, y}).value();
//   TC_RETURN_IF_ERROR(SavePlan(plan->compiled(), "mlp.tcplan"));  // its trained state
//
// Format, version 1: a safetensors file (nn/checkpoint.h: atomic writes, a
// CRC-32 of the tensor data). Its tensors are the parameters and buffers under
// the model's (PyTorch's) names, the lifted constants as
// "tensorcut.constant.<index>", and the optimizer's state ("optim.<key>.exp_avg",
// "optim.param_groups.0.lr", ...). Its header's metadata holds:
//   tensorcut.plan.format   "1"; a reader refuses a newer version
//   tensorcut.version       the tensorcut that saved it
//   tensorcut.plan          JSON: what each forward placeholder stands for, the
//                           structures of the batch and the model's outputs,
//                           the model outputs returned, the updated buffers, the saved-value count,
//                           what each gradient is of, the random inputs, the symbolic batch dims,
//                           clipping, the optimizer (kind, groups, initial rates) and the default
//                           generator's state
//   tensorcut.plan.forward  the partitioned forward graph, as IR text
//   tensorcut.plan.backward the partitioned backward graph, as IR text
//   tensorcut.plan.crc32    CRC-32 of the three above, in that order
// The graphs are the text graph/printer.h prints, so a person can read a
// plan's header (its first 8 bytes give the header's length) with any JSON
// reader.
#ifndef TENSORCUT_PIPELINE_PLAN_H_
#define TENSORCUT_PIPELINE_PLAN_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nn/checkpoint.h"
#include "nn/named_tensors.h"
#include "nn/optim.h"
#include "pipeline/compiled_step.h"

namespace tc {

inline constexpr int kPlanFormatVersion = 1;

// Writes `step`'s programs, tensors and optimizer state to `path`
// (atomically: a failed save leaves an earlier file as it was). A step of a
// data-parallel job (reduce_gradients or a backward rewriter) is refused:
// its backward talks to other processes; save a single process's step.
// The compiler is not saved: a loaded plan compiles with the fusing compiler.
// `annotations` are the caller's own entries for the header (`tensorcut
// export` writes its run's position there), read back by
// LoadedStep::metadata(); a key the plan writes itself is refused.
absl::Status SavePlan(const CompiledStep& step, const std::string& path,
                      const nn::Metadata& annotations = {});

// The value of tensorcut.plan.crc32 for a header's plan and graphs: what a
// program that edits a plan's header writes.
std::string PlanChecksum(const nn::Metadata& metadata);

// A training step loaded from a plan file: it owns its parameters, buffers
// and optimizer.
class LoadedStep {
 public:
  // One step on `batch` (the batch leaves in the order the saved step took
  // them); returns the loss before the update.
  absl::StatusOr<double> Run(absl::Span<const Tensor> batch) { return compiled_->Run(batch); }
  // The same on the batch as trees, of the structure the saved step took
  // (an error naming where they differ).
  absl::StatusOr<double> Run(const TensorTree& inputs, const TensorTree& targets);
  // The model's outputs of the last run, when the saved step returned them
  // (TrainStepOptions::return_outputs).
  const std::vector<Tensor>& outputs() const { return compiled_->outputs(); }
  // The same in the structure the model returned them.
  absl::StatusOr<TensorTree> output_tree() const;
  const CompiledStep& compiled() const { return *compiled_; }
  // The parameters and buffers by the model's names, the live tensors.
  const nn::NamedTensors& parameters() const { return parameters_; }
  const nn::NamedTensors& buffers() const { return buffers_; }
  nn::Optimizer& optimizer() { return *optimizer_; }
  // The file's header: the plan's own entries and the saver's annotations.
  const nn::Metadata& metadata() const { return metadata_; }

 private:
  friend absl::StatusOr<std::unique_ptr<LoadedStep>> LoadPlan(const std::string& path);
  nn::NamedTensors parameters_, buffers_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<CompiledStep> compiled_;
  nn::Metadata metadata_;
};

// Reads a plan saved by SavePlan, checks it (the format version, the
// checksums, the graphs through the parser and verifier, every tensor's
// name, dtype and shape against the graphs, the optimizer's state) and
// compiles it for this CPU. Errors start with the path and name the field
// ("m.tcplan: tensorcut.plan: optimizer.name: unknown optimizer \"Lion\"").
// A plan whose step draws random numbers (dropout) sets the default
// generator (runtime/random.h) to the state it was saved with, so that the
// loaded step draws what the saving process would have drawn next.
absl::StatusOr<std::unique_ptr<LoadedStep>> LoadPlan(const std::string& path);

// A step's program alone, with no tensors and no optimizer: the graphs and
// what their arguments stand for (the compile cache's entries,
// pipeline/step_cache.h). Format 1 with kind "step_program"; the loader
// checks it as LoadPlan does and verifies the program, and gives the
// header's entries in `metadata`.
absl::Status SaveStepProgram(const StepProgram& program, const std::string& path,
                             const nn::Metadata& annotations = {});
absl::StatusOr<StepProgram> LoadStepProgram(const std::string& path,
                                            nn::Metadata* metadata = nullptr);

// Inference plans: a compiled model's forward alone, saved from a pipeline
// after generate_ir_for_inference (in eval mode, so that no buffer is
// updated) and loaded with no model code:
//   pipeline.generate_ir_for_inference();
//   SaveInferencePlan(pipeline.inference_graph().value()->graph, pipeline.captured().inputs,
//                     pipeline.inference_constants(), "mlp.tcinfer");
//   std::vector<Tensor> out = LoadInferencePlan("mlp.tcinfer").value()->Run({x}).value();
// `constants` holds, per placeholder, the tensor the graph reads there (the
// parameters, buffers and constants; undefined for the user inputs). A
// function that draws random numbers, or updates a buffer, is refused.
absl::Status SaveInferencePlan(const Graph& graph, absl::Span<const InputDescriptor> inputs,
                               absl::Span<const Tensor> constants, const std::string& path);

class LoadedFunction {
 public:
  // The user inputs' leaves in the capture's order in, the outputs' leaves
  // out. An input of another dtype, rank or (static) size is an
  // InvalidArgumentError naming it. Calls may come from several threads.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs) const;
  // Each input's path in the captured input tree ("inputs[0]").
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<TensorType>& input_types() const { return input_types_; }  // maybe symbolic

 private:
  friend absl::StatusOr<std::unique_ptr<LoadedFunction>> LoadInferencePlan(const std::string& path);
  codegen::Executable forward_;
  std::vector<Tensor> args_;  // per placeholder: the tensors it reads; the inputs' set per call
  std::vector<int> input_args_;
  std::vector<std::string> input_names_;
  std::vector<TensorType> input_types_;
};

// Reads an inference plan, with LoadPlan's checks, and compiles it for this
// CPU (with the fusing compiler, planning each size of a symbolic input).
absl::StatusOr<std::unique_ptr<LoadedFunction>> LoadInferencePlan(const std::string& path);

}  // namespace tc

#endif  // TENSORCUT_PIPELINE_PLAN_H_
