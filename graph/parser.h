// Reads the text form printed by graph/printer.h back into a Graph, so that
// ToString(*Parse(ToString(g))) == ToString(g).
//
//   absl::StatusOr<Graph> g = Parse(R"(graph(%x: f32[4,3]) {
//     %0: f32[4,3] = relu(%x)
//     return (%0)
//   })");
//
// Every node goes through Graph::AddNode (a region op, with its body parsed
// as a graph, through Graph::AddRegionNode), so shape inference checks it, and
// a declared result type must equal the inferred one. A body holds no region
// ops; the rest of a body's rules are the verifier's (graph/verifier.h). Malformed text gives an
// InvalidArgumentError "line L, column C: <what was expected, what came>".
#ifndef TENSORCUT_GRAPH_PARSER_H_
#define TENSORCUT_GRAPH_PARSER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/ir.h"

namespace tc {

absl::StatusOr<Graph> Parse(absl::string_view text);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_PARSER_H_
