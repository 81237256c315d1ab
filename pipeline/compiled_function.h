// The callables the pipeline ends with: a compiled model with the user's
// calling convention (structured inputs in, structured outputs out).
//
// The training function runs the compiled forward, copies updated buffers
// (BatchNorm's running statistics) back into the module, and puts its outputs
// on the eager tape, so that backward() on anything computed from them runs
// the compiled backward and accumulates into the module's parameters and into
// inputs that require grad. The inference function runs the forward alone.
#ifndef TENSORCUT_PIPELINE_COMPILED_FUNCTION_H_
#define TENSORCUT_PIPELINE_COMPILED_FUNCTION_H_

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/interpreter.h"
#include "graph/joint_layout.h"
#include "nn/module.h"

namespace tc {

// A compiled model. Calling it with inputs of another structure, dtype or
// shape than the example inputs returns a status naming the offending path.
using Function = std::function<absl::StatusOr<TensorTree>(const TensorTree& inputs)>;

// What the compiled training function needs to know about the traced model.
struct CompiledModel {
  nn::Module* module;
  TracedProgram program;                     // the capture: placeholders, specs, constants
  std::vector<std::string> mutated_buffers;  // forward outputs after the user outputs
  int num_user_outputs = 0;
  // Resolved once at capture, not per call: the module's tensors are handles
  // that in-place updates (optimizers, loads, to(dtype)) keep valid.
  nn::NamedTensors parameters, buffers;
  std::vector<Tensor> mutated_buffer_tensors;  // one per mutated_buffers entry
  // Held by a call whose forward updates buffers (BatchNorm's running
  // statistics), from reading them to writing them back: concurrent
  // training calls of such a model run one at a time, losing no update.
  mutable std::mutex buffer_update;
};

// The forward's outputs are the user outputs, the updated buffers, then the
// saved values; the backward takes those saved values then one
// tangent per floating forward output and returns the gradients of the
// primals listed in `layout.grad_primal_indices`.
Function MakeAutogradFunction(std::shared_ptr<const CompiledModel> model,
                              codegen::Executable forward, codegen::Executable backward,
                              const JointLayout& layout);

Function MakeInferenceFunction(std::shared_ptr<const CompiledModel> model,
                               codegen::Executable forward);

}  // namespace tc

#endif  // TENSORCUT_PIPELINE_COMPILED_FUNCTION_H_
