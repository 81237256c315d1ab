#include "graph/passes/cse.h"

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/printer.h"

namespace tc {
namespace {

// Op, operand identities and attributes (whose text form is exact, doubles
// included) as one hashable key; a region op's body in its text form too.
std::string Key(const Node& node) {
  std::string key = absl::StrCat(static_cast<int>(node.op()), "(");
  for (const Value* v : node.inputs()) absl::StrAppend(&key, reinterpret_cast<uintptr_t>(v), ",");
  absl::StrAppend(&key, ")", node.attrs().ToString());
  if (node.body() != nullptr) absl::StrAppend(&key, ToString(*node.body()));
  return key;
}

absl::StatusOr<bool> Run(Graph& g) {
  absl::flat_hash_map<std::string, Node*> seen;
  bool changed = false;
  // In topological order, so a merge that makes later operands equal is seen
  // when the later node is reached.
  for (Node* node : g.nodes()) {
    if (node->def().Has(kTraitRandom) || node->def().Has(kTraitCollective)) continue;
    auto [it, inserted] = seen.try_emplace(Key(*node), node);
    if (inserted) continue;
    for (int i = 0; i < node->num_results(); ++i) {
      TC_RETURN_IF_ERROR(g.ReplaceAllUsesWith(node->result(i), it->second->result(i)));
    }
    TC_RETURN_IF_ERROR(g.RemoveNode(node));
    changed = true;
  }
  return changed;
}

}  // namespace

Pass CommonSubexpressionElimination() { return {"cse", &Run}; }

}  // namespace tc
