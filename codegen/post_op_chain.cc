#include "codegen/post_op_chain.h"

#include <algorithm>

namespace tc::codegen {
namespace {

bool IsUnary(OpKind op) {
  return op == OpKind::kRelu || op == OpKind::kGelu || op == OpKind::kTanh ||
         op == OpKind::kSigmoid || op == OpKind::kExp;
}

bool IsCommutative(OpKind op) {
  return op == OpKind::kAdd || op == OpKind::kMul || op == OpKind::kMaximum ||
         op == OpKind::kMinimum;
}

bool IsBinary(OpKind op) { return IsCommutative(op) || op == OpKind::kSub || op == OpKind::kDiv; }

}  // namespace

std::optional<PostOpChain> MatchPostOpChain(const FusionGroup& group, const Value* head) {
  if (group.outputs.size() != 1 || group.outputs[0] != group.nodes.back()->result(0)) {
    return std::nullopt;
  }
  const auto is_input = [&](const Value* v) {
    return std::find(group.inputs.begin(), group.inputs.end(), v) != group.inputs.end();
  };
  if (!is_input(head)) return std::nullopt;
  PostOpChain chain;
  const Value* previous = head;
  for (const Node* node : group.nodes) {
    const OpKind op = node->op();
    if (node->num_results() != 1 || node->result(0)->type() != head->type()) return std::nullopt;
    const int reads = std::count(node->inputs().begin(), node->inputs().end(), previous);
    if (reads != 1) return std::nullopt;
    PostOp post{op};
    if (IsUnary(op)) {
      if (op == OpKind::kGelu) post.tanh_form = node->attrs().Str("approximate") == "tanh";
    } else if (IsBinary(op) && node->num_inputs() == 2) {
      const bool first = node->input(0) == previous;
      if (!first && !IsCommutative(op)) return std::nullopt;
      const Value* other = node->input(first ? 1 : 0);
      if (other == head || !is_input(other) || other->type().dtype != head->type().dtype) {
        return std::nullopt;
      }
      chain.operands.push_back(other);
    } else {
      return std::nullopt;
    }
    chain.ops.push_back(post);
    previous = node->result(0);
  }
  return chain;
}

}  // namespace tc::codegen
