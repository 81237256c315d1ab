#include "codegen/layout_plan.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "base/status_macros.h"
#include "codegen/fusion.h"
#include "codegen/layout_templates.h"

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

class LayoutPlanner {
 public:
  LayoutPlanner(const Graph& graph, int free_outputs_from) {
    const auto& outputs = graph.outputs();
    for (int i = 0; i < free_outputs_from && i < static_cast<int>(outputs.size()); ++i) {
      row_major_.insert(outputs[i]);
    }
    absl::flat_hash_set<const Value*> read_otherwise, reshaped;
    for (const Node* node : graph.nodes()) {
      for (const Value* in : node->inputs()) {
        (node->op() == OpKind::kReshape ? reshaped : read_otherwise).insert(in);
      }
    }
    for (const Value* v : reshaped) {
      if (!read_otherwise.contains(v)) row_major_.insert(v);
    }
  }

  // The order of `node`'s first result, given its inputs' layouts.
  DimOrder ForNode(const Node& node) const {
    if (node.op() == OpKind::kConv2d || node.op() == OpKind::kConv2dBackwardData) {
      return Allowed(node.result(0), kChannelsLast);
    }
    const int followed = FollowedInput(node.op());
    if (followed < 0 || node.input(followed)->layout() != kChannelsLast) return {};
    return Allowed(node.result(0), kChannelsLast);
  }

  // The order of every result of a fused pass (a fused node, or a lone
  // fusible node): channels-last when an input of the results' shape is.
  DimOrder ForFused(const Node& node) const {
    const Shape& shape = node.result(0)->type().shape;
    bool follows = false;
    for (const Value* in : node.inputs()) {
      follows = follows || (in->type().shape == shape && in->layout() == kChannelsLast);
    }
    if (!follows) return {};
    for (const Value* out : node.results()) {
      if (out->type().shape != shape || Allowed(out, kChannelsLast).empty()) return {};
    }
    return kChannelsLast;
  }

 private:
  // `order`, when it may be given to `v`; else empty.
  DimOrder Allowed(const Value* v, DimOrder order) const {
    if (v->type().rank() != 4 || row_major_.contains(v)) return {};
    return order;
  }

  absl::flat_hash_set<const Value*> row_major_;
};

absl::StatusOr<bool> Assign(Graph& graph, const CompileOptions& options) {
  bool changed = false;
  auto set = [&](Value* v, DimOrder order) {
    if (v->layout() == order) return;
    graph.SetLayout(v, std::move(order));
    changed = true;
  };
  const std::vector<DimOrder>& orders = options.argument_orders;
  for (size_t i = 0; i < graph.placeholders().size(); ++i) {
    Value* p = graph.placeholders()[i];
    const bool nhwc = i < orders.size() && orders[i] == kChannelsLast && p->type().rank() == 4;
    set(p, nhwc ? kChannelsLast : DimOrder());
  }
  // A view's strides are what its kernel makes of its base's, asked over
  // layout templates as a program does. A channels-last view (a permute of
  // an NHWC input, a slice of the batch) is followed like any channels-last
  // value.
  const LayoutTemplates templates(graph);
  absl::flat_hash_map<const Value*, Tensor> view_layouts;
  auto layout_of = [&](const Value* v) {
    auto it = view_layouts.find(v);
    return it != view_layouts.end() ? it->second : templates.Dense(v, v->layout());
  };
  const LayoutPlanner planner(graph, options.free_outputs_from);
  for (Node* node : graph.nodes()) {
    if (node->def().Has(kTraitView)) {
      // A reshape that is a copy writes a dense row-major result.
      TC_ASSIGN_OR_RETURN(const std::optional<TensorList> views,
                          templates.View(*node, {layout_of(node->input(0))}));
      for (int i = 0; i < node->num_results(); ++i) {
        if (views) view_layouts[node->result(i)] = (*views)[i];
        const bool nhwc =
            views && node->result(i)->type().rank() == 4 && (*views)[i].is_channels_last();
        set(node->result(i), nhwc ? kChannelsLast : DimOrder());
      }
    } else if (const Graph* body = node->body(); body != nullptr) {
      // A region's results are its body's, whose pass runs in their order.
      const DimOrder order = planner.ForFused(*node);
      if (node->result(0)->layout() == order) continue;
      Graph ordered = body->Clone();
      for (Node* n : ordered.nodes()) {
        for (Value* r : n->results()) ordered.SetLayout(r, order);
      }
      TC_RETURN_IF_ERROR(graph.SetBody(node, std::move(ordered)));
      changed = true;
    } else if (IsFusible(*node)) {
      const DimOrder order = planner.ForFused(*node);
      for (Value* r : node->results()) set(r, order);
    } else {
      set(node->result(0), planner.ForNode(*node));
      for (int i = 1; i < node->num_results(); ++i) set(node->result(i), {});
    }
  }
  return changed;
}

}  // namespace

Pass AssignLayouts(const CompileOptions& options) {
  return {"assign-layouts", [options](Graph& graph) { return Assign(graph, options); }};
}

}  // namespace tc::codegen
