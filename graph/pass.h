// Passes: small named rewrites of a Graph, run as a readable list.
//
//   absl::StatusOr<bool> changed = RunPasses(graph, {
//       CommonSubexpressionElimination(),  // merge identical deterministic nodes
//       DeadCodeElimination(),             // then drop what nothing reads
//   });
//
// A pass returns whether it changed the graph, or an error. RunPasses verifies
// the graph (graph/verifier.h) after every pass, in every build: graphs are
// small, and a broken invariant is reported next to the pass that broke it.
#ifndef TENSORCUT_GRAPH_PASS_H_
#define TENSORCUT_GRAPH_PASS_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/ir.h"

namespace tc {

struct Pass {
  std::string name;
  std::function<absl::StatusOr<bool>(Graph&)> run;
};

// Runs `passes` in order; true if any changed the graph. An error from a pass
// or from the verifier after it is returned as "pass 'NAME': ...".
absl::StatusOr<bool> RunPasses(Graph& graph, absl::Span<const Pass> passes);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_PASS_H_
