// Stop-gradient stripping: once a graph is differentiated, a stop_gradient
// node has done its work (no gradient flowed through it), so its readers read
// its input instead and the node goes. Lowering runs this first, so that a
// detach inside a model costs no copy in the compiled program.
#ifndef TENSORCUT_GRAPH_PASSES_STRIP_STOP_GRADIENTS_H_
#define TENSORCUT_GRAPH_PASSES_STRIP_STOP_GRADIENTS_H_

#include "graph/pass.h"

namespace tc {

Pass StripStopGradients();

}  // namespace tc

#endif  // TENSORCUT_GRAPH_PASSES_STRIP_STOP_GRADIENTS_H_
