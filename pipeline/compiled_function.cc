#include "pipeline/compiled_function.h"

#include "absl/strings/str_cat.h"
#include "autodiff/engine.h"
#include "base/status_macros.h"

namespace tc {
namespace {

struct ForwardRun {
  std::vector<Tensor> primals;  // the graph arguments
  std::vector<Tensor> outputs;  // every forward output
};

// Checks the call against the capture, runs the forward, and writes the
// updated buffers back into the module.
absl::StatusOr<ForwardRun> RunForward(const CompiledModel& model,
                                      const codegen::Executable& forward,
                                      const TensorTree& inputs) {
  ForwardRun run;
  std::unique_lock<std::mutex> updating(model.buffer_update, std::defer_lock);
  if (!model.mutated_buffer_tensors.empty()) updating.lock();
  // A symbolic count of random numbers takes its value from the inputs' sizes.
  SymbolValues sizes;
  const bool symbolic_draw = IsSymbolic(model.program.random.numbers);
  TC_ASSIGN_OR_RETURN(run.primals, GraphArguments(model.program, inputs, model.parameters,
                                                  model.buffers, symbolic_draw ? &sizes : nullptr));
  TC_RETURN_IF_ERROR(model.program.random.Draw(absl::MakeSpan(run.primals), sizes));
  NoGradGuard no_grad;
  TC_ASSIGN_OR_RETURN(run.outputs, forward(run.primals));
  // The tape reads the primals after the lock is released, while another
  // call may be rewriting a mutated buffer's handle: it gets a copy of each
  // such handle, taken here, as this call's forward saw it.
  for (Tensor& primal : run.primals) {
    for (const Tensor& buffer : model.mutated_buffer_tensors) {
      if (primal.impl() == buffer.impl()) {
        primal = primal.detach();
        break;
      }
    }
  }
  for (size_t i = 0; i < model.mutated_buffer_tensors.size(); ++i) {
    nn::AssignInPlace(model.mutated_buffer_tensors[i],
                      run.outputs[model.num_user_outputs + i].contiguous());
  }
  return run;
}

absl::StatusOr<TensorTree> UserOutputs(const CompiledModel& model,
                                       const std::vector<Tensor>& outputs) {
  std::vector<Tensor> user(outputs.begin(), outputs.begin() + model.num_user_outputs);
  return Unflatten(std::move(user), model.program.out_spec);
}

}  // namespace

Function MakeAutogradFunction(std::shared_ptr<const CompiledModel> model,
                              codegen::Executable forward, codegen::Executable backward,
                              const JointLayout& layout) {
  const int num_forward_outputs = layout.num_forward_outputs;
  const std::vector<int> grad_primals = layout.grad_primal_indices;
  return [=](const TensorTree& inputs) -> absl::StatusOr<TensorTree> {
    TC_ASSIGN_OR_RETURN(ForwardRun run, RunForward(*model, forward, inputs));
    std::vector<Tensor> forward_outputs(run.outputs.begin(),
                                        run.outputs.begin() + num_forward_outputs);
    std::vector<Tensor> saved(run.outputs.begin() + num_forward_outputs, run.outputs.end());
    std::vector<TensorType> output_types;
    for (const Tensor& t : forward_outputs) output_types.push_back(t.type());
    const int num_primals = static_cast<int>(run.primals.size());
    // The compiled backward: tangents for the user outputs come from the
    // tape; buffer updates and outputs nobody differentiated get zeros.
    BackwardFn backward_fn = [=](absl::Span<const Tensor> grads) -> absl::StatusOr<TensorList> {
      std::vector<Tensor> args = saved;
      for (size_t i = 0; i < output_types.size(); ++i) {
        if (!IsFloating(output_types[i].dtype)) continue;
        const bool from_tape = i < grads.size() && grads[i].defined();
        args.push_back(from_tape ? grads[i] : zeros(output_types[i].shape, output_types[i].dtype));
      }
      TC_ASSIGN_OR_RETURN(std::vector<Tensor> grad_values, backward(args));
      TensorList per_primal(num_primals);
      for (size_t k = 0; k < grad_primals.size(); ++k) {
        per_primal[grad_primals[k]] = grad_values[k];
      }
      return per_primal;
    };
    std::vector<Tensor> user(forward_outputs.begin(),
                             forward_outputs.begin() + model->num_user_outputs);
    // Only the user outputs go on the tape; they are fresh handles owned by
    // this call.
    RecordFunction("compiled_forward", run.primals, user, std::move(backward_fn));
    return Unflatten(std::move(user), model->program.out_spec);
  };
}

Function MakeInferenceFunction(std::shared_ptr<const CompiledModel> model,
                               codegen::Executable forward) {
  return [=](const TensorTree& inputs) -> absl::StatusOr<TensorTree> {
    TC_ASSIGN_OR_RETURN(ForwardRun run, RunForward(*model, forward, inputs));
    return UserOutputs(*model, run.outputs);
  };
}

}  // namespace tc
