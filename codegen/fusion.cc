#include "codegen/fusion.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace tc::codegen {
namespace {

bool FusibleDType(DType d) { return d == DType::kF32 || d == DType::kF64 || d == DType::kBool; }

// A cast between f32 and bf16 (mixed precision's, codegen/autocast.h): a
// pass converts as it reads or writes, so the operand of a bf16 product is
// written by the pass that computes it, with no pass of its own.
bool IsBf16Cast(const Node& node) {
  if (node.op() != OpKind::kCast) return false;
  const DType from = node.input(0)->type().dtype, to = node.result(0)->type().dtype;
  return (from == DType::kF32 && to == DType::kBF16) || (from == DType::kBF16 && to == DType::kF32);
}

}  // namespace

bool IsFusible(const Node& node) {
  if (!node.def().Has(kTraitFusible)) return false;
  if (IsBf16Cast(node)) return true;
  for (int i = 0; i < node.num_inputs(); ++i) {
    const TensorType& t = node.input(i)->type();
    // A random op's seed and offset are i64 scalars.
    if (i > 0 && node.def().Has(kTraitRandom) && t == TensorType{DType::kI64, {}}) continue;
    if (!FusibleDType(t.dtype)) return false;
  }
  for (const Value* v : node.results()) {
    if (!FusibleDType(v->type().dtype)) return false;
  }
  return true;
}

std::vector<Value*> UniqueInputs(const Node& node) {
  std::vector<Value*> inputs;
  for (Value* in : node.inputs()) {
    if (std::find(inputs.begin(), inputs.end(), in) == inputs.end()) inputs.push_back(in);
  }
  return inputs;
}

FusionGroup GroupOf(const Node& node) {
  const std::vector<Value*> inputs = UniqueInputs(node);
  return {{&node},
          {inputs.begin(), inputs.end()},
          {node.results().begin(), node.results().end()},
          node.result(0)->type().shape};
}

std::vector<FusionGroup> PlanFusion(const Graph& graph) {
  const std::vector<Node*> nodes = graph.nodes();
  absl::flat_hash_map<const Node*, int> position;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) position[nodes[i]] = i;

  // Groups under construction: member positions, and each member's group.
  std::vector<std::vector<int>> members;
  std::vector<int> group_of(nodes.size(), -1);
  for (int n = 0; n < static_cast<int>(nodes.size()); ++n) {
    const Node& node = *nodes[n];
    if (!IsFusible(node)) continue;
    const Shape& shape = node.result(0)->type().shape;
    const int g = group_of[n] = static_cast<int>(members.size());
    members.push_back({n});
    for (const Value* in : node.inputs()) {
      if (in->is_placeholder() || in->type().shape != shape) continue;
      const int other = group_of[position.at(in->producer())];
      if (other < 0 || other == g) continue;
      // Every reader of `other` outside the union must come after node n.
      bool schedulable = true;
      for (int m : members[other]) {
        for (const Value* r : nodes[m]->results()) {
          for (const Use& use : r->uses()) {
            const int u = position.at(use.user);
            const int ug = group_of[u];
            if (ug != g && ug != other && u < n) schedulable = false;
          }
        }
      }
      if (!schedulable) continue;
      for (int m : members[other]) group_of[m] = g;
      members[g].insert(members[g].end(), members[other].begin(), members[other].end());
      members[other].clear();
    }
  }

  std::vector<std::vector<int>> kept;
  for (std::vector<int>& m : members) {
    // A group needs two nodes that compute. One node with only its casts
    // stays alone: a lone node after a product may become the product's
    // epilogue (codegen/fold_post_ops.h: linear+relu), which saves more
    // than writing the cast in its pass; the casts then run by themselves.
    const auto computes = [&](int i) { return !IsBf16Cast(*nodes[i]); };
    if (std::count_if(m.begin(), m.end(), computes) < 2) continue;
    std::sort(m.begin(), m.end());
    kept.push_back(std::move(m));
  }
  std::sort(kept.begin(), kept.end(), [](const std::vector<int>& a, const std::vector<int>& b) {
    return a.back() < b.back();
  });

  std::vector<FusionGroup> groups;
  for (const std::vector<int>& m : kept) {
    FusionGroup group;
    group.shape = nodes[m[0]]->result(0)->type().shape;
    absl::flat_hash_set<const Node*> inside;
    for (int i : m) inside.insert(nodes[i]);
    absl::flat_hash_set<const Value*> seen;
    for (int i : m) {
      const Node* node = nodes[i];
      group.nodes.push_back(node);
      for (const Value* in : node->inputs()) {
        if ((in->is_placeholder() || !inside.contains(in->producer())) && seen.insert(in).second) {
          group.inputs.push_back(in);
        }
      }
      for (const Value* r : node->results()) {
        bool read_outside = r->is_output();
        for (const Use& use : r->uses()) read_outside |= !inside.contains(use.user);
        if (read_outside) group.outputs.push_back(r);
      }
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace tc::codegen
