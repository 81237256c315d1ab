// CompilerPipeline: every stage from an nn::Module to a compiled training or
// inference function, each a separate public call whose result can be
// printed, inspected, transformed and handed to the next (the C++ counterpart
// of PyTorch's staged CompilerPipeline).
//
//   auto pipeline = CompilerPipeline::Create(model, inputs).value();   // capture
//   pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()});
//   auto part = pipeline.partition(partition::DefaultPartition, *pipeline.joint_graph());
//   auto fw = pipeline.fw_compile(codegen::interpreter(), *part);
//   auto bw = pipeline.bw_compile(codegen::interpreter(), *part, *fw);
//   Function model_fn = pipeline.make_autograd_function(*fw, *bw, *part).value();
//   TensorTree out = model_fn(inputs).value();   // same structure as model(inputs)
//   sum(out.leaf()).backward();                   // grads land on model's parameters
//
// A stage called before the one it needs returns FailedPrecondition naming
// the stage to call first.
#ifndef TENSORCUT_PIPELINE_COMPILER_PIPELINE_H_
#define TENSORCUT_PIPELINE_COMPILER_PIPELINE_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "autodiff/joint_graph.h"
#include "codegen/autocast.h"
#include "codegen/freeze.h"
#include "codegen/fusing_compiler.h"
#include "codegen/interpreter.h"
#include "graph/decompositions.h"
#include "partition/partition.h"
#include "pipeline/compiled_function.h"

namespace tc {

// How a capture treats sizes. Marked dims are symbols in every graph of the
// pipeline (`f32[s0,784]`): autodiff and the partition run once for all
// sizes, and each compile stage gives an executable that plans each size on
// its first call (codegen/per_size.h), keeping `plan_cache_size` plans.
struct CaptureOptions {
  DynamicDims dynamic_dims;  // by input placeholder name: {{"arg0", {0}}}
  int plan_cache_size = 8;
};

struct IrOptions {
  // Applied to the captured graph first; nullptr: none.
  const DecompositionTable* decompositions = nullptr;
  // Training only: also compute gradients of user inputs that do not require
  // grad (by default only inputs with requires_grad() get one).
  bool grad_for_all_inputs = false;
  // Training only: kBF16 runs the autocast pass (codegen/autocast.h) on the
  // joint graph, before partitioning, so that the partition sees the casts:
  // it can save a product's bf16 operand (half the bytes) rather than the
  // backward casting its f32 value again. f32 where the CPU has no bf16
  // instructions.
  Precision precision = Precision::kF32;
};

// The forward graph of inference, with what each input and output stands for.
struct InferenceGraph {
  Graph graph;
  std::vector<JointDescriptor> inputs;
  std::vector<JointDescriptor> outputs;
};

struct CompiledForward {
  codegen::Executable run;
};
struct CompiledBackward {
  codegen::Executable run;
};

class CompilerPipeline {
 public:
  // Captures `model` (traced in its current train/eval mode) with the example
  // inputs. The model must outlive the pipeline and its functions.
  static absl::StatusOr<CompilerPipeline> Create(nn::Module& model,
                                                 const TensorTree& example_inputs,
                                                 const CaptureOptions& options = {});

  absl::Status generate_ir_for_training(const IrOptions& options = {});
  absl::Status generate_ir_for_inference(const IrOptions& options = {});

  absl::StatusOr<partition::PartitionResult> partition(const partition::PartitionFn& partition_fn,
                                                       const JointGraph& joint) const;
  absl::StatusOr<CompiledForward> fw_compile(const codegen::Compiler& compiler,
                                             const partition::PartitionResult& partition) const;
  absl::StatusOr<CompiledBackward> bw_compile(const codegen::Compiler& compiler,
                                              const partition::PartitionResult& partition,
                                              const CompiledForward& forward) const;
  absl::StatusOr<codegen::Executable> inference_compile(const codegen::Compiler& compiler,
                                                        const Graph& graph) const;
  absl::StatusOr<Function> make_autograd_function(const CompiledForward& forward,
                                                  const CompiledBackward& backward,
                                                  const partition::PartitionResult& partition);
  absl::StatusOr<Function> make_inference_function(const codegen::Executable& forward);
  // fw_compile, bw_compile and make_autograd_function in one call, both
  // halves through `compiler`.
  absl::StatusOr<Function> compile_training(const codegen::Compiler& compiler,
                                            const partition::PartitionResult& partition);

  // The captured forward graph: placeholders are the parameters under their
  // FQNs in registration order, the buffers, then the user inputs.
  const TracedProgram& captured() const { return model_->program; }
  const std::vector<std::string>& mutated_buffers() const { return model_->mutated_buffers; }
  // The module's buffers of those names, in that order.
  const std::vector<Tensor>& mutated_buffer_tensors() const {
    return model_->mutated_buffer_tensors;
  }
  nn::NamedTensors named_parameters() const { return model_->module->named_parameters(); }
  // Per placeholder of the capture, what a frozen inference program
  // (codegen/freeze.h) may read once: the parameters, the buffers the
  // forward does not update and the lifted constants; undefined for the
  // user and random inputs.
  std::vector<Tensor> inference_constants() const;
  absl::StatusOr<const JointGraph*> joint_graph() const;
  absl::StatusOr<const InferenceGraph*> inference_graph() const;

 private:
  CompilerPipeline(std::shared_ptr<CompiledModel> model, int plan_cache_size)
      : model_(std::move(model)), plan_cache_size_(plan_cache_size) {}
  // `compiler`, planning per size when a graph is symbolic (static graphs
  // go to `compiler` as they are).
  codegen::Compiler PerSize(const codegen::Compiler& compiler) const;
  absl::StatusOr<TracedProgram> PreparedForward(const IrOptions& options) const;

  std::shared_ptr<CompiledModel> model_;
  int plan_cache_size_;
  // Per placeholder: whether the example input there required grad.
  std::vector<bool> example_requires_grad_;
  std::shared_ptr<JointGraph> joint_;
  std::shared_ptr<InferenceGraph> inference_;
};

// The one-call path: the stages above with defaults: no decompositions (the
// kernels of linear, softmax and the normalisations beat the primitive ops
// they decompose into: the transformer's step runs 3x slower decomposed), the
// default partition, the fusing compiler.
//
// Sizes: dims named in dynamic_dims are symbols from the start; with
// automatic_dynamic, a call whose sizes differ from the examples' captures
// and compiles once more, with the dims that differed made symbols, and the
// function then serves every size of them (as torch.compile's automatic
// dynamic). A widening that fails is not tried again: such calls return
// their own error and why. `stats`, when given, counts every compilation,
// the first included. Calls may come from several threads.
struct CompileStats {
  std::atomic<int> compilations{0};
};
struct CompileOptions {
  bool training = true;
  const DecompositionTable* decompositions = nullptr;
  partition::PartitionFn partition_fn = partition::DefaultPartition;
  codegen::Compiler compiler = codegen::fusing();
  // kBF16: products on bf16 operands, accumulated in f32 (codegen/autocast.h).
  Precision precision = Precision::kF32;
  // Inference only: the parameters and the buffers the forward does not
  // update are read when compiled, and matmul and convolution weights are
  // packed once for oneDNN (codegen/freeze.h). The function keeps its own
  // copy of them, which every size it compiles for reads: later changes to
  // the module's weights are not seen (call compile again after them).
  bool freeze = false;
  DynamicDims dynamic_dims;
  bool automatic_dynamic = true;
  int plan_cache_size = 8;
  std::shared_ptr<CompileStats> stats;
};
absl::StatusOr<Function> compile(nn::Module& model, const TensorTree& example_inputs,
                                 const CompileOptions& options = {});

// The error of a call whose sizes no compilation over symbols could serve:
// `call`'s own (what did not fit), then `failure`'s (why no function serves
// both sizes). OK stays OK.
absl::Status WithWideningFailure(absl::Status call, const absl::Status& failure);
template <typename T>
absl::StatusOr<T> WithWideningFailure(absl::StatusOr<T> call, const absl::Status& failure) {
  if (call.ok()) return call;
  return WithWideningFailure(call.status(), failure);
}

// `dynamic` plus the dims of `leaves` (a call's user inputs) whose sizes
// differ from `types` (the compiled placeholders'), under their placeholder
// `names`; nullopt when every size fits. A leaf of another dtype or rank
// adds nothing: the call's own check reports it.
std::optional<DynamicDims> WidenedDynamicDims(const DynamicDims& dynamic,
                                              absl::Span<const std::string> names,
                                              absl::Span<const TensorType> types,
                                              absl::Span<const Tensor> leaves);

}  // namespace tc

#endif  // TENSORCUT_PIPELINE_COMPILER_PIPELINE_H_
