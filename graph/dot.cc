#include "graph/dot.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tc {

std::string DotString(absl::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out + "\"";
}

std::string GraphDot(const Graph& graph, const DotStyle& style, absl::string_view name) {
  std::string out =
      absl::StrCat("digraph ", name,
                   " {\n"
                   "  node [shape=box, style=filled, fontname=Helvetica, fontsize=10];\n"
                   "  edge [fontname=Helvetica, fontsize=8];\n");
  auto attrs = [](const DotItem& item) {
    return item.attrs.empty() ? std::string() : absl::StrCat(", ", item.attrs);
  };
  absl::flat_hash_map<const Value*, std::string> dot_id;
  const std::vector<Value*>& placeholders = graph.placeholders();
  for (size_t i = 0; i < placeholders.size(); ++i) {
    const Value* p = placeholders[i];
    DotItem item{absl::StrCat("%", p->name()), ""};
    if (style.placeholder) style.placeholder(*p, static_cast<int>(i), item);
    absl::StrAppendFormat(&out, "  p%d [shape=ellipse, label=%s%s];\n", i, DotString(item.label),
                          attrs(item));
    dot_id[p] = absl::StrCat("p", i);
  }
  const std::vector<Node*> nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    DotItem item{absl::StrCat(OpName(n->op()), " %", n->result(0)->name()), ""};
    if (style.node) style.node(*n, item);
    absl::StrAppendFormat(&out, "  n%d [label=%s%s];\n", i, DotString(item.label), attrs(item));
    for (const Value* r : n->results()) dot_id[r] = absl::StrCat("n", i);
    for (const Value* in : n->inputs()) {
      absl::StrAppendFormat(&out, "  %s -> n%d [label=%s];\n", dot_id.at(in), i,
                            DotString(in->type().ToString()));
    }
  }
  return out + "}\n";
}

}  // namespace tc
