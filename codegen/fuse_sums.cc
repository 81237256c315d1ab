#include "codegen/fuse_sums.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "base/status_macros.h"
#include "codegen/fused_kernel.h"
#include "codegen/fusion.h"
#include "codegen/loop_region.h"
#include "graph/op_attrs.h"

namespace tc::codegen {
namespace {

// A sum the pass moves: the region result it sums, and the reshapes between.
struct MovedSum {
  Node* sum;
  Value* base;                  // a result of the region
  std::vector<Node*> reshapes;  // from base's reader to the sum's operand
};

// The sum as one the region producing its (reshaped) operand can take, or
// nullopt.
std::optional<MovedSum> Match(Node* sum) {
  if (sum->op() != OpKind::kSum) return std::nullopt;
  const TensorType& summed = sum->input(0)->type();
  if (summed.dtype != DType::kF32 && summed.dtype != DType::kF64) return std::nullopt;
  MovedSum moved{sum, sum->input(0), {}};
  while (moved.base->producer() != nullptr && moved.base->producer()->op() == OpKind::kReshape) {
    moved.reshapes.insert(moved.reshapes.begin(), moved.base->producer());
    moved.base = moved.base->producer()->input(0);
  }
  // The base must be computed by a loop region's pass (not be a sum it
  // returns already), or by a lone fusible node.
  const Node* region = moved.base->producer();
  if (region == nullptr) return std::nullopt;
  if (region->body() != nullptr) {
    const Value* computed = region->body()->outputs()[moved.base->index()];
    if (EpilogueKernel(*region) != nullptr || !computed->producer()->def().Has(kTraitFusible)) {
      return std::nullopt;
    }
  } else if (!IsFusible(*region)) {
    return std::nullopt;
  }
  // The region's pass runs in its results' order; a reshape is a view of a
  // row-major result only.
  const DimOrder& order = moved.base->layout();
  if (!moved.reshapes.empty() && !order.empty()) return std::nullopt;
  if (!FusedKernel::CanSum(summed.shape, order, ReducedDimsOf(sum->attrs(), summed.rank()))) {
    return std::nullopt;
  }
  return moved;
}

// Moves `sums` into the region of `region_node`.
absl::Status MoveInto(Graph& graph, Node* region_node, const std::vector<MovedSum>& sums) {
  TC_ASSIGN_OR_RETURN(std::optional<LoopRegion> region, LoopRegionOf(*region_node));
  if (!region) return absl::InternalError("fuse-sums: a sum of no loop region's result");
  Graph& body = region->body;
  // Nodes that go: the sums, and reshapes only they (and other such reshapes) read.
  absl::flat_hash_set<const Node*> removed = {region_node};
  for (const MovedSum& s : sums) removed.insert(s.sum);
  for (const MovedSum& s : sums) {
    for (auto it = s.reshapes.rbegin(); it != s.reshapes.rend(); ++it) {
      const Value* r = (*it)->result(0);
      bool only_removed = !r->is_output();
      for (const Use& use : r->uses()) only_removed = only_removed && removed.contains(use.user);
      if (!only_removed) break;
      removed.insert(*it);
    }
  }
  std::vector<Value*> outputs, replaced;
  for (int i = 0; i < region_node->num_results(); ++i) {
    Value* r = region_node->result(i);
    bool read = r->is_output();
    for (const Use& use : r->uses()) read = read || !removed.contains(use.user);
    if (!read) continue;
    outputs.push_back(body.outputs()[i]);
    replaced.push_back(r);
  }
  for (const MovedSum& s : sums) {
    Value* summed = body.outputs()[s.base->index()];
    if (!s.reshapes.empty()) {
      const Shape& shape = s.sum->input(0)->type().shape;
      TC_ASSIGN_OR_RETURN(
          const std::vector<Value*> reshaped,
          body.AddNode(OpKind::kReshape, {summed},
                       {{"shape", std::vector<int64_t>(shape.begin(), shape.end())}}, "",
                       {s.sum->input(0)->name()}));
      summed = reshaped[0];
    }
    TC_ASSIGN_OR_RETURN(const std::vector<Value*> sum,
                        body.AddCopyOf(*s.sum, {summed}, {s.sum->result(0)->name()}));
    outputs.push_back(sum[0]);
    replaced.push_back(s.sum->result(0));
  }
  TC_RETURN_IF_ERROR(body.SetOutputs(std::move(outputs)));
  std::vector<Node*> old_nodes;
  for (Node* n : graph.nodes()) {
    if (removed.contains(n)) old_nodes.push_back(n);
  }
  return ReplaceByRegion(graph, old_nodes, replaced, region_node, region->inputs, std::move(body));
}

absl::StatusOr<bool> Run(Graph& graph) {
  std::vector<Node*> regions;  // in order of their first moved sum
  absl::flat_hash_map<Node*, std::vector<MovedSum>> sums;
  for (Node* node : graph.nodes()) {
    std::optional<MovedSum> moved = Match(node);
    if (!moved) continue;
    Node* region = moved->base->producer();
    if (!sums.contains(region)) regions.push_back(region);
    sums[region].push_back(*std::move(moved));
  }
  for (Node* region : regions) TC_RETURN_IF_ERROR(MoveInto(graph, region, sums.at(region)));
  return !regions.empty();
}

}  // namespace

Pass FuseSums() { return {"fuse-sums", &Run}; }

}  // namespace tc::codegen
