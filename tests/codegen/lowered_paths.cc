#include "tests/codegen/lowered_paths.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/verifier.h"

namespace tc::testing {
namespace {

std::string OpNames(const std::vector<Node*>& nodes, absl::string_view separator) {
  return absl::StrJoin(nodes, separator, [](std::string* out, const Node* n) {
    absl::StrAppend(out, OpName(n->op()));
  });
}

bool Matches(absl::string_view line, absl::string_view pattern) {
  const std::vector<absl::string_view> pieces = absl::StrSplit(pattern, '*');
  if (!absl::StartsWith(line, pieces[0])) return false;
  size_t at = pieces[0].size();
  for (size_t i = 1; i < pieces.size(); ++i) {
    at = line.find(pieces[i], at);
    if (at == absl::string_view::npos) return false;
    at += pieces[i].size();
  }
  return pieces.size() > 1 || line.size() == at;
}

}  // namespace

std::vector<std::string> LoweredPaths(const Graph& lowered) {
  std::vector<std::string> paths;
  for (const Node* node : lowered.nodes()) {
    std::string path;
    const Value* laid_out = node->result(0);
    if (EpilogueKernel(*node) != nullptr) {
      path = OpNames(node->body()->nodes(), "+");
    } else if (node->body() != nullptr) {
      path = absl::StrCat("fused{", OpNames(node->body()->nodes(), " "), "}");
      laid_out = node->body()->nodes()[0]->result(0);  // the pass's order
    } else {
      path = std::string(OpName(node->op()));
      if (node->op() == OpKind::kConv2d && node->num_inputs() == 3) path += "+bias";
    }
    if (laid_out->layout() == kChannelsLast) path += ":nhwc";
    paths.push_back(std::move(path));
  }
  return paths;
}

bool HasPath(const std::vector<std::string>& paths, absl::string_view pattern) {
  for (const std::string& path : paths) {
    if (Matches(path, pattern)) return true;
  }
  return false;
}

}  // namespace tc::testing
