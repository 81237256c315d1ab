#include "pipeline/train_step.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "partition/min_cut.h"
#include "pipeline/compiler_pipeline.h"
#include "runtime/kernels/strided.h"
#include "runtime/ops.h"

namespace tc {
namespace {

// The model and its loss as one module: (inputs, targets) in, the loss out.
class WithLoss : public nn::Module {
 public:
  WithLoss(nn::Module& model, nn::LossFn loss)
      // Not owned: the caller keeps the model alive (see TrainStep::Create).
      : model_(register_module("model",
                               std::shared_ptr<nn::Module>(std::shared_ptr<nn::Module>(), &model))),
        loss_(std::move(loss)) {}

  TensorTree forward(const TensorTree& input) override {
    return TensorTree::MakeLeaf(loss_((*model_)(input[0]), input[1]));
  }

 private:
  std::shared_ptr<nn::Module> model_;
  nn::LossFn loss_;
};

}  // namespace

TrainStep::~TrainStep() = default;

absl::StatusOr<std::unique_ptr<TrainStep>> TrainStep::Create(nn::Module& module, nn::LossFn loss,
                                                             const TensorTree& inputs,
                                                             const TensorTree& targets,
                                                             nn::Optimizer& optimizer,
                                                             const TrainStepOptions& options) {
  std::unique_ptr<TrainStep> step(new TrainStep());
  step->wrapper_ = std::make_shared<WithLoss>(module, std::move(loss));
  step->optimizer_ = &optimizer;
  const TensorTree example = TensorTree::Tuple({inputs, targets});
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline,
                      CompilerPipeline::Create(*step->wrapper_, example));
  const TracedProgram& captured = pipeline.captured();
  if (captured.graph.outputs().size() != 1 + pipeline.mutated_buffers().size() ||
      captured.graph.outputs()[0]->type().shape.size() != 0) {
    return absl::InvalidArgumentError("TrainStep: the loss must be one scalar tensor");
  }
  const DType loss_dtype = captured.graph.outputs()[0]->type().dtype;
  if (loss_dtype != DType::kF32 && loss_dtype != DType::kF64) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrainStep: the loss must be f32 or f64, got ", DTypeName(loss_dtype)));
  }
  TC_RETURN_IF_ERROR(pipeline.generate_ir_for_training({.decompositions = options.decompositions}));
  TC_ASSIGN_OR_RETURN(const JointGraph* joint, pipeline.joint_graph());
  const partition::PartitionFn partition_fn =
      options.partition_fn ? options.partition_fn
                           : partition::PartitionFn(partition::MinCutPartition);
  TC_ASSIGN_OR_RETURN(partition::PartitionResult part, pipeline.partition(partition_fn, *joint));
  TC_ASSIGN_OR_RETURN(CompiledForward fw, pipeline.fw_compile(options.compiler, part));
  TC_ASSIGN_OR_RETURN(CompiledBackward bw, pipeline.bw_compile(options.compiler, part, fw));
  step->forward_ = std::move(fw.run);
  step->backward_ = std::move(bw.run);
  const int num_forward_outputs = joint->layout.num_forward_outputs;

  // Forward arguments: parameters, buffers and constants stay bound; the
  // batch's leaves are set at each run.
  TC_ASSIGN_OR_RETURN(step->forward_args_,
                      GraphArguments(captured, example, step->wrapper_->named_parameters(),
                                     step->wrapper_->named_buffers()));
  for (int i = 0; i < static_cast<int>(captured.inputs.size()); ++i) {
    if (captured.inputs[i].kind == InputDescriptor::Kind::kUserInput) {
      step->batch_args_.push_back(i);
    }
  }
  step->random_ = captured.random;
  step->mutated_buffers_ = pipeline.mutated_buffer_tensors();
  const JointLayout& layout = joint->layout;
  step->num_forward_outputs_ = num_forward_outputs;
  for (int primal : layout.grad_primal_indices) {
    const bool is_param = captured.inputs[primal].kind == InputDescriptor::Kind::kParameter;
    step->grad_params_.push_back(is_param ? step->forward_args_[primal] : Tensor());
  }
  // Backward arguments: the saved values (set at each run), then one tangent
  // per floating forward output: 1 for the loss, 0 for buffer updates.
  step->backward_args_.resize(part.num_fw_outs_saved_for_bw);
  const std::vector<Value*>& fw_outputs = part.forward.outputs();
  for (int i = 0; i < layout.num_forward_outputs; ++i) {
    const TensorType& type = fw_outputs[i]->type();
    if (IsFloating(type.dtype))
      step->backward_args_.push_back(full(type.shape, i == 0 ? 1.0 : 0.0, type.dtype));
  }
  step->forward_outputs_.resize(step->forward_.num_outputs());
  step->backward_outputs_.resize(step->backward_.num_outputs());
  return step;
}

absl::StatusOr<double> TrainStep::Run(absl::Span<const Tensor> batch) {
  if (batch.size() != batch_args_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("TrainStep: expected ", batch_args_.size(),
                                                   " batch tensors (inputs, then targets), got ",
                                                   batch.size()));
  }
  for (size_t i = 0; i < batch.size(); ++i) forward_args_[batch_args_[i]] = batch[i];
  random_.Draw(absl::MakeSpan(forward_args_));
  absl::Status s = forward_.Run(forward_args_, absl::MakeSpan(forward_outputs_));
  for (int i : batch_args_) forward_args_[i] = Tensor();
  if (!s.ok()) return s;
  // Copied through strides: a compiler may return them in any layout.
  for (size_t i = 0; i < mutated_buffers_.size(); ++i) {
    kernels::CopyStrided(forward_outputs_[1 + i], mutated_buffers_[i]);
  }
  const int num_saved = static_cast<int>(forward_outputs_.size()) - num_forward_outputs_;
  for (int i = 0; i < num_saved; ++i) {
    backward_args_[i] = forward_outputs_[num_forward_outputs_ + i];
  }
  const Tensor& loss_value = forward_outputs_[0];
  const double loss =
      loss_value.dtype() == DType::kF64 ? *loss_value.data<double>() : *loss_value.data<float>();
  s = backward_.Run(backward_args_, absl::MakeSpan(backward_outputs_));
  for (int i = 0; i < num_saved; ++i) backward_args_[i] = Tensor();
  if (!s.ok()) return s;
  for (size_t k = 0; k < grad_params_.size(); ++k) {
    if (grad_params_[k].defined()) grad_params_[k].set_grad(backward_outputs_[k]);
  }
  optimizer_->step();
  optimizer_->zero_grad();
  // Gradients may be views of saved forward outputs: let go of them, or the
  // forward would find its buffers held and allocate new ones.
  for (Tensor& g : backward_outputs_) g = Tensor();
  return loss;
}

}  // namespace tc
