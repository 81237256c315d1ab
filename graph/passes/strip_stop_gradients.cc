#include "graph/passes/strip_stop_gradients.h"

#include "base/status_macros.h"

namespace tc {
namespace {

absl::StatusOr<bool> Run(Graph& g) {
  bool changed = false;
  for (Node* node : g.nodes()) {
    if (node->op() != OpKind::kStopGradient) continue;
    TC_RETURN_IF_ERROR(g.ReplaceAllUsesWith(node->result(0), node->input(0)));
    TC_RETURN_IF_ERROR(g.RemoveNode(node));
    changed = true;
  }
  return changed;
}

}  // namespace

Pass StripStopGradients() { return {"strip_stop_gradients", &Run}; }

}  // namespace tc
