#include "graph/pass.h"

#include "absl/strings/str_cat.h"
#include "graph/verifier.h"

namespace tc {
namespace {

absl::Status InPass(const Pass& pass, absl::string_view stage, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("pass '", pass.name, "'", stage, ": ", s.message()));
}

}  // namespace

absl::StatusOr<bool> RunPasses(Graph& graph, absl::Span<const Pass> passes) {
  bool changed = false;
  for (const Pass& pass : passes) {
    absl::StatusOr<bool> c = pass.run(graph);
    if (!c.ok()) return InPass(pass, "", c.status());
    if (absl::Status s = Verify(graph); !s.ok()) return InPass(pass, " left an invalid graph", s);
    changed |= *c;
  }
  return changed;
}

}  // namespace tc
