#include "codegen/layout_plan.h"

#include <utility>

namespace tc::codegen {
namespace {

// The input whose layout a node's first result follows, or -1 when it
// keeps to row-major; convolutions' results are channels-last regardless.
int FollowedInput(OpKind op) {
  switch (op) {
    case OpKind::kBatchNorm:
    case OpKind::kBatchNormInference:
    case OpKind::kMaxPool2d:
    case OpKind::kAvgPool2d:
    case OpKind::kAvgPool2dBackward:
      return 0;
    case OpKind::kBatchNormBackward:
    case OpKind::kMaxPool2dBackward:
      return 1;  // x, not the gradient
    default:
      return -1;
  }
}

}  // namespace

LayoutPlanner::LayoutPlanner(const Graph& graph, int free_outputs_from) {
  const auto& outputs = graph.outputs();
  for (int i = 0; i < free_outputs_from && i < static_cast<int>(outputs.size()); ++i) {
    row_major_.insert(outputs[i]);
  }
  absl::flat_hash_set<const Value*> read_otherwise;
  absl::flat_hash_set<const Value*> reshaped;
  for (const Node* node : graph.nodes()) {
    for (const Value* in : node->inputs()) {
      (node->op() == OpKind::kReshape ? reshaped : read_otherwise).insert(in);
    }
  }
  for (const Value* v : reshaped) {
    if (!read_otherwise.contains(v)) row_major_.insert(v);
  }
}

DimOrder LayoutPlanner::Allowed(const Value* v, DimOrder order) const {
  if (v->type().rank() != 4 || row_major_.contains(v)) return {};
  return order;
}

DimOrder LayoutPlanner::ForNode(const Node& node, absl::Span<const Tensor> inputs) const {
  if (node.op() == OpKind::kConv2d || node.op() == OpKind::kConv2dBackwardData) {
    return Allowed(node.result(0), kChannelsLast);
  }
  const int followed = FollowedInput(node.op());
  if (followed < 0 || !inputs[followed].is_channels_last()) return {};
  return Allowed(node.result(0), kChannelsLast);
}

DimOrder LayoutPlanner::ForGroup(const Shape& shape, absl::Span<const Value* const> outputs,
                                 absl::Span<const Tensor> inputs) const {
  bool follows = false;
  for (const Tensor& in : inputs)
    follows = follows || (in.shape() == shape && in.is_channels_last());
  if (!follows) return {};
  for (const Value* out : outputs) {
    if (out->type().shape != shape || Allowed(out, kChannelsLast).empty()) return {};
  }
  return kChannelsLast;
}

}  // namespace tc::codegen
