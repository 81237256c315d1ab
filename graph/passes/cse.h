// Common-subexpression elimination: a node with the same op, the same
// operands and the same attributes as an earlier node is replaced by it (its
// uses and outputs move to the earlier node's results; the node is removed).
// Random ops (kTraitRandom) are never merged, though dropout is a pure
// function of its operands: merging them gains nothing worth the risk.
// The source of the kept node wins.
#ifndef TENSORCUT_GRAPH_PASSES_CSE_H_
#define TENSORCUT_GRAPH_PASSES_CSE_H_

#include "graph/pass.h"

namespace tc {

Pass CommonSubexpressionElimination();

}  // namespace tc

#endif  // TENSORCUT_GRAPH_PASSES_CSE_H_
