#include "autodiff/joint_graph.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "autodiff/vjp.h"
#include "base/status_macros.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "runtime/autograd_meta.h"
#include "runtime/error.h"
#include "runtime/ops.h"

namespace tc {
namespace {

using Kind = JointDescriptor::Kind;

absl::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kParamInput:
      return "ParamInput";
    case Kind::kBufferInput:
      return "BufferInput";
    case Kind::kUserInput:
      return "UserInput";
    case Kind::kConstantInput:
      return "ConstantInput";
    case Kind::kRandomSeed:
      return "RandomSeed";
    case Kind::kRandomOffset:
      return "RandomOffset";
    case Kind::kTangent:
      return "Tangent";
    case Kind::kUserOutput:
      return "UserOutput";
    case Kind::kMutatedBuffer:
      return "MutatedBuffer";
    case Kind::kParamGrad:
      return "ParamGrad";
    case Kind::kInputGrad:
      return "InputGrad";
  }
  return "?";
}

// Which forward placeholders require grad under `options`.
absl::StatusOr<std::vector<bool>> RequiresGrad(const TracedProgram& forward,
                                               const JointOptions& options) {
  const size_t num_user_inputs = static_cast<size_t>(forward.in_spec.num_leaves());
  const std::vector<bool>& user_flags = options.user_inputs_require_grad;
  if (!user_flags.empty() && user_flags.size() != num_user_inputs) {
    return absl::InvalidArgumentError(absl::StrCat("user_inputs_require_grad has ",
                                                   user_flags.size(), " flags for ",
                                                   num_user_inputs, " user inputs"));
  }
  std::vector<bool> requires_grad;
  size_t user_input = 0;
  for (size_t i = 0; i < forward.inputs.size(); ++i) {
    const InputDescriptor& in = forward.inputs[i];
    const TensorType& type = forward.graph.placeholders()[i]->type();
    bool flag = false;
    if (in.kind == InputDescriptor::Kind::kParameter) {
      // Integer parameters (an index table, say) get no gradient.
      flag = options.params_require_grad && IsFloating(type.dtype);
    } else if (in.kind == InputDescriptor::Kind::kUserInput) {
      flag = !user_flags.empty() && user_flags[user_input];
      ++user_input;
      if (flag && !IsFloating(type.dtype)) {
        return absl::InvalidArgumentError(absl::StrCat(in.name, " requires grad, but its type ",
                                                       type.ToString(), " is not floating"));
      }
    }
    requires_grad.push_back(flag);
  }
  return requires_grad;
}

Tensor Accumulate(const Tensor& sum, const Tensor& g) { return sum.defined() ? add(sum, g) : g; }

// Replays the forward and runs the VJP rules under one Tracer. Errors are
// thrown as tc::Error (the rules' own convention) and caught by BuildJointGraph.
class JointBuilder {
 public:
  JointBuilder(const TracedProgram& forward, std::vector<bool> requires_grad,
               int num_buffer_update_outputs)
      : forward_(forward),
        requires_grad_(std::move(requires_grad)),
        num_buffer_update_outputs_(num_buffer_update_outputs) {}

  JointGraph Build() {
    AddInputs();
    Replay();
    Backward();
    return Finish();
  }

 private:
  void AddInputs() {
    const std::vector<Value*>& placeholders = forward_.graph.placeholders();
    for (size_t i = 0; i < placeholders.size(); ++i) {
      const Value* p = placeholders[i];
      traced_[p] = tracer_.AddInput(p->name(), p->type());
      if (requires_grad_[i]) needs_grad_.insert(p);
      joint_.inputs.push_back(DescribeInput(forward_.inputs[i]));
    }
    const std::vector<Value*>& outputs = forward_.graph.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!IsFloating(outputs[i]->type().dtype)) continue;
      const int k = static_cast<int>(tangents_.size());
      Tensor tangent = tracer_.AddInput(absl::StrCat("tangent_", k), outputs[i]->type());
      joint_.inputs.push_back({Kind::kTangent, "", static_cast<int>(i)});
      const bool buffer_update = i >= outputs.size() - num_buffer_update_outputs_;
      if (!buffer_update) tangents_.emplace_back(outputs[i], std::move(tangent));
    }
    joint_.layout.num_primals = static_cast<int>(placeholders.size());
    joint_.layout.num_tangents = static_cast<int>(joint_.inputs.size() - placeholders.size());
  }

  // Records every forward node again, under its own source. A result needs a
  // gradient when it is floating and an operand needs one, as in eager mode.
  void Replay() {
    for (const Node* node : forward_.graph.nodes()) {
      TensorList inputs = Operands(*node);
      ScopedTraceScope scope(node->source());
      TensorList results = ValueOrThrow(Call(node->op(), inputs, node->attrs()));
      bool differentiable = false;
      for (const Value* in : node->inputs()) differentiable |= needs_grad_.contains(in);
      differentiable &= GetVjp(node->op()) != nullptr;
      for (int i = 0; i < node->num_results(); ++i) {
        const Value* r = node->result(i);
        traced_[r] = results[i];
        if (differentiable && IsFloating(r->type().dtype)) needs_grad_.insert(r);
      }
    }
  }

  // Walks the forward nodes in reverse, from the tangents, calling each VJP
  // rule on the traced tensors.
  void Backward() {
    for (const auto& [output, tangent] : tangents_) {
      if (needs_grad_.contains(output)) grads_[output] = Accumulate(grads_[output], tangent);
    }
    const std::vector<Node*> nodes = forward_.graph.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const Node& node = **it;
      TensorList out_grads;
      bool any = false;
      for (const Value* r : node.results()) {
        auto g = grads_.find(r);
        out_grads.push_back(g == grads_.end() ? Tensor() : g->second);
        any |= out_grads.back().defined();
      }
      if (!any) continue;
      const TensorList inputs = Operands(node);
      TensorList outputs;
      for (const Value* r : node.results()) outputs.push_back(traced_.at(r));
      ScopedTraceScope scope(node.source().empty() ? "(backward)"
                                                   : absl::StrCat(node.source(), " (backward)"));
      const VjpContext ctx{inputs, outputs, node.attrs(), out_grads};
      const TensorList in_grads = GetVjp(node.op())(ctx);
      for (int i = 0; i < node.num_inputs(); ++i) {
        const Value* in = node.input(i);
        if (i >= static_cast<int>(in_grads.size()) || !in_grads[i].defined() ||
            !needs_grad_.contains(in)) {
          continue;
        }
        if (in_grads[i].type() != in->type()) {
          ThrowIfError(absl::InternalError(absl::StrCat(
              "the VJP of ", OpName(node.op()), " gave ", in_grads[i].type().ToString(),
              " for operand ", i, " of type ", in->type().ToString())));
        }
        grads_[in] = Accumulate(grads_[in], in_grads[i]);
      }
    }
  }

  JointGraph Finish() {
    std::vector<Value*> outputs;
    const std::vector<Value*>& fw_outputs = forward_.graph.outputs();
    for (size_t i = 0; i < fw_outputs.size(); ++i) {
      outputs.push_back(ValueOf(traced_.at(fw_outputs[i])));
      joint_.outputs.push_back({Kind::kUserOutput, "", static_cast<int>(i)});
    }
    joint_.layout.num_forward_outputs = static_cast<int>(fw_outputs.size());
    const std::vector<Value*>& placeholders = forward_.graph.placeholders();
    for (size_t i = 0; i < placeholders.size(); ++i) {
      if (!requires_grad_[i]) continue;
      const Value* p = placeholders[i];
      auto g = grads_.find(p);
      const Tensor grad = g != grads_.end() ? g->second : zeros(p->type().shape, p->type().dtype);
      outputs.push_back(ValueOf(grad));
      const bool param = forward_.inputs[i].kind == InputDescriptor::Kind::kParameter;
      joint_.outputs.push_back(
          {param ? Kind::kParamGrad : Kind::kInputGrad, forward_.inputs[i].name});
      joint_.layout.grad_primal_indices.push_back(static_cast<int>(i));
    }
    // Rules use only table ops on their operands: a lifted constant would be
    // a placeholder the layout does not know.
    if (!tracer_.constants().empty()) {
      ThrowIfError(absl::InternalError("a VJP rule captured a concrete tensor"));
    }
    // Nor may they draw random numbers: a random op's gradient reads the
    // forward's seed and offset.
    if (tracer_.random_seed() != nullptr) {
      ThrowIfError(absl::InternalError("a VJP rule drew random numbers"));
    }
    joint_.graph = std::move(tracer_.graph());
    ThrowIfError(joint_.graph.SetOutputs(std::move(outputs)));
    // VJP rules compute gradients for every operand; drop those nothing reads.
    joint_.graph.RemoveDeadNodes();
    ThrowIfError(Verify(joint_.graph));
    return std::move(joint_);
  }

  TensorList Operands(const Node& node) const {
    TensorList inputs;
    for (const Value* in : node.inputs()) inputs.push_back(traced_.at(in));
    return inputs;
  }

  Value* ValueOf(const Tensor& t) { return ValueOrThrow(tracer_.ValueOf(t)); }

  const TracedProgram& forward_;
  const std::vector<bool> requires_grad_;
  const size_t num_buffer_update_outputs_;
  Tracer tracer_;
  JointGraph joint_;
  absl::flat_hash_map<const Value*, Tensor> traced_;  // forward value -> traced tensor
  absl::flat_hash_set<const Value*> needs_grad_;      // forward values needing a gradient
  absl::flat_hash_map<const Value*, Tensor> grads_;   // accumulated gradients
  std::vector<std::pair<const Value*, Tensor>> tangents_;
};

}  // namespace

JointDescriptor DescribeInput(const InputDescriptor& in) {
  switch (in.kind) {
    case InputDescriptor::Kind::kParameter:
      return {Kind::kParamInput, in.name};
    case InputDescriptor::Kind::kBuffer:
      return {Kind::kBufferInput, in.name};
    case InputDescriptor::Kind::kUserInput:
      return {Kind::kUserInput, in.name};
    case InputDescriptor::Kind::kRandomSeed:
      return {Kind::kRandomSeed, "seed"};
    case InputDescriptor::Kind::kRandomOffset:
      return {Kind::kRandomOffset, "offset"};
    case InputDescriptor::Kind::kConstant:
      break;
  }
  return {Kind::kConstantInput, "", in.constant_index};
}

std::string JointDescriptor::ToString() const {
  return absl::StrCat(KindName(kind), "{", name.empty() ? absl::StrCat(index) : name, "}");
}

absl::StatusOr<JointGraph> BuildJointGraph(const TracedProgram& forward,
                                           const JointOptions& options) {
  TC_ASSIGN_OR_RETURN(std::vector<bool> requires_grad, RequiresGrad(forward, options));
  const int num_outputs = static_cast<int>(forward.graph.outputs().size());
  if (options.num_buffer_update_outputs < 0 || options.num_buffer_update_outputs > num_outputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("BuildJointGraph: ", options.num_buffer_update_outputs,
                     " buffer update outputs, but the forward has ", num_outputs, " outputs"));
  }
  // The joint graph is data: nothing here records eager autograd.
  NoGradGuard no_grad;
  JointBuilder builder(forward, std::move(requires_grad), options.num_buffer_update_outputs);
  return CatchErrors([&] { return builder.Build(); });
}

std::string ToString(const JointGraph& joint) {
  std::string text = ToString(joint.graph);
  absl::StrAppend(&text, "inputs:\n");
  for (size_t i = 0; i < joint.inputs.size(); ++i) {
    absl::StrAppend(&text, "  %", joint.graph.placeholders()[i]->name(), ": ",
                    joint.inputs[i].ToString(), "\n");
  }
  absl::StrAppend(&text, "outputs:\n");
  for (size_t i = 0; i < joint.outputs.size(); ++i) {
    absl::StrAppend(&text, "  %", joint.graph.outputs()[i]->name(), ": ",
                    joint.outputs[i].ToString(), "\n");
  }
  return text;
}

}  // namespace tc
