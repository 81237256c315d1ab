// Checks the invariants every stage may rely on:
//  - types: each node's result types are what tc::InferTypes gives for its
//    operands and attributes (so a rewrite cannot leave a stale type);
//  - SSA: each value is defined once (names are unique), by a placeholder or
//    a node of this graph, before any node uses it;
//  - no dangling values: no operand or output whose producer was removed;
//  - outputs: each output is a live value of this graph;
//  - layouts: a value's layout is empty or channels-last on a rank-4 value,
//    and only on a result its kernel writes in it (an elementwise pass, a
//    view, or the first result of an op with kTraitChannelsLastResult);
//  - regions: a region op's body verifies, takes the node's operand types in
//    placeholders without layouts, and returns distinct node results, whose
//    types and layouts are the node's. It is a loop (fusible ops in f32, f64
//    or bool over one shape that the operands broadcast to, in one order,
//    and sums of their values, directly or through a reshape of a row-major
//    pass) or a kernel with an epilogue it takes (OpDef::epilogue): the rules
//    are spelled out at VerifyLoop and VerifyEpilogue in verifier.cc.
// The first broken rule is returned as an InvalidArgumentError naming the node by
// its printed line, e.g.
//   "node `%1: f32[4,3] = relu(%2)`: operand 0 (%2) is used before its definition"
#ifndef TENSORCUT_GRAPH_VERIFIER_H_
#define TENSORCUT_GRAPH_VERIFIER_H_

#include "absl/status/status.h"
#include "graph/ir.h"

namespace tc {

absl::Status Verify(const Graph& graph);

// The kernel leading an epilogue region's body: its first node, when the
// body has more than one and that node's op takes epilogues. nullptr for a
// loop region and for every other node. How the verifier, and every pass
// and program, tells the two kinds of region apart.
const Node* EpilogueKernel(const Node& node);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_VERIFIER_H_
