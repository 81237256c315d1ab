// Dead-code elimination: removes every node whose results are transitively
// unused (neither read by a live node nor a graph output). Placeholders stay:
// they are the graph's calling convention.
#ifndef TENSORCUT_GRAPH_PASSES_DCE_H_
#define TENSORCUT_GRAPH_PASSES_DCE_H_

#include "graph/pass.h"

namespace tc {

Pass DeadCodeElimination();

}  // namespace tc

#endif  // TENSORCUT_GRAPH_PASSES_DCE_H_
