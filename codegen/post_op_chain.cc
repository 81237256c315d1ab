#include "codegen/post_op_chain.h"

#include <algorithm>

#include "graph/op_attrs.h"

namespace tc::codegen {
namespace {

bool IsCommutative(OpKind op) {
  return op == OpKind::kAdd || op == OpKind::kMul || op == OpKind::kMaximum ||
         op == OpKind::kMinimum;
}

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
    // A PostOp carries no attribute but gelu's form: which ops a kernel
    // takes is its own check (GetPostOpKernel).
    PostOp post{op};
    if (op == OpKind::kGelu) {
      post.approximation = GeluApproximationOf(node->attrs());
    } else if (node->attrs() != Attrs()) {
      return std::nullopt;
    }
    if (node->num_inputs() > 2) return std::nullopt;  // where
    if (node->num_inputs() == 2) {
      const bool first = node->input(0) == previous;
      if (!first && !IsCommutative(op)) return std::nullopt;
      const Value* other = node->input(first ? 1 : 0);
      if (other == head || !is_input(other) || other->type().dtype != head->type().dtype) {
        return std::nullopt;
      }
      chain.operands.push_back(other);
    }
    chain.ops.push_back(post);
    previous = node->result(0);
  }
  return chain;
}

}  // namespace tc::codegen
