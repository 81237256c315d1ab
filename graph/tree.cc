#include "graph/tree.h"

#include "absl/strings/str_join.h"
#include "graph/attrs.h"

namespace tc {

std::string ToString(const TreeSpec& spec) {
  return spec.ToString([](const NoLeaf&) { return std::string("*"); });
}

namespace tree_internal {

std::string FloatToString(double v) { return AttrValueToString(v); }

std::string Quoted(absl::string_view key) { return absl::StrCat("\"", key, "\""); }

std::string Describe(TreeKind kind, int64_t i, double f, size_t size,
                     const std::vector<std::string>& keys) {
  switch (kind) {
    case TreeKind::kLeaf:
      return "a leaf";
    case TreeKind::kNone:
      return "None";
    case TreeKind::kInt:
      return absl::StrCat("int ", i);
    case TreeKind::kFloat:
      return absl::StrCat("float ", FloatToString(f));
    case TreeKind::kTuple:
      return absl::StrCat("a tuple of ", size);
    case TreeKind::kList:
      return absl::StrCat("a list of ", size);
    case TreeKind::kDict:
      return absl::StrCat(
          "a dict with keys [",
          absl::StrJoin(keys, ", ",
                        [](std::string* out, const std::string& k) { out->append(Quoted(k)); }),
          "]");
  }
  return "";
}

}  // namespace tree_internal
}  // namespace tc
