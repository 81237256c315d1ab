#include "pipeline/step_program.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace tc {
namespace {

absl::Status Invalid(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("step program: ", what));
}

bool IsScalarI64(const Value* v) {
  return v->type().dtype == DType::kI64 && v->type().shape.empty();
}

}  // namespace

absl::Status VerifyStepProgram(const StepProgram& program) {
  using Kind = InputDescriptor::Kind;
  const std::vector<Value*>& fw_in = program.forward.placeholders();
  const std::vector<Value*>& fw_out = program.forward.outputs();
  const std::vector<Value*>& bw_in = program.backward.placeholders();
  const std::vector<Value*>& bw_out = program.backward.outputs();
  const int num_inputs = static_cast<int>(fw_in.size());
  if (static_cast<int>(program.inputs.size()) != num_inputs) {
    return Invalid(absl::StrCat(program.inputs.size(), " input descriptors, but the forward has ",
                                num_inputs, " placeholders"));
  }
  int batch_leaves = 0, random_inputs = 0;
  for (int i = 0; i < num_inputs; ++i) {
    const Kind kind = program.inputs[i].kind;
    if (kind == Kind::kUserInput) ++batch_leaves;
    if (kind != Kind::kRandomSeed && kind != Kind::kRandomOffset) continue;
    ++random_inputs;
    if (!IsScalarI64(fw_in[i])) {
      return Invalid(absl::StrCat("input ", i, " (", fw_in[i]->name(),
                                  ") is a random input and must be an i64 scalar, got ",
                                  fw_in[i]->type().ToString()));
    }
  }
  // Either no random inputs, or one seed and one offset where `random` says.
  const RandomInputs& random = program.random;
  const auto is_input = [&](int at, Kind kind) {
    return at >= 0 && at < num_inputs && program.inputs[at].kind == kind;
  };
  const bool none = random.seed == -1 && random.offset == -1 && random_inputs == 0;
  const bool both = random_inputs == 2 && is_input(random.seed, Kind::kRandomSeed) &&
                    is_input(random.offset, Kind::kRandomOffset);
  if (!none && !both) {
    return Invalid(absl::StrCat("the random inputs are placeholders ", random.seed, " (seed) and ",
                                random.offset, " (offset) and the forward has ", random_inputs,
                                "; expected a random seed and a random offset input, or -1 for "
                                "both and none"));
  }
  if (static_cast<int>(program.batch_words.size()) != batch_leaves) {
    return Invalid(absl::StrCat(program.batch_words.size(), " batch names for ", batch_leaves,
                                " batch leaves"));
  }
  if (program.batch_spec.kind() != TreeKind::kNone &&
      program.batch_spec.num_leaves() != batch_leaves) {
    return Invalid(absl::StrCat("the batch's structure ", ToString(program.batch_spec), " has ",
                                program.batch_spec.num_leaves(), " leaves for ", batch_leaves,
                                " batch leaves"));
  }
  if (program.outputs_spec.kind() != TreeKind::kNone &&
      program.outputs_spec.num_leaves() != program.num_outputs) {
    return Invalid(absl::StrCat("the outputs' structure ", ToString(program.outputs_spec), " has ",
                                program.outputs_spec.num_leaves(), " leaves for ",
                                program.num_outputs, " model outputs"));
  }
  const int returned = static_cast<int>(fw_out.size());
  const int expected = program.num_saved < 0 || program.num_saved > returned ||
                               program.num_outputs < 0 || program.num_outputs > returned
                           ? -1
                           : program.num_forward_outputs() + program.num_saved;
  if (returned != expected) {
    return Invalid(absl::StrCat("the forward returns ", returned, " values; expected ", expected,
                                " (the loss, ", program.num_outputs, " model outputs, ",
                                program.mutated_buffers.size(), " updated buffers, ",
                                program.num_saved, " saved values)"));
  }
  // The backward takes the saved values, then one tangent per floating
  // forward output. A step passes no real tangent for the model's outputs:
  // the backward must not read them.
  int tangent = program.num_saved;
  for (int i = 0; i < program.num_forward_outputs(); ++i) {
    if (!IsFloating(fw_out[i]->type().dtype)) continue;
    const bool model_output = i >= 1 && i <= program.num_outputs;
    if (model_output && (tangent >= static_cast<int>(bw_in.size()) || bw_in[tangent]->has_uses())) {
      return Invalid(absl::StrCat("model output ", i - 1,
                                  " must be detached, but the backward reads its tangent"));
    }
    ++tangent;
  }
  const TensorType& loss = fw_out[0]->type();
  if (!loss.shape.empty() || (loss.dtype != DType::kF32 && loss.dtype != DType::kF64)) {
    return Invalid(absl::StrCat("the loss must be an f32 or f64 scalar, got ", loss.ToString()));
  }
  for (int i = 0; i < program.num_saved; ++i) {
    if (static_cast<int>(bw_in.size()) <= i ||
        bw_in[i]->type() != fw_out[program.num_forward_outputs() + i]->type()) {
      return Invalid(absl::StrCat(
          "saved value ", i, " is ", fw_out[program.num_forward_outputs() + i]->type().ToString(),
          " in the forward but the backward's placeholder ", i, " is ",
          static_cast<int>(bw_in.size()) <= i ? std::string("missing")
                                              : bw_in[i]->type().ToString()));
    }
  }
  if (bw_out.size() != program.gradient_of.size()) {
    return Invalid(absl::StrCat("the backward returns ", bw_out.size(), " gradients, but ",
                                program.gradient_of.size(), " are named"));
  }
  for (size_t k = 0; k < program.gradient_of.size(); ++k) {
    const int primal = program.gradient_of[k];
    if (primal < 0 || primal >= num_inputs) {
      return Invalid(absl::StrCat("gradient_of[", k, "] = ", primal, ", but the forward has ",
                                  num_inputs, " placeholders"));
    }
    if (bw_out[k]->type() != fw_in[primal]->type()) {
      return Invalid(absl::StrCat("gradient ", k, " is ", bw_out[k]->type().ToString(),
                                  "; its primal ", fw_in[primal]->name(), " is ",
                                  fw_in[primal]->type().ToString()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<codegen::Executable> CompileForwardHalf(const codegen::Compiler& compiler,
                                                       const Graph& forward,
                                                       int num_forward_outputs) {
  // The saved values go to the backward in whatever layout the forward
  // computes them in (channels-last activations): no reorder between.
  return compiler(forward, {.free_outputs_from = num_forward_outputs,
                            .saved_outputs_from = num_forward_outputs});
}

absl::StatusOr<codegen::Executable> CompileBackwardHalf(const codegen::Compiler& compiler,
                                                        const Graph& backward,
                                                        const codegen::Executable& forward,
                                                        int num_forward_outputs, int num_saved) {
  const int forward_outputs = num_forward_outputs + num_saved;
  if (forward.num_outputs() != forward_outputs ||
      static_cast<int>(backward.placeholders().size()) < num_saved) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bw_compile: the partition saves ", num_saved, " values; the compiled forward returns ",
        forward.num_outputs(), " outputs (expected ", forward_outputs, ") and the backward takes ",
        backward.placeholders().size()));
  }
  // The saved values come first, in the layouts the forward gives them.
  codegen::CompileOptions options;
  options.argument_orders.resize(backward.placeholders().size());
  for (int i = 0; i < num_saved; ++i) {
    options.argument_orders[i] = forward.output_order(num_forward_outputs + i);
  }
  return compiler(backward, options);
}

}  // namespace tc
