#include "pipeline/train_step.h"

#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "nn/clip_grad.h"
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

// A batch leaf's capture path in the words of Create's arguments: the
// capture sees (inputs, targets) as one tuple, "inputs[0]..." and
// "inputs[1]...".
std::string UserWords(absl::string_view path) {
  if (absl::ConsumePrefix(&path, "inputs[0]")) return absl::StrCat("inputs", path);
  if (absl::ConsumePrefix(&path, "inputs[1]")) return absl::StrCat("targets", path);
  return std::string(path);
}

}  // namespace

TrainStep::~TrainStep() = default;

absl::Status TrainStep::CheckBatch(absl::Span<const Tensor> batch) const {
  for (size_t i = 0; i < batch.size(); ++i) {
    const TensorType& want = batch_types_[i];
    const Tensor& t = batch[i];
    bool fits = t.defined() && t.dtype() == want.dtype && t.dim() == want.rank();
    for (int64_t d = 0; fits && d < want.rank(); ++d) {
      fits = IsSymbolic(want.shape[d]) || want.shape[d] == t.size(d);
    }
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TrainStep: batch[", i, "] (", batch_words_[i], "): expected ", want.ToString(), ", got ",
          t.defined() ? t.type().ToString() : "an undefined tensor"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TrainStep>> TrainStep::Create(nn::Module& module, nn::LossFn loss,
                                                             const TensorTree& inputs,
                                                             const TensorTree& targets,
                                                             nn::Optimizer& optimizer,
                                                             const TrainStepOptions& options) {
  if (options.clip_grad_value.has_value() && !(*options.clip_grad_value >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrainStep: clip_grad_value must be >= 0, got ", *options.clip_grad_value));
  }
  if (options.clip_grad_norm.has_value() && !(options.clip_norm_type > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrainStep: clip_norm_type must be > 0, got ", options.clip_norm_type));
  }
  std::unique_ptr<TrainStep> step(new TrainStep());
  step->wrapper_ = std::make_shared<WithLoss>(module, std::move(loss));
  step->optimizer_ = &optimizer;
  step->example_ = TensorTree::Tuple({inputs, targets});
  step->options_ = options;
  TC_RETURN_IF_ERROR(step->Compile(options.dynamic_dims));
  return step;
}

absl::Status TrainStep::Compile(const DynamicDims& dynamic) {
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline,
                      CompilerPipeline::Create(
                          *wrapper_, example_,
                          {.dynamic_dims = dynamic, .plan_cache_size = options_.plan_cache_size}));
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
  TC_RETURN_IF_ERROR(pipeline.generate_ir_for_training(
      {.decompositions = options_.decompositions, .precision = options_.precision}));
  TC_ASSIGN_OR_RETURN(const JointGraph* joint, pipeline.joint_graph());
  const partition::PartitionFn partition_fn =
      options_.partition_fn ? options_.partition_fn
                            : partition::PartitionFn(partition::MinCutPartition);
  TC_ASSIGN_OR_RETURN(partition::PartitionResult part, pipeline.partition(partition_fn, *joint));
  BackwardRewriter* rewriter = options_.backward_rewriter.get();
  if (rewriter != nullptr) TC_RETURN_IF_ERROR(rewriter->Rewrite(*joint, part));
  TC_ASSIGN_OR_RETURN(CompiledForward fw, pipeline.fw_compile(options_.compiler, part));
  TC_ASSIGN_OR_RETURN(CompiledBackward bw, pipeline.bw_compile(options_.compiler, part, fw));
  if (rewriter != nullptr) bw.run = rewriter->Bind(std::move(bw.run));
  // Backward arguments: the saved values (set at each run), then one tangent
  // per floating forward output: 1 for the loss, 0 for buffer updates.
  const JointLayout& layout = joint->layout;
  std::vector<Tensor> tangents;
  const std::vector<Value*>& fw_outputs = part.forward.outputs();
  for (int i = 0; i < layout.num_forward_outputs; ++i) {
    const TensorType& type = fw_outputs[i]->type();
    if (!IsFloating(type.dtype)) continue;
    if (HasSymbolic(type.shape)) {
      return absl::InvalidArgumentError(
          absl::StrCat("TrainStep: forward output ", i, " is ", type.ToString(),
                       "; the loss and the updated buffers must not depend on a symbolic size"));
    }
    tangents.push_back(full(type.shape, i == 0 ? 1.0 : 0.0, type.dtype));
  }

  // Forward arguments: parameters, buffers and constants stay bound; the
  // batch's leaves are set at each run.
  TC_ASSIGN_OR_RETURN(
      forward_args_,
      GraphArguments(captured, example_, wrapper_->named_parameters(), wrapper_->named_buffers()));
  batch_args_.clear();
  batch_names_.clear();
  batch_types_.clear();
  batch_words_.clear();
  for (int i = 0; i < static_cast<int>(captured.inputs.size()); ++i) {
    if (captured.inputs[i].kind == InputDescriptor::Kind::kUserInput) {
      batch_args_.push_back(i);
      batch_names_.push_back(captured.graph.placeholders()[i]->name());
      batch_types_.push_back(captured.graph.placeholders()[i]->type());
      batch_words_.push_back(UserWords(captured.inputs[i].name));
    }
  }
  forward_ = std::move(fw.run);
  backward_ = std::move(bw.run);
  random_ = captured.random;
  mutated_buffers_ = pipeline.mutated_buffer_tensors();
  num_forward_outputs_ = layout.num_forward_outputs;
  grad_params_.clear();
  clipped_params_.clear();
  for (int primal : layout.grad_primal_indices) {
    const bool is_param = captured.inputs[primal].kind == InputDescriptor::Kind::kParameter;
    grad_params_.push_back(is_param ? forward_args_[primal] : Tensor());
    if (is_param) clipped_params_.push_back(forward_args_[primal]);
  }
  backward_args_.assign(part.num_fw_outs_saved_for_bw, Tensor());
  backward_args_.insert(backward_args_.end(), tangents.begin(), tangents.end());
  forward_outputs_.assign(forward_.num_outputs(), Tensor());
  backward_outputs_.assign(backward_.num_outputs(), Tensor());
  dynamic_dims_ = dynamic;
  ++compilations_;
  return absl::OkStatus();
}

absl::StatusOr<double> TrainStep::Run(absl::Span<const Tensor> batch) {
  if (running_.exchange(true)) {
    return absl::FailedPreconditionError(
        "TrainStep: Run while another Run of this step is in progress; a step runs one batch at "
        "a time (one TrainStep per thread, each with its own module, trains concurrently)");
  }
  absl::Cleanup done = [this] { running_ = false; };
  if (batch.size() != batch_args_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("TrainStep: expected ", batch_args_.size(),
                                                   " batch tensors (inputs, then targets), got ",
                                                   batch.size()));
  }
  // A widening that failed is not tried again: the forward's own error
  // then says what did not fit, and the failure why.
  absl::Status widening = absl::OkStatus();
  if (options_.automatic_dynamic) {
    std::optional<DynamicDims> dims =
        WidenedDynamicDims(dynamic_dims_, batch_names_, batch_types_, batch);
    if (dims && dims != failed_dims_) {
      if (absl::Status s = Compile(*dims); !s.ok()) {
        failed_dims_ = dims;
        failure_ = s;
      }
    }
    if (dims && dims == failed_dims_) widening = failure_;
  }
  // A symbolic count of random numbers takes its value from the batch.
  SymbolValues sizes;
  if (IsSymbolic(random_.numbers)) {
    std::vector<ShapeToBind> shapes;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i].defined()) return absl::InvalidArgumentError("TrainStep: an undefined tensor");
      shapes.push_back({batch_types_[i].shape, batch[i].shape(), absl::StrCat("batch[", i, "]")});
    }
    TC_ASSIGN_OR_RETURN(sizes, BindSymbols(shapes));
  }
  for (size_t i = 0; i < batch.size(); ++i) forward_args_[batch_args_[i]] = batch[i];
  if (absl::Status s = random_.Draw(absl::MakeSpan(forward_args_), sizes); !s.ok()) {
    for (int i : batch_args_) forward_args_[i] = Tensor();
    return s;
  }
  absl::Status s = forward_.Run(forward_args_, absl::MakeSpan(forward_outputs_));
  for (int i : batch_args_) forward_args_[i] = Tensor();
  if (!s.ok()) {
    // Only a failed run pays for naming the batch tensor that does not fit.
    const absl::Status batch_error = CheckBatch(batch);
    return WithWideningFailure(batch_error.ok() ? s : batch_error, widening);
  }
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
  if (options_.backward_rewriter != nullptr) s = options_.backward_rewriter->Prepare(batch);
  if (s.ok()) s = backward_.Run(backward_args_, absl::MakeSpan(backward_outputs_));
  for (int i = 0; i < num_saved; ++i) backward_args_[i] = Tensor();
  if (!s.ok()) return s;
  param_grads_.clear();
  for (size_t k = 0; k < grad_params_.size(); ++k) {
    if (!grad_params_[k].defined()) continue;
    grad_params_[k].set_grad(backward_outputs_[k]);
    param_grads_.push_back(backward_outputs_[k]);
  }
  if (options_.reduce_gradients) s = options_.reduce_gradients(param_grads_, batch);
  param_grads_.clear();
  if (!s.ok()) {  // no update: the step failed
    optimizer_->zero_grad();
    for (Tensor& g : backward_outputs_) g = Tensor();
    return s;
  }
  if (options_.clip_grad_value.has_value()) {
    nn::clip_grad_value_(clipped_params_, *options_.clip_grad_value);
  }
  if (options_.clip_grad_norm.has_value()) {
    last_grad_norm_ =
        nn::clip_grad_norm_(clipped_params_, *options_.clip_grad_norm, options_.clip_norm_type);
  }
  optimizer_->step();
  optimizer_->zero_grad();
  // Gradients may be views of saved forward outputs: let go of them, or the
  // forward would find its buffers held and allocate new ones.
  for (Tensor& g : backward_outputs_) g = Tensor();
  return loss;
}

}  // namespace tc
