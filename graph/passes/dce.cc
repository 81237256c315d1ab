#include "graph/passes/dce.h"

namespace tc {

Pass DeadCodeElimination() {
  return {"dce", [](Graph& g) -> absl::StatusOr<bool> { return g.RemoveDeadNodes() > 0; }};
}

}  // namespace tc
