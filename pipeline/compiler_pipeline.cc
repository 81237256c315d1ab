#include "pipeline/compiler_pipeline.h"

#include <mutex>
#include <shared_mutex>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/per_size.h"
#include "graph/pass.h"
#include "graph/passes/fuse_attention.h"
#include "pipeline/step_program.h"

namespace tc {
namespace {

absl::Status MustCallFirst(absl::string_view stage, absl::string_view first) {
  return absl::FailedPreconditionError(absl::StrCat(stage, ": call ", first, " first"));
}

// Forward outputs past the user outputs are buffer updates.
void LabelMutatedBuffers(const CompiledModel& model, std::vector<JointDescriptor>& outputs) {
  for (size_t i = 0; i < model.mutated_buffers.size(); ++i) {
    outputs[model.num_user_outputs + i] = {JointDescriptor::Kind::kMutatedBuffer,
                                           model.mutated_buffers[i]};
  }
}

}  // namespace

absl::StatusOr<CompilerPipeline> CompilerPipeline::Create(nn::Module& model,
                                                          const TensorTree& example_inputs,
                                                          const CaptureOptions& options) {
  TC_ASSIGN_OR_RETURN(nn::TracedModule traced,
                      nn::TraceModule(model, example_inputs, options.dynamic_dims));
  auto compiled = std::make_shared<CompiledModel>();
  compiled->module = &model;
  compiled->mutated_buffers = traced.mutated_buffers;
  compiled->num_user_outputs =
      static_cast<int>(traced.program.graph.outputs().size() - traced.mutated_buffers.size());
  compiled->program = std::move(traced.program);
  compiled->parameters = model.named_parameters();
  compiled->buffers = model.named_buffers();
  for (const std::string& name : compiled->mutated_buffers) {
    for (const auto& [fqn, buffer] : compiled->buffers) {
      if (fqn == name) compiled->mutated_buffer_tensors.push_back(buffer);
    }
  }
  CompilerPipeline pipeline(std::move(compiled), options.plan_cache_size);
  // The user inputs' requires_grad, by placeholder (the tree flattens in
  // placeholder order).
  const std::vector<Tensor> leaves = Flatten(example_inputs).first;
  size_t next = 0;
  for (const InputDescriptor& in : pipeline.model_->program.inputs) {
    const bool user = in.kind == InputDescriptor::Kind::kUserInput;
    pipeline.example_requires_grad_.push_back(user && leaves[next].requires_grad());
    if (user) ++next;
  }
  return pipeline;
}

absl::StatusOr<TracedProgram> CompilerPipeline::PreparedForward(const IrOptions& options) const {
  const TracedProgram& captured = model_->program;
  TracedProgram program{captured.graph.Clone(), captured.inputs,   captured.constants,
                        captured.in_spec,       captured.out_spec, captured.random};
  // Attention written out becomes one sdpa node before any decomposition
  // takes its softmax apart. Under bf16 it is written out again, before
  // autodiff, so that its products run bf16 (sdpa's kernels run f32 only)
  // and its backward is the softmax's, which reuses the saved probabilities.
  TC_RETURN_IF_ERROR(RunPasses(program.graph, {FuseAttention()}).status());
  if (codegen::RunsInBf16(options.precision)) {
    TC_RETURN_IF_ERROR(RunPasses(program.graph, {Decompose(AttentionDecompositions())}).status());
  }
  if (options.decompositions != nullptr) {
    TC_RETURN_IF_ERROR(RunPasses(program.graph, {Decompose(*options.decompositions)}).status());
  }
  return program;
}

absl::Status CompilerPipeline::generate_ir_for_training(const IrOptions& options) {
  TC_ASSIGN_OR_RETURN(TracedProgram forward, PreparedForward(options));
  // Which flattened user inputs want gradients: those that require grad in
  // the example inputs, or every floating one when asked.
  JointOptions joint_options;
  const Graph& graph = model_->program.graph;
  for (size_t i = 0; i < model_->program.inputs.size(); ++i) {
    if (model_->program.inputs[i].kind != InputDescriptor::Kind::kUserInput) continue;
    const bool floating = IsFloating(graph.placeholders()[i]->type().dtype);
    joint_options.user_inputs_require_grad.push_back(
        floating && (options.grad_for_all_inputs || example_requires_grad_[i]));
  }
  joint_options.num_buffer_update_outputs = static_cast<int>(model_->mutated_buffers.size());
  TC_ASSIGN_OR_RETURN(JointGraph joint, BuildJointGraph(forward, joint_options));
  if (codegen::RunsInBf16(options.precision)) {
    TC_RETURN_IF_ERROR(RunPasses(joint.graph, {codegen::AutocastBf16()}).status());
  }
  LabelMutatedBuffers(*model_, joint.outputs);
  joint_ = std::make_shared<JointGraph>(std::move(joint));
  return absl::OkStatus();
}

absl::Status CompilerPipeline::generate_ir_for_inference(const IrOptions& options) {
  TC_ASSIGN_OR_RETURN(TracedProgram forward, PreparedForward(options));
  auto inference = std::make_shared<InferenceGraph>();
  for (const InputDescriptor& in : forward.inputs) {
    inference->inputs.push_back(DescribeInput(in));
  }
  for (size_t i = 0; i < forward.graph.outputs().size(); ++i) {
    inference->outputs.push_back({JointDescriptor::Kind::kUserOutput, "", static_cast<int>(i)});
  }
  LabelMutatedBuffers(*model_, inference->outputs);
  inference->graph = std::move(forward.graph);
  inference_ = std::move(inference);
  return absl::OkStatus();
}

absl::StatusOr<const JointGraph*> CompilerPipeline::joint_graph() const {
  if (joint_ == nullptr) return MustCallFirst("joint_graph", "generate_ir_for_training");
  return joint_.get();
}

absl::StatusOr<const InferenceGraph*> CompilerPipeline::inference_graph() const {
  if (inference_ == nullptr) return MustCallFirst("inference_graph", "generate_ir_for_inference");
  return inference_.get();
}

absl::StatusOr<partition::PartitionResult> CompilerPipeline::partition(
    const partition::PartitionFn& partition_fn, const JointGraph& joint) const {
  if (joint_ == nullptr) return MustCallFirst("partition", "generate_ir_for_training");
  return partition_fn(joint.graph, joint.layout);
}

codegen::Compiler CompilerPipeline::PerSize(const codegen::Compiler& compiler) const {
  return codegen::PerSize(compiler, {.capacity = plan_cache_size_});
}

absl::StatusOr<CompiledForward> CompilerPipeline::fw_compile(
    const codegen::Compiler& compiler, const partition::PartitionResult& partition) const {
  if (joint_ == nullptr) return MustCallFirst("fw_compile", "generate_ir_for_training");
  TC_ASSIGN_OR_RETURN(
      codegen::Executable run,
      CompileForwardHalf(PerSize(compiler), partition.forward, joint_->layout.num_forward_outputs));
  return CompiledForward{std::move(run)};
}

absl::StatusOr<CompiledBackward> CompilerPipeline::bw_compile(
    const codegen::Compiler& compiler, const partition::PartitionResult& partition,
    const CompiledForward& forward) const {
  if (joint_ == nullptr) return MustCallFirst("bw_compile", "generate_ir_for_training");
  if (!forward.run) return MustCallFirst("bw_compile", "fw_compile");
  TC_ASSIGN_OR_RETURN(
      codegen::Executable run,
      CompileBackwardHalf(PerSize(compiler), partition.backward, forward.run,
                          joint_->layout.num_forward_outputs, partition.num_fw_outs_saved_for_bw));
  return CompiledBackward{std::move(run)};
}

std::vector<Tensor> CompilerPipeline::inference_constants() const {
  using Kind = InputDescriptor::Kind;
  const auto named = [](const nn::NamedTensors& list, const std::string& name) {
    for (const auto& [n, t] : list) {
      if (n == name) return t;
    }
    return Tensor();
  };
  std::vector<Tensor> constants;
  for (const InputDescriptor& d : model_->program.inputs) {
    const bool updated = absl::c_linear_search(model_->mutated_buffers, d.name);
    constants.push_back(d.kind == Kind::kParameter            ? named(model_->parameters, d.name)
                        : d.kind == Kind::kBuffer && !updated ? named(model_->buffers, d.name)
                        : d.kind == Kind::kConstant ? model_->program.constants[d.constant_index]
                                                    : Tensor());
  }
  return constants;
}

absl::StatusOr<codegen::Executable> CompilerPipeline::inference_compile(
    const codegen::Compiler& compiler, const Graph& graph) const {
  if (inference_ == nullptr) return MustCallFirst("inference_compile", "generate_ir_for_inference");
  return PerSize(compiler)(graph);
}

absl::StatusOr<Function> CompilerPipeline::make_autograd_function(
    const CompiledForward& forward, const CompiledBackward& backward,
    const partition::PartitionResult& partition) {
  if (joint_ == nullptr) {
    return MustCallFirst("make_autograd_function", "generate_ir_for_training");
  }
  if (!forward.run) return MustCallFirst("make_autograd_function", "fw_compile");
  if (!backward.run) return MustCallFirst("make_autograd_function", "bw_compile");
  if (partition.num_fw_outs_saved_for_bw != static_cast<int>(partition.saved.size())) {
    return absl::InvalidArgumentError(absl::StrCat("make_autograd_function: the partition saves ",
                                                   partition.saved.size(), " values but says ",
                                                   partition.num_fw_outs_saved_for_bw));
  }
  return MakeAutogradFunction(model_, forward.run, backward.run, joint_->layout);
}

absl::StatusOr<Function> CompilerPipeline::compile_training(
    const codegen::Compiler& compiler, const partition::PartitionResult& partition) {
  TC_ASSIGN_OR_RETURN(CompiledForward fw, fw_compile(compiler, partition));
  TC_ASSIGN_OR_RETURN(CompiledBackward bw, bw_compile(compiler, partition, fw));
  return make_autograd_function(fw, bw, partition);
}

absl::StatusOr<Function> CompilerPipeline::make_inference_function(
    const codegen::Executable& forward) {
  if (inference_ == nullptr) {
    return MustCallFirst("make_inference_function", "generate_ir_for_inference");
  }
  if (!forward) return MustCallFirst("make_inference_function", "inference_compile");
  return MakeInferenceFunction(model_, forward);
}

namespace {

// A compiled function and the placeholders of its user inputs.
struct Compiled {
  Function fn;
  std::vector<std::string> names;
  std::vector<TensorType> types;
};

absl::StatusOr<Function> CompileStages(CompilerPipeline& pipeline, const CompileOptions& options) {
  const IrOptions ir{.decompositions = options.decompositions, .precision = options.precision};
  if (!options.training) {
    TC_RETURN_IF_ERROR(pipeline.generate_ir_for_inference(ir));
    // Casts first, so that a frozen weight's bf16 cast is made once.
    const codegen::Compiler compiler = codegen::WithPrecision(
        options.freeze ? codegen::Frozen(options.compiler, pipeline.inference_constants())
                       : options.compiler,
        options.precision);
    TC_ASSIGN_OR_RETURN(codegen::Executable fw,
                        pipeline.inference_compile(compiler, (*pipeline.inference_graph())->graph));
    return pipeline.make_inference_function(fw);
  }
  if (options.freeze) {
    return absl::InvalidArgumentError(
        "compile: freeze is for inference (training = false): a training step changes the "
        "weights it would freeze");
  }
  TC_RETURN_IF_ERROR(pipeline.generate_ir_for_training(ir));
  TC_ASSIGN_OR_RETURN(partition::PartitionResult part,
                      pipeline.partition(options.partition_fn, **pipeline.joint_graph()));
  return pipeline.compile_training(options.compiler, part);
}

absl::StatusOr<Compiled> CompileFor(nn::Module& model, const TensorTree& example_inputs,
                                    const CompileOptions& options, const DynamicDims& dynamic) {
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline,
                      CompilerPipeline::Create(
                          model, example_inputs,
                          {.dynamic_dims = dynamic, .plan_cache_size = options.plan_cache_size}));
  Compiled compiled;
  const TracedProgram& captured = pipeline.captured();
  for (size_t i = 0; i < captured.inputs.size(); ++i) {
    if (captured.inputs[i].kind != InputDescriptor::Kind::kUserInput) continue;
    compiled.names.push_back(captured.graph.placeholders()[i]->name());
    compiled.types.push_back(captured.graph.placeholders()[i]->type());
  }
  TC_ASSIGN_OR_RETURN(compiled.fn, CompileStages(pipeline, options));
  if (options.stats != nullptr) ++options.stats->compilations;
  return compiled;
}

}  // namespace

std::optional<DynamicDims> WidenedDynamicDims(const DynamicDims& dynamic,
                                              absl::Span<const std::string> names,
                                              absl::Span<const TensorType> types,
                                              absl::Span<const Tensor> leaves) {
  // Called on every step: nothing is allocated unless a size differs.
  std::optional<DynamicDims> dims;
  for (size_t i = 0; i < leaves.size() && i < types.size(); ++i) {
    const TensorType& want = types[i];
    const Tensor& t = leaves[i];
    if (!t.defined() || t.dtype() != want.dtype || t.dim() != want.rank()) continue;
    for (int64_t d = 0; d < want.rank(); ++d) {
      if (IsSymbolic(want.shape[d]) || t.size(d) == want.shape[d]) continue;
      if (!dims) dims = dynamic;
      (*dims)[names[i]].push_back(d);
    }
  }
  return dims;
}

absl::StatusOr<Function> compile(nn::Module& model, const TensorTree& example_inputs,
                                 const CompileOptions& options) {
  TC_ASSIGN_OR_RETURN(Compiled first,
                      CompileFor(model, example_inputs, options, options.dynamic_dims));
  if (!options.automatic_dynamic) return std::move(first.fn);
  // The function in use, replaced by one over symbols when a call's sizes
  // differ. Calls run under the reader lock, so several run at once; a
  // recompilation takes the writer lock, as capture swaps the module's
  // buffers for a moment. A widening that failed is not tried again.
  struct State {
    // Guards the rest; std::shared_mutex, which ThreadSanitizer sees (it
    // does not see Debian's uninstrumented Abseil locks).
    std::shared_mutex mu;
    std::shared_ptr<const Compiled> compiled;
    DynamicDims dims;
    std::optional<DynamicDims> failed_dims;
    absl::Status failure;
  };
  auto state = std::make_shared<State>();
  state->compiled = std::make_shared<const Compiled>(std::move(first));
  state->dims = options.dynamic_dims;
  return [state, &model, example_inputs,
          options](const TensorTree& inputs) -> absl::StatusOr<TensorTree> {
    std::vector<Tensor> leaves;  // flattened only when a call fails
    while (true) {
      {
        // A call whose sizes differ fails in its argument check, before any
        // side effect: only then are its sizes looked at.
        std::shared_lock<std::shared_mutex> lock(state->mu);
        const Compiled& compiled = *state->compiled;
        absl::StatusOr<TensorTree> out = compiled.fn(inputs);
        if (out.ok()) return out;
        if (leaves.empty()) leaves = Flatten(inputs).first;
        const std::optional<DynamicDims> widened =
            WidenedDynamicDims(state->dims, compiled.names, compiled.types, leaves);
        if (!widened) return out;
        if (widened == state->failed_dims) return WithWideningFailure(out, state->failure);
      }
      // Decided again under the writer lock: another call may have widened.
      std::unique_lock<std::shared_mutex> lock(state->mu);
      const Compiled& compiled = *state->compiled;
      std::optional<DynamicDims> widened =
          WidenedDynamicDims(state->dims, compiled.names, compiled.types, leaves);
      if (!widened || widened == state->failed_dims) continue;
      absl::StatusOr<Compiled> recompiled = CompileFor(model, example_inputs, options, *widened);
      if (recompiled.ok()) {
        state->compiled = std::make_shared<const Compiled>(*std::move(recompiled));
        state->dims = *std::move(widened);
      } else {
        state->failed_dims = std::move(widened);
        state->failure = recompiled.status();
      }
    }
  };
}

absl::Status WithWideningFailure(absl::Status call, const absl::Status& failure) {
  if (call.ok() || failure.ok()) return call;
  return absl::Status(call.code(), absl::StrCat(call.message(),
                                                "; compiled for any size of the dims that "
                                                "differ, it fails: ",
                                                failure.message()));
}

}  // namespace tc
