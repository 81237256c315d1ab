#include "codegen/layout_plan.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "base/status_macros.h"
#include "codegen/fusion.h"
#include "codegen/layout_templates.h"
#include "graph/verifier.h"

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
    case OpKind::kCast:  // a cast of integers, which no fused pass takes
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

  // The order of the first result, `result`, of a kernel of `op` reading
  // `inputs`, given their layouts.
  DimOrder ForKernel(OpKind op, absl::Span<Value* const> inputs, const Value* result) const {
    if (op == OpKind::kConv2d || op == OpKind::kConv2dBackwardData) {
      return Allowed(result, kChannelsLast);
    }
    const int followed = FollowedInput(op);
    if (followed < 0 || inputs[followed]->layout() != kChannelsLast) return {};
    return Allowed(result, kChannelsLast);
  }

  // The order of a fused pass (a loop region, or a lone fusible node)
  // computing `computed` of its results: channels-last when an input of
  // their shape is, unless it draws random numbers.
  DimOrder ForFused(const Node& node, const std::vector<const Value*>& computed) const {
    // Random numbers follow row-major element order.
    bool random = node.def().Has(kTraitRandom);
    if (const Graph* body = node.body(); body != nullptr) {
      for (const Node* n : body->nodes()) random = random || n->def().Has(kTraitRandom);
    }
    if (random) return {};
    const Shape& shape = computed[0]->type().shape;
    bool follows = false;
    for (const Value* in : node.inputs()) {
      follows = follows || (in->type().shape == shape && in->layout() == kChannelsLast);
    }
    if (!follows) return {};
    for (const Value* out : computed) {
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

// Lays out a region's body, and so its results: a loop's pass runs in one
// order, over its fusible nodes (its sums and their reshapes keep theirs);
// an epilogue's kernel writes its first result, and its chain every value,
// in the order the kernel would take alone. Returns whether anything changed.
absl::StatusOr<bool> LayOutRegion(Graph& graph, Node& node, const LayoutPlanner& planner) {
  const Graph& body = *node.body();
  const std::vector<Node*> body_nodes = body.nodes();
  // A copy of the body with `order` on the results laid_out(node, result)
  // picks, and whether any changed.
  auto relaid = [&](auto laid_out, const DimOrder& order) {
    Graph copy = body.Clone();
    bool changed = false;
    for (Node* n : copy.nodes()) {
      for (Value* r : n->results()) {
        if (!laid_out(*n, *r) || r->layout() == order) continue;
        copy.SetLayout(r, order);
        changed = true;
      }
    }
    return std::make_pair(std::move(copy), changed);
  };
  std::pair<Graph, bool> laid;
  if (const Node* kernel = EpilogueKernel(node); kernel != nullptr) {
    const DimOrder order = planner.ForKernel(
        kernel->op(), absl::MakeSpan(node.inputs()).subspan(0, kernel->num_inputs()),
        node.result(0));
    // The kernel is the body's one node whose op takes epilogues; of its
    // results only the first takes the order.
    laid = relaid([](const Node& n,
                     const Value& r) { return n.def().epilogue.ops.empty() || r.index() == 0; },
                  order);
  } else {
    // What the pass writes; when it writes only sums, what it computes.
    std::vector<const Value*> computed;
    for (int i = 0; i < node.num_results(); ++i) {
      if (body.outputs()[i]->producer()->def().Has(kTraitFusible))
        computed.push_back(node.result(i));
    }
    for (const Node* n : body_nodes) {
      if (computed.empty() && n->def().Has(kTraitFusible)) computed.push_back(n->result(0));
    }
    const DimOrder order = planner.ForFused(node, computed);
    laid = relaid([](const Node& n, const Value&) { return n.def().Has(kTraitFusible); }, order);
  }
  if (!laid.second) return false;
  TC_RETURN_IF_ERROR(graph.SetBody(&node, std::move(laid.first)));
  return true;
}

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
    } else if (node->body() != nullptr) {
      TC_ASSIGN_OR_RETURN(const bool relaid, LayOutRegion(graph, *node, planner));
      changed = changed || relaid;
    } else if (IsFusible(*node)) {
      const DimOrder order =
          planner.ForFused(*node, {node->results().begin(), node->results().end()});
      for (Value* r : node->results()) set(r, order);
    } else {
      set(node->result(0), planner.ForKernel(node->op(), node->inputs(), node->result(0)));
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
