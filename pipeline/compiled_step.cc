#include "pipeline/compiled_step.h"

#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/per_size.h"
#include "nn/clip_grad.h"
#include "runtime/kernels/strided.h"
#include "runtime/ops.h"

namespace tc {

absl::Status CheckClipOptions(const CompiledStepOptions& options) {
  if (options.clip_grad_value.has_value() && !(*options.clip_grad_value >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("clip_grad_value must be >= 0, got ", *options.clip_grad_value));
  }
  if (options.clip_grad_norm.has_value() && !(options.clip_norm_type > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("clip_norm_type must be > 0, got ", options.clip_norm_type));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CompiledStep>> CompiledStep::Create(
    StepProgram program, std::vector<Tensor> bound, nn::Optimizer& optimizer,
    const CompiledStepOptions& options) {
  using Kind = InputDescriptor::Kind;
  TC_RETURN_IF_ERROR(CheckClipOptions(options));
  TC_RETURN_IF_ERROR(VerifyStepProgram(program));
  const std::vector<Value*>& placeholders = program.forward.placeholders();
  if (bound.size() != placeholders.size()) {
    return absl::InvalidArgumentError(absl::StrCat("CompiledStep: ", bound.size(),
                                                   " bound tensors for ", placeholders.size(),
                                                   " forward placeholders"));
  }
  std::unique_ptr<CompiledStep> step(new CompiledStep());
  for (size_t i = 0; i < bound.size(); ++i) {
    const Kind kind = program.inputs[i].kind;
    if (kind == Kind::kUserInput) step->batch_args_.push_back(static_cast<int>(i));
    if (kind != Kind::kParameter && kind != Kind::kBuffer && kind != Kind::kConstant) {
      bound[i] = Tensor();
      continue;
    }
    if (!bound[i].defined() || bound[i].type() != placeholders[i]->type()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CompiledStep: ", program.inputs[i].name, " must be ", placeholders[i]->type().ToString(),
          ", got ", bound[i].defined() ? bound[i].type().ToString() : "an undefined tensor"));
    }
  }
  for (size_t k = 0; k < program.mutated_buffers.size(); ++k) {
    const std::string& name = program.mutated_buffers[k];
    Tensor buffer;
    for (size_t i = 0; i < bound.size(); ++i) {
      if (program.inputs[i].kind == Kind::kBuffer && program.inputs[i].name == name) {
        buffer = bound[i];
      }
    }
    if (!buffer.defined()) {
      return absl::InvalidArgumentError(absl::StrCat("CompiledStep: the forward updates buffer ",
                                                     name, ", which is not an input"));
    }
    // The update is copied into the buffer: it must fit it exactly.
    const TensorType& update =
        program.forward.outputs()[program.buffer_update_output(static_cast<int>(k))]->type();
    if (update != buffer.type()) {
      return absl::InvalidArgumentError(absl::StrCat("CompiledStep: the forward updates buffer ",
                                                     name, " (", buffer.type().ToString(),
                                                     ") with ", update.ToString()));
    }
    step->mutated_buffers_.push_back(buffer);
  }
  // Backward arguments: the saved values (set at each run), then one tangent
  // per floating forward output: 1 for the loss, 0 for buffer updates, and
  // for a model output the output itself (set at each run: its size may be
  // symbolic), which the backward does not read (VerifyStepProgram).
  const int num_forward_outputs = program.num_forward_outputs();
  step->backward_args_.assign(program.num_saved, Tensor());
  const std::vector<Value*>& fw_outputs = program.forward.outputs();
  for (int i = 0; i < num_forward_outputs; ++i) {
    const TensorType& type = fw_outputs[i]->type();
    if (!IsFloating(type.dtype)) continue;
    if (i >= 1 && i <= program.num_outputs) {
      step->output_tangents_.push_back({i, static_cast<int>(step->backward_args_.size())});
      step->backward_args_.emplace_back();
      continue;
    }
    if (HasSymbolic(type.shape)) {
      return absl::InvalidArgumentError(
          absl::StrCat("TrainStep: forward output ", i, " is ", type.ToString(),
                       "; the loss and the updated buffers must not depend on a symbolic size"));
    }
    step->backward_args_.push_back(full(type.shape, i == 0 ? 1.0 : 0.0, type.dtype));
  }
  // A symbolic program plans each size on its first run.
  const codegen::Compiler compiler =
      codegen::PerSize(options.compiler, {.capacity = options.plan_cache_size});
  TC_ASSIGN_OR_RETURN(step->forward_,
                      CompileForwardHalf(compiler, program.forward, num_forward_outputs));
  TC_ASSIGN_OR_RETURN(step->backward_,
                      CompileBackwardHalf(compiler, program.backward, step->forward_,
                                          num_forward_outputs, program.num_saved));
  if (options.backward_rewriter != nullptr) {
    step->backward_ = options.backward_rewriter->Bind(std::move(step->backward_));
  }
  for (int primal : program.gradient_of) {
    const bool is_param = program.inputs[primal].kind == Kind::kParameter;
    step->grad_params_.push_back(is_param ? bound[primal] : Tensor());
    if (is_param) step->clipped_params_.push_back(bound[primal]);
  }
  step->forward_args_ = bound;
  // The random inputs' seed and offset: i64 scalars written at each run.
  for (int at : {program.random.seed, program.random.offset}) {
    if (at >= 0) step->forward_args_[at] = full({}, 0, DType::kI64);
  }
  step->bound_ = std::move(bound);
  step->forward_outputs_.assign(step->forward_.num_outputs(), Tensor());
  step->outputs_.assign(program.num_outputs, Tensor());
  step->backward_outputs_.assign(step->backward_.num_outputs(), Tensor());
  step->program_ = std::move(program);
  step->optimizer_ = &optimizer;
  step->options_ = options;
  return step;
}

absl::Status CompiledStep::CheckBatch(absl::Span<const Tensor> batch) const {
  for (size_t i = 0; i < batch.size(); ++i) {
    const TensorType& want = program_.forward.placeholders()[batch_args_[i]]->type();
    const Tensor& t = batch[i];
    if (!t.defined() || !FitsPlaceholder(t.type(), want)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TrainStep: batch[", i, "] (", program_.batch_words[i], "): expected ", want.ToString(),
          ", got ", t.defined() ? t.type().ToString() : "an undefined tensor"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<double> CompiledStep::Run(absl::Span<const Tensor> batch) {
  if (running_.exchange(true)) {
    return absl::FailedPreconditionError(
        "step: Run while another Run of this step is in progress; a step runs one batch at a "
        "time (steps over parameters of their own, one per thread, train concurrently)");
  }
  absl::Cleanup done = [this] { running_ = false; };
  if (batch.size() != batch_args_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("TrainStep: expected ", batch_args_.size(),
                                                   " batch tensors (inputs, then targets), got ",
                                                   batch.size()));
  }
  // A symbolic count of random numbers takes its value from the batch.
  SymbolValues sizes;
  if (IsSymbolic(program_.random.numbers)) {
    std::vector<ShapeToBind> shapes;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i].defined()) return absl::InvalidArgumentError("TrainStep: an undefined tensor");
      shapes.push_back({program_.forward.placeholders()[batch_args_[i]]->type().shape,
                        batch[i].shape(), absl::StrCat("batch[", i, "]")});
    }
    TC_ASSIGN_OR_RETURN(sizes, BindSymbols(shapes));
  }
  for (size_t i = 0; i < batch.size(); ++i) forward_args_[batch_args_[i]] = batch[i];
  if (absl::Status s = program_.random.Draw(absl::MakeSpan(forward_args_), sizes); !s.ok()) {
    for (int i : batch_args_) forward_args_[i] = Tensor();
    return s;
  }
  absl::Status s = forward_.Run(forward_args_, absl::MakeSpan(forward_outputs_));
  for (int i : batch_args_) forward_args_[i] = Tensor();
  if (!s.ok()) {
    // Only a failed run pays for naming the batch tensor that does not fit.
    const absl::Status batch_error = CheckBatch(batch);
    return batch_error.ok() ? s : batch_error;
  }
  // Copied through strides: a compiler may return them in any layout.
  for (size_t i = 0; i < mutated_buffers_.size(); ++i) {
    kernels::CopyStrided(forward_outputs_[program_.buffer_update_output(static_cast<int>(i))],
                         mutated_buffers_[i]);
  }
  // Copies: the forward's own outputs live in memory its next run reuses.
  for (int k = 0; k < program_.num_outputs; ++k) outputs_[k] = forward_outputs_[1 + k].clone();
  for (const auto& [output, arg] : output_tangents_) backward_args_[arg] = forward_outputs_[output];
  const int num_forward_outputs = program_.num_forward_outputs();
  for (int i = 0; i < program_.num_saved; ++i) {
    backward_args_[i] = forward_outputs_[num_forward_outputs + i];
  }
  const Tensor& loss_value = forward_outputs_[0];
  const double loss =
      loss_value.dtype() == DType::kF64 ? *loss_value.data<double>() : *loss_value.data<float>();
  if (options_.backward_rewriter != nullptr) s = options_.backward_rewriter->Prepare(batch);
  if (s.ok()) s = backward_.Run(backward_args_, absl::MakeSpan(backward_outputs_));
  for (int i = 0; i < program_.num_saved; ++i) backward_args_[i] = Tensor();
  for (const auto& [output, arg] : output_tangents_) backward_args_[arg] = Tensor();
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
