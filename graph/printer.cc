#include "graph/printer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tc {
namespace {

void AppendName(std::string* out, const Value* v) { absl::StrAppend(out, "%", v->name()); }

void AppendTyped(std::string* out, const Value* v) {
  absl::StrAppend(out, "%", v->name(), ": ", v->type().ToString());
}

}  // namespace

std::string NodeToString(const Node& node) {
  std::string line = absl::StrJoin(node.results(), ", ", AppendTyped);
  absl::StrAppend(&line, " = ", OpName(node.op()), "(",
                  absl::StrJoin(node.inputs(), ", ", AppendName), ")");
  if (!node.attrs().entries().empty()) absl::StrAppend(&line, " ", node.attrs().ToString());
  if (!node.source().empty()) absl::StrAppend(&line, "  # ", node.source());
  return line;
}

std::string ToString(const Graph& graph) {
  std::string out =
      absl::StrCat("graph(", absl::StrJoin(graph.placeholders(), ", ", AppendTyped), ") {\n");
  for (const Node* node : graph.nodes()) absl::StrAppend(&out, "  ", NodeToString(*node), "\n");
  absl::StrAppend(&out, "  return (", absl::StrJoin(graph.outputs(), ", ", AppendName), ")\n}\n");
  return out;
}

}  // namespace tc
