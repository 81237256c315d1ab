#include "graph/passes/recompute_late.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace tc {
namespace {

absl::StatusOr<bool> Run(Graph& g, int first_tangent) {
  const std::vector<Value*>& placeholders = g.placeholders();
  if (first_tangent < 0 || first_tangent > static_cast<int>(placeholders.size())) {
    return absl::InvalidArgumentError(absl::StrCat("first tangent ", first_tangent,
                                                   " is not a placeholder index of a graph of ",
                                                   placeholders.size(), " placeholders"));
  }
  const std::vector<Node*> nodes = g.nodes();
  // The nodes that read a tangent, directly or through others.
  absl::flat_hash_set<const Value*> from_tangents(placeholders.begin() + first_tangent,
                                                  placeholders.end());
  absl::flat_hash_set<const Node*> anchored;
  for (Node* node : nodes) {
    bool reads_tangent = false;
    for (const Value* input : node->inputs()) reads_tangent |= from_tangents.contains(input);
    if (!reads_tangent) continue;
    anchored.insert(node);
    for (const Value* result : node->results()) from_tangents.insert(result);
  }

  // The new order: anchored nodes as they were, each preceded by the
  // recomputations it reads that have not run yet (depth first, operands in
  // order), then whatever only the outputs read.
  std::vector<Node*> order;
  absl::flat_hash_set<const Node*> placed;
  const auto place = [&](Node* root) {
    std::vector<std::pair<Node*, size_t>> stack = {{root, 0}};
    while (!stack.empty()) {
      auto& [node, next_input] = stack.back();
      if (next_input < node->inputs().size()) {
        Node* producer = node->input(next_input++)->producer();
        if (producer != nullptr && !placed.contains(producer)) stack.push_back({producer, 0});
        continue;
      }
      if (placed.insert(node).second) order.push_back(node);
      stack.pop_back();
    }
  };
  for (Node* node : nodes) {
    if (anchored.contains(node)) place(node);
  }
  for (Node* node : nodes) place(node);

  if (order == nodes) return false;
  // Each node before its successor in `order`, from the back: the suffix
  // placed so far stays contiguous.
  for (int i = static_cast<int>(order.size()) - 2; i >= 0; --i) {
    TC_RETURN_IF_ERROR(g.MoveBefore(order[i], order[i + 1]));
  }
  return true;
}

}  // namespace

Pass RecomputeLate(int first_tangent) {
  return {"recompute_late", [first_tangent](Graph& g) { return Run(g, first_tangent); }};
}

}  // namespace tc
