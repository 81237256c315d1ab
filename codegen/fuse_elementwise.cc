#include "codegen/fuse_elementwise.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/status_macros.h"
#include "codegen/fusion.h"

namespace tc::codegen {
namespace {

// Where each value of the graph being rebuilt went in the new one.
using ValueMap = absl::flat_hash_map<const Value*, Value*>;

std::vector<Value*> Mapped(const ValueMap& map, absl::Span<const Value* const> values) {
  std::vector<Value*> out;
  for (const Value* v : values) out.push_back(map.at(v));
  return out;
}

std::vector<std::string> NamesOf(absl::Span<const Value* const> values) {
  std::vector<std::string> names;
  for (const Value* v : values) names.push_back(v->name());
  return names;
}

// Adds a copy of `node` to `graph`, its operands mapped and its results
// named as they were.
absl::Status CopyNode(const Node& node, Graph& graph, ValueMap& map) {
  const std::vector<const Value*> inputs(node.inputs().begin(), node.inputs().end());
  const std::vector<const Value*> results(node.results().begin(), node.results().end());
  TC_ASSIGN_OR_RETURN(std::vector<Value*> copied,
                      graph.AddCopyOf(node, Mapped(map, inputs), NamesOf(results)));
  for (size_t r = 0; r < results.size(); ++r) map[results[r]] = copied[r];
  return absl::OkStatus();
}

absl::StatusOr<bool> Run(Graph& graph) {
  const std::vector<FusionGroup> groups = PlanFusion(graph);
  if (groups.empty()) return false;
  absl::flat_hash_map<const Node*, const FusionGroup*> group_of;
  for (const FusionGroup& g : groups) {
    for (const Node* n : g.nodes) group_of[n] = &g;
  }
  Graph fused;
  ValueMap map;
  for (const Value* p : graph.placeholders()) map[p] = fused.AddPlaceholder(p->name(), p->type());
  for (const Node* node : graph.nodes()) {
    auto g = group_of.find(node);
    if (g == group_of.end()) {
      TC_RETURN_IF_ERROR(CopyNode(*node, fused, map));
      continue;
    }
    const FusionGroup& group = *g->second;
    if (node != group.nodes.back()) continue;  // the group stands at its last node
    TC_ASSIGN_OR_RETURN(Graph body, BodyOf(group));
    TC_ASSIGN_OR_RETURN(
        std::vector<Value*> results,
        fused.AddRegionNode(OpKind::kFused, Mapped(map, group.inputs), std::move(body),
                            node->source(), NamesOf(group.outputs)));
    for (size_t r = 0; r < results.size(); ++r) map[group.outputs[r]] = results[r];
  }
  const std::vector<const Value*> outputs(graph.outputs().begin(), graph.outputs().end());
  TC_RETURN_IF_ERROR(fused.SetOutputs(Mapped(map, outputs)));
  graph = std::move(fused);
  return true;
}

}  // namespace

absl::StatusOr<Graph> BodyOf(const FusionGroup& group) {
  Graph body;
  ValueMap map;
  for (const Value* in : group.inputs) map[in] = body.AddPlaceholder(in->name(), in->type());
  for (const Node* node : group.nodes) TC_RETURN_IF_ERROR(CopyNode(*node, body, map));
  TC_RETURN_IF_ERROR(body.SetOutputs(Mapped(map, group.outputs)));
  return body;
}

Pass FuseElementwise() { return {"fuse-elementwise", &Run}; }

}  // namespace tc::codegen
