// A Graph as Graphviz DOT (`dot -Tsvg g.dot > g.svg`): one DOT node per
// placeholder (an ellipse, "p<i>") and per op node (a box, "n<i>"), and an
// edge per operand labelled with the operand's type. A DotStyle colours and
// annotates them (partition/report.h's JointDot draws joint graphs in this
// same form, coloured by the partition).
//
//   DotStyle style;
//   style.node = [](const Node& node, DotItem& item) {
//     if (node.op() == OpKind::kMatmul) item.attrs = "fillcolor=gold";
//   };
//   std::string dot = GraphDot(graph, style);
#ifndef TENSORCUT_GRAPH_DOT_H_
#define TENSORCUT_GRAPH_DOT_H_

#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "graph/ir.h"

namespace tc {

// What one DOT node shows: `label` starts as "%name" for a placeholder and
// "op %first_result" for a node (lines may be added with '\n'); `attrs` are
// extra DOT attributes ("fillcolor=khaki, penwidth=3"), empty by default.
struct DotItem {
  std::string label;
  std::string attrs;
};

struct DotStyle {
  // `index`: the placeholder's position in graph.placeholders().
  std::function<void(const Value& placeholder, int index, DotItem& item)> placeholder;
  std::function<void(const Node& node, DotItem& item)> node;
};

// `name` names the digraph: a DOT identifier, not a keyword such as "graph".
// Nodes are filled (style=filled; Graphviz's default fill is light grey).
std::string GraphDot(const Graph& graph, const DotStyle& style = {}, absl::string_view name = "g");

// A DOT string literal: quotes and backslashes escaped, line breaks as DOT's
// centred "\n".
std::string DotString(absl::string_view s);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_DOT_H_
