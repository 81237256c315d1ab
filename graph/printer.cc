#include "graph/printer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tc {
namespace {

void AppendName(std::string* out, const Value* v) { absl::StrAppend(out, "%", v->name()); }

void AppendTyped(std::string* out, const Value* v) {
  absl::StrAppend(out, "%", v->name(), ": ", v->type().ToString(),
                  v->layout() == kChannelsLast ? ":nhwc" : "");
}

// "%0: f32[4,3] = op(%x) {attrs}": a node's line without its source.
std::string NodeHead(const Node& node) {
  std::string line = absl::StrJoin(node.results(), ", ", AppendTyped);
  absl::StrAppend(&line, " = ", OpName(node.op()), "(",
                  absl::StrJoin(node.inputs(), ", ", AppendName), ")");
  if (!node.attrs().entries().empty()) absl::StrAppend(&line, " ", node.attrs().ToString());
  return line;
}

void AppendSource(std::string* out, const Node& node) {
  if (!node.source().empty()) absl::StrAppend(out, "  # ", node.source());
}

// The graph's text with every line after the first `indent` deeper.
void AppendGraph(std::string* out, const Graph& graph, absl::string_view indent) {
  absl::StrAppend(out, "graph(", absl::StrJoin(graph.placeholders(), ", ", AppendTyped), ") {\n");
  for (const Node* node : graph.nodes()) {
    absl::StrAppend(out, indent, "  ", NodeHead(*node));
    if (node->body() == nullptr) {
      AppendSource(out, *node);
      absl::StrAppend(out, "\n");
      continue;
    }
    absl::StrAppend(out, " {");
    AppendSource(out, *node);
    absl::StrAppend(out, "\n", indent, "    ");
    AppendGraph(out, *node->body(), absl::StrCat(indent, "    "));
    absl::StrAppend(out, indent, "  }\n");
  }
  absl::StrAppend(out, indent, "  return (", absl::StrJoin(graph.outputs(), ", ", AppendName),
                  ")\n", indent, "}\n");
}

}  // namespace

std::string NodeToString(const Node& node) {
  std::string line = NodeHead(node);
  AppendSource(&line, node);
  return line;
}

std::string ToString(const Graph& graph) {
  std::string out;
  AppendGraph(&out, graph, "");
  return out;
}

}  // namespace tc
