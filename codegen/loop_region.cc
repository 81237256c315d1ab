#include "codegen/loop_region.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/fuse_elementwise.h"
#include "codegen/fusion.h"

namespace tc::codegen {

absl::StatusOr<std::optional<LoopRegion>> LoopRegionOf(const Node& node) {
  if (node.body() != nullptr) {
    if (EpilogueKernel(node) != nullptr) return std::nullopt;
    return LoopRegion{node.body()->Clone(), node.inputs()};
  }
  if (!IsFusible(node)) return std::nullopt;
  TC_ASSIGN_OR_RETURN(Graph body, BodyOf(GroupOf(node)));
  return LoopRegion{std::move(body), UniqueInputs(node)};
}

absl::Status ReplaceByRegion(Graph& graph, absl::Span<Node* const> old_nodes,
                             absl::Span<Value* const> replaced, const Node* position,
                             std::vector<Value*> inputs, Graph body) {
  if (replaced.size() != body.outputs().size()) {
    return absl::InternalError(absl::StrCat("ReplaceByRegion: ", replaced.size(),
                                            " values for a body of ", body.outputs().size(),
                                            " outputs"));
  }
  TC_ASSIGN_OR_RETURN(
      std::vector<Value*> results,
      graph.AddRegionNode(OpKind::kFused, inputs, std::move(body), position->source()));
  TC_RETURN_IF_ERROR(graph.MoveBefore(results[0]->producer(), position));
  for (size_t i = 0; i < results.size(); ++i) {
    TC_RETURN_IF_ERROR(graph.ReplaceAllUsesWith(replaced[i], results[i]));
  }
  // Users first: an old node may read another's result.
  for (auto it = old_nodes.rbegin(); it != old_nodes.rend(); ++it) {
    TC_RETURN_IF_ERROR(graph.RemoveNode(*it));
  }
  for (size_t i = 0; i < results.size(); ++i) graph.RenameValue(results[i], replaced[i]->name());
  return absl::OkStatus();
}

}  // namespace tc::codegen
