// CompiledStep: a training step's program (pipeline/step_program.h)
// compiled for this CPU and bound to the tensors it trains and the optimizer
// that updates them. It is what runs a TrainStep (pipeline/train_step.h),
// and what a plan file loads into (pipeline/plan.h): it needs no module and
// links neither CompilerPipeline nor the joint-graph builder nor a
// partitioner.
//
// A run binds the batch, draws the random inputs, runs the forward, copies
// the updated buffers back, runs the backward, hands the gradients to the
// parameters (and to reduce_gradients), clips them, and steps the optimizer.
// After the first run of a size it allocates no tensor memory.
#ifndef TENSORCUT_PIPELINE_COMPILED_STEP_H_
#define TENSORCUT_PIPELINE_COMPILED_STEP_H_

#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codegen/executable.h"
#include "codegen/fusing_compiler.h"
#include "nn/optim.h"
#include "pipeline/step_program.h"

namespace tc {

struct JointGraph;  // autodiff/joint_graph.h
namespace partition {
struct PartitionResult;  // partition/partition.h
}  // namespace partition

// Changes a step's backward: what makes a step data-parallel with the
// gradients summed inside its backward (distributed BackwardAllReduce).
class BackwardRewriter {
 public:
  virtual ~BackwardRewriter() = default;
  // Rewrites a partitioned backward before it is compiled (TrainStep asks
  // it at each of its compilations; a compiled step links no partitioner).
  virtual absl::Status Rewrite(const JointGraph& joint, partition::PartitionResult& part) = 0;
  // The backward compiled from the rewritten partition, made to take the
  // arguments it took before the rewrite (what the rewrite added, bound).
  virtual codegen::Executable Bind(codegen::Executable backward) const = 0;
  // Before each run's backward, with the run's batch.
  virtual absl::Status Prepare(absl::Span<const Tensor> batch) = 0;
};

struct CompiledStepOptions {
  codegen::Compiler compiler = codegen::fusing();  // for both halves
  int plan_cache_size = 8;  // per-size plans kept by each half of a symbolic program
  // Gradient clipping before each update, over the gradients the backward
  // wrote, as nn::clip_grad_value_ and then nn::clip_grad_norm_ (nn/clip_grad.h)
  // would clip them: unset, no clipping.
  std::optional<double> clip_grad_value;
  std::optional<double> clip_grad_norm;  // max_norm
  double clip_norm_type = 2.0;
  // Called after each backward with the parameters' gradients, in the order
  // the backward writes them, and the run's batch, before clipping and the
  // update; it may change the gradients in place (dist/data_parallel.h's
  // average over a data-parallel job's processes).
  std::function<absl::Status(absl::Span<const Tensor> gradients, absl::Span<const Tensor> batch)>
      reduce_gradients;
  // The rewriter whose Rewrite made the program's backward (dist/
  // data_parallel.h's BackwardAllReduce sums the gradients in it, instead of
  // reduce_gradients after it); null: none.
  std::shared_ptr<BackwardRewriter> backward_rewriter;
};

// The clipping options' own check: "clip_grad_value must be >= 0, got -1".
absl::Status CheckClipOptions(const CompiledStepOptions& options);

class CompiledStep {
 public:
  // Compiles `program` (VerifyStepProgram first) and binds `bound`: one
  // tensor per forward placeholder for the parameters, buffers and
  // constants, of the placeholders' types; the batch's and random inputs'
  // entries are ignored. `optimizer` must update the parameter tensors
  // bound here and outlive the step.
  static absl::StatusOr<std::unique_ptr<CompiledStep>> Create(StepProgram program,
                                                              std::vector<Tensor> bound,
                                                              nn::Optimizer& optimizer,
                                                              const CompiledStepOptions& options);

  // One step on `batch`, the batch leaves in placeholder order: returns the
  // loss before the update. A batch that does not fit is an
  // InvalidArgumentError naming the leaf ("batch[1] (targets): expected
  // i64[128], got f32[128]"). Runs one batch at a time: a Run while another
  // is in progress is a FailedPreconditionError.
  absl::StatusOr<double> Run(absl::Span<const Tensor> batch);
  // The model's outputs of the last run (program().num_outputs of them;
  // copies, the caller's to keep).
  const std::vector<Tensor>& outputs() const { return outputs_; }

  const StepProgram& program() const { return program_; }
  // Per forward placeholder, the tensor bound to it (undefined for the
  // batch and random inputs).
  const std::vector<Tensor>& bound() const { return bound_; }
  nn::Optimizer& optimizer() const { return *optimizer_; }
  const codegen::Executable& forward() const { return forward_; }
  const codegen::Executable& backward() const { return backward_; }
  const CompiledStepOptions& options() const { return options_; }
  // The gradients' total norm of the last run, before clipping; NaN unless
  // clip_grad_norm is set.
  double last_grad_norm() const { return last_grad_norm_; }

 private:
  CompiledStep() = default;
  absl::Status CheckBatch(absl::Span<const Tensor> batch) const;

  StepProgram program_;
  CompiledStepOptions options_;
  nn::Optimizer* optimizer_ = nullptr;
  codegen::Executable forward_, backward_;
  std::vector<Tensor> bound_;
  std::atomic<bool> running_{false};
  std::vector<int> batch_args_;          // forward placeholder of each batch leaf
  std::vector<Tensor> mutated_buffers_;  // the bound buffers the forward updates
  std::vector<Tensor> grad_params_;      // the parameter of each gradient, or undefined
  std::vector<Tensor> clipped_params_;   // the defined ones, which clipping reads
  std::vector<Tensor> param_grads_;      // their gradients, for reduce_gradients
  double last_grad_norm_ = std::numeric_limits<double>::quiet_NaN();
  std::vector<Tensor> forward_args_, forward_outputs_;
  std::vector<Tensor> outputs_;
  // Per floating model output: its forward output and its (unread) tangent's
  // backward argument.
  std::vector<std::pair<int, int>> output_tangents_;
  std::vector<Tensor> backward_args_, backward_outputs_;
};

}  // namespace tc

#endif  // TENSORCUT_PIPELINE_COMPILED_STEP_H_
