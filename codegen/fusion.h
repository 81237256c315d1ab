// Elementwise fusion planning: which nodes of a graph run together as one pass
// over memory (codegen/fused_kernel.h runs such a group).
//
//   // h = x * w + b; r = relu(h); y = r * s; z = sum(h)
//   std::vector<FusionGroup> groups = PlanFusion(graph);
//   // one group {mul, add, relu, mul}: inputs x, w, b, s; outputs h (read by
//   // sum, outside the group) and y (a graph output)
//
// A group is a set of at least two fusible nodes (IsFusible below) with one result shape
// (operands may broadcast to it). Values computed in the group and read only inside it never reach
// memory; those read outside it or returned by the graph are its outputs.
//
// Planning is greedy and deterministic: nodes are visited in graph order, and
// a fusible node joins the groups of the producers of its operands (in operand
// order) whose shape equals its own, one group at a time, whenever the union
// stays schedulable as one step placed at its last node: every node outside
// the union that reads a value of the union comes after that last node. So a
// plan never reorders nodes outside groups.
#ifndef TENSORCUT_CODEGEN_FUSION_H_
#define TENSORCUT_CODEGEN_FUSION_H_

#include <vector>

#include "graph/ir.h"

namespace tc::codegen {

struct FusionGroup {
  std::vector<const Node*> nodes;     // in graph order; at least two from PlanFusion
  std::vector<const Value*> inputs;   // values read from outside, in order of first read
  std::vector<const Value*> outputs;  // results read outside or returned, in graph order
  Shape shape;                        // the shape of every node's result
};

// Fusible (kTraitFusible: the fused kernel evaluates it), every operand and
// result f32, f64 or bool (but a random op's i64 seed and offset); or a
// cast between f32 and bf16.
bool IsFusible(const Node& node);

// The groups of `graph`, ordered by their last node.
std::vector<FusionGroup> PlanFusion(const Graph& graph);

// `node`'s distinct operands, in order of first read.
std::vector<Value*> UniqueInputs(const Node& node);
// A lone fusible node as a group of one: its distinct operands and its
// results.
FusionGroup GroupOf(const Node& node);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FUSION_H_
