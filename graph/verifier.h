// Checks the invariants every stage may rely on:
//  - types: each node's result types are what tc::InferTypes gives for its
//    operands and attributes (so a rewrite cannot leave a stale type);
//  - SSA: each value is defined once (names are unique), by a placeholder or
//    a node of this graph, before any node uses it;
//  - no dangling values: no operand or output whose producer was removed;
//  - outputs: each output is a live value of this graph;
//  - layouts: a value's layout is empty or channels-last on a rank-4 value;
//  - regions: a region op's body (a fused pass) verifies, takes the node's
//    operand types, each broadcasting to one shape that every body result
//    has, holds only fusible ops (kTraitFusible) in f32, f64 or bool, and
//    returns distinct node results, whose types are the node's.
// The first broken rule is returned as an InvalidArgumentError naming the node by
// its printed line, e.g.
//   "node `%1: f32[4,3] = relu(%2)`: operand 0 (%2) is used before its definition"
#ifndef TENSORCUT_GRAPH_VERIFIER_H_
#define TENSORCUT_GRAPH_VERIFIER_H_

#include "absl/status/status.h"
#include "graph/ir.h"

namespace tc {

absl::Status Verify(const Graph& graph);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_VERIFIER_H_
