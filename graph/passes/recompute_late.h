// Recompute late: in a backward graph, runs each recomputation just before
// the first node that needs it, as the autograd engine would, instead of
// where the joint graph's order put it (all recomputation first, so every
// recomputed value would be live from the backward's start to its use).
//
//   RunPasses(part.backward, {RecomputeLate(/*first_tangent=*/num_saved)});
//
// The placeholders from `first_tangent` on are the tangents. A node that
// reads a tangent, directly or through other nodes, keeps its place
// relative to the others like it; each other node (one computed from saved
// values alone: a recomputation) moves to just before its first reader,
// after the recomputations it reads, or to the end when only outputs read it.
// Nodes compute the same values in any valid order: random ops read their
// seed and offset as operands (graph/op_def.h's kTraitRandom).
#ifndef TENSORCUT_GRAPH_PASSES_RECOMPUTE_LATE_H_
#define TENSORCUT_GRAPH_PASSES_RECOMPUTE_LATE_H_

#include "graph/pass.h"

namespace tc {

Pass RecomputeLate(int first_tangent);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_PASSES_RECOMPUTE_LATE_H_
