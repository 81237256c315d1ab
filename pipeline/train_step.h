// TrainStep: a whole training step compiled ahead of its runs and run
// without the eager tape: the model and its loss traced as one forward, the joint graph split
// by a partitioner, both halves compiled by the staged pipeline's fw_compile
// and bw_compile (by default to planned programs, codegen/program.h), and the
// optimizer (nn/optim.h) updating the parameters in place from the gradients
// the backward writes.
//
//   nn::ModelSpec spec = nn::MakeModel("mlp", 0).value();
//   nn::SGD sgd(spec.module->named_parameters(), /*lr=*/0.1);
//   std::unique_ptr<TrainStep> step =
//       TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd).value();
//   for (...) {
//     double loss = step->Run({images, labels}).value();
//   }
//
// A run takes the leaves of (inputs, targets) in tree order, of the examples'
// dtypes and ranks, and returns the loss. Sizes other than the examples'
// compile the step once more over symbols (TrainStepOptions), and each size
// is planned on its first run. After that, a run of a planned size
// allocates no tensor memory and creates no oneDNN primitive: every value
// lives in memory the programs planned. Mutated buffers (BatchNorm's running
// statistics) are copied back into the module's buffers; each parameter's
// .grad is left undefined after a run. Random ops (dropout) draw from the
// default generator at every run, as many numbers as eager training would,
// so a step and an eager step from one generator state draw the same masks.
#ifndef TENSORCUT_PIPELINE_TRAIN_STEP_H_
#define TENSORCUT_PIPELINE_TRAIN_STEP_H_

#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "autodiff/joint_graph.h"
#include "codegen/autocast.h"
#include "codegen/executable.h"
#include "codegen/fusing_compiler.h"
#include "graph/decompositions.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "partition/partition.h"
#include "pipeline/compiled_step.h"
#include "pipeline/step_cache.h"

namespace tc {

class CompilerPipeline;  // pipeline/compiler_pipeline.h

struct TrainStepOptions {
  partition::PartitionFn partition_fn;  // empty: the min-cut partition
  const DecompositionTable* decompositions = nullptr;
  codegen::Compiler compiler = codegen::fusing();  // for both halves
  // kBF16: both halves' products (matmul, linear) run on bf16 operands with
  // f32 accumulation; parameters, gradients and optimizer state stay f32
  // (codegen/autocast.h).
  Precision precision = Precision::kF32;
  // Dims of the batch that are symbols from the start, by the placeholder
  // name of the (inputs, targets) leaf: {{"arg0", {0}}, {"arg1", {0}}}.
  DynamicDims dynamic_dims;
  // A batch whose sizes differ from the examples' recompiles once, with
  // the dims that differed made symbols; false: such a batch is an error.
  bool automatic_dynamic = true;
  // The forward also returns the model's outputs (detached, no gradient
  // flows from them): each run's are outputs(), for scoring the batch.
  bool return_outputs = false;
  // How the compiled step runs, as CompiledStepOptions' fields of the same
  // names say (pipeline/compiled_step.h): the per-size plans kept, gradient
  // clipping, reduce_gradients (dist/data_parallel.h's average over a
  // data-parallel job's processes) and the backward rewriter (its
  // BackwardAllReduce, which TrainStep also asks to Rewrite each partition).
  int plan_cache_size = 8;
  std::optional<double> clip_grad_value;
  std::optional<double> clip_grad_norm;  // max_norm
  double clip_norm_type = 2.0;
  std::function<absl::Status(absl::Span<const Tensor> gradients, absl::Span<const Tensor> batch)>
      reduce_gradients;
  std::shared_ptr<BackwardRewriter> backward_rewriter;
};

class TrainStep {
 public:
  // Traces loss(module(inputs), targets), builds and partitions its joint
  // graph and compiles both halves. `optimizer` must update `module`'s
  // parameters; both must outlive the step.
  static absl::StatusOr<std::unique_ptr<TrainStep>> Create(nn::Module& module, nn::LossFn loss,
                                                           const TensorTree& inputs,
                                                           const TensorTree& targets,
                                                           nn::Optimizer& optimizer,
                                                           const TrainStepOptions& options = {});
  ~TrainStep();

  // One step on `batch`: the leaves of (inputs, targets). A step runs one
  // batch at a time: a Run while another Run of this step is in progress
  // (from another thread) is a FailedPreconditionError. Returns the loss
  // before the update. A batch of other dtypes or ranks than the examples is
  // an InvalidArgumentError naming the argument; one of other sizes is
  // taken as automatic_dynamic says.
  absl::StatusOr<double> Run(absl::Span<const Tensor> batch);

  // The model's outputs of the last run, in the structure the model
  // returns them; a FailedPreconditionError unless options.return_outputs.
  absl::StatusOr<TensorTree> outputs() const;

  const codegen::Executable& forward() const { return compiled_->forward(); }
  const codegen::Executable& backward() const { return compiled_->backward(); }
  // What runs the step: its program, bound tensors and optimizer (what a
  // plan file saves: pipeline/plan.h).
  const CompiledStep& compiled() const { return *compiled_; }
  // How many times the step was captured, differentiated, partitioned and
  // compiled: 1, one more each time a batch of new sizes made dims symbols.
  int compilations() const { return compilations_; }
  // What the last compilation made (node counts, what the forward saves),
  // and whether its program came from the compile cache.
  const StepSummary& summary() const { return summary_; }
  // The symbolic dims the step compiled with (empty: static).
  const DynamicDims& dynamic_dims() const { return dynamic_dims_; }
  // The gradients' total norm of the last run, before clipping; NaN unless
  // clip_grad_norm is set.
  double last_grad_norm() const { return compiled_->last_grad_norm(); }

 private:
  TrainStep() = default;
  // Captures, differentiates, partitions and compiles with `dynamic` dims;
  // the program comes from the compile cache (pipeline/step_cache.h) when it
  // holds it, for a step of the default partition and no data parallelism.
  absl::Status Compile(const DynamicDims& dynamic);
  // The program of the captured `pipeline`: differentiated and partitioned.
  absl::StatusOr<CachedStep> MakeProgram(CompilerPipeline& pipeline, int num_outputs,
                                         const DynamicDims& dynamic) const;

  TensorTree example_;  // (inputs, targets)
  TrainStepOptions options_;
  DynamicDims dynamic_dims_;
  std::optional<DynamicDims> failed_dims_;  // a widening that did not compile, and why
  absl::Status failure_;
  int compilations_ = 0;
  std::atomic<bool> running_{false};
  std::vector<std::string> batch_names_;  // placeholder name of each batch leaf
  std::vector<TensorType> batch_types_;   // and its type, maybe symbolic
  StepSummary summary_;

  std::shared_ptr<nn::Module> wrapper_;  // module and loss as one module
  nn::Optimizer* optimizer_ = nullptr;
  std::unique_ptr<CompiledStep> compiled_;
};

}  // namespace tc

#endif  // TENSORCUT_PIPELINE_TRAIN_STEP_H_
