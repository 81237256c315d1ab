// Layout planning: the memory order a program gives each value it computes.
//
// oneDNN's convolutions run fastest on channels-last (NHWC) activations and
// reorder anything else into that layout around every call, forward and
// backward. So the planner makes a convolution's result channels-last and
// lets the ops between convolutions (batch norm, pooling, elementwise chains
// and their gradients) follow the layout of the activation they read: data
// stays channels-last from the first convolution to the flatten, and the
// reorders left are at the graph's edges. The logical shape stays
// [N, C, H, W] throughout; only strides change (graph/shape.h's DimOrder).
//
//   LayoutPlanner planner(graph, /*free_outputs_from=*/1);
//   DimOrder order = planner.ForNode(*conv, input_layouts);  // kChannelsLast
//
// Values the graph returns (before `free_outputs_from`) stay row-major for
// the caller, and so does a value read only by reshapes (a flatten of NHWC
// data would be a copy; writing it row-major costs nothing extra).
#ifndef TENSORCUT_CODEGEN_LAYOUT_PLAN_H_
#define TENSORCUT_CODEGEN_LAYOUT_PLAN_H_

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "graph/ir.h"
#include "runtime/tensor.h"

namespace tc::codegen {

class LayoutPlanner {
 public:
  // Outputs [0, free_outputs_from) of `graph` are kept row-major.
  LayoutPlanner(const Graph& graph, int free_outputs_from);

  // The order of `node`'s first result (its others are row-major), given the
  // layouts of its inputs; empty for row-major.
  DimOrder ForNode(const Node& node, absl::Span<const Tensor> inputs) const;
  // The order of every output of a fused group of `shape`, given the layouts
  // of its inputs: channels-last when an input of that shape is.
  DimOrder ForGroup(const Shape& shape, absl::Span<const Value* const> outputs,
                    absl::Span<const Tensor> inputs) const;

 private:
  // Whether `order` may be given to `v`.
  DimOrder Allowed(const Value* v, DimOrder order) const;

  absl::flat_hash_set<const Value*> row_major_;
};

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_LAYOUT_PLAN_H_
