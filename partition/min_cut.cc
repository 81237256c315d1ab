#include "partition/min_cut.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "partition/max_flow.h"

namespace tc::partition {
namespace {

constexpr int kSource = 0;
constexpr int kSink = 1;

// The forward values in flow-node order: the primals, then the results of
// the nodes the forward outputs need, in the joint graph's order.
struct ForwardValues {
  std::vector<Value*> values;
  absl::flat_hash_map<const Value*, int> index;  // into `values`

  int In(const Value* v) const { return 2 + 2 * index.at(v); }
  int Out(const Value* v) const { return 3 + 2 * index.at(v); }
  void Add(Value* v) {
    index[v] = static_cast<int>(values.size());
    values.push_back(v);
  }
};

// Marks, walking `nodes` backwards, each node with a result in `needed` for
// which `take` holds, and adds its operands to `needed`. Returns the marked
// nodes in graph order.
template <typename Take>
std::vector<const Node*> NeededNodes(const std::vector<Node*>& nodes,
                                     absl::flat_hash_set<const Value*>& needed, Take take) {
  std::vector<const Node*> marked;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node* node = *it;
    bool is_needed = false;
    for (const Value* r : node->results()) is_needed |= needed.contains(r);
    if (!is_needed || !take(node)) continue;
    marked.push_back(node);
    needed.insert(node->inputs().begin(), node->inputs().end());
  }
  std::reverse(marked.begin(), marked.end());
  return marked;
}

}  // namespace

bool MayRecompute(const Node& node) {
  const OpDef& def = node.def();
  if (def.Has(kTraitExpensive) || def.Has(kTraitCollective)) return false;
  if (def.Has(kTraitElementwise) || def.Has(kTraitView) || def.Has(kTraitCreation)) return true;
  if (node.op() == OpKind::kBatchNorm || node.op() == OpKind::kLayerNorm) return true;
  if (def.family == OpFamily::kReduction) {
    return node.input(0)->type().numel() <=
           kMaxRecomputedReductionRatio * node.result(0)->type().numel();
  }
  return false;
}

bool IsRecomputable(const Node& node) {
  return !node.def().Has(kTraitExpensive) && !node.def().Has(kTraitCollective);
}

absl::StatusOr<SaveOrRecompute> MakeSaveOrRecompute(const Graph& joint, const JointLayout& layout) {
  TC_RETURN_IF_ERROR(CheckJointLayout(joint, layout));
  const std::vector<Node*> nodes = joint.nodes();
  const JointParts parts = SplitJoint(joint, layout);
  SaveOrRecompute problem;
  absl::flat_hash_set<const Value*> fw_needed(parts.fw_outputs.begin(), parts.fw_outputs.end());
  problem.forward_nodes = NeededNodes(nodes, fw_needed, [](const Node*) { return true; });
  for (const Value* tangent : parts.tangents) {
    if (fw_needed.contains(tangent)) {
      return absl::InvalidArgumentError(
          absl::StrCat("a forward output depends on the tangent %", tangent->name()));
    }
  }
  problem.forward_values = parts.primals;
  for (const Node* node : problem.forward_nodes) {
    problem.forward_values.insert(problem.forward_values.end(), node->results().begin(),
                                  node->results().end());
  }
  const absl::flat_hash_set<const Node*> fw_node_set(problem.forward_nodes.begin(),
                                                     problem.forward_nodes.end());
  absl::flat_hash_set<const Value*> bw_needed(parts.gradients.begin(), parts.gradients.end());
  NeededNodes(nodes, bw_needed, [&](const Node* n) { return !fw_node_set.contains(n); });
  for (const Value* v : problem.forward_values) {
    if (bw_needed.contains(v)) problem.read_by_backward.insert(v);
  }
  return problem;
}

absl::StatusOr<std::vector<Value*>> MinCutSavedValues(const Graph& joint, const JointLayout& layout,
                                                      const MinCutOptions& options) {
  TC_ASSIGN_OR_RETURN(const SaveOrRecompute problem, MakeSaveOrRecompute(joint, layout));
  ForwardValues fw;
  for (Value* v : problem.forward_values) fw.Add(v);
  for (const Value* v : options.pinned) {
    if (!fw.index.contains(v)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pinned value %", v->name(), " is not a primal or a value the forward outputs need"));
    }
  }
  FlowGraph flow(2 + 2 * static_cast<int>(fw.values.size()));
  for (const Value* v : fw.values) {
    if (v->is_placeholder()) flow.AddEdge(kSource, fw.In(v), kInfiniteCapacity);
  }
  // A value costs its bytes, scaled so that one more unit breaks ties
  // between cuts of equal bytes: against a view (a transposed weight saved
  // instead of the weight would reach the backward strided, and be copied).
  constexpr int64_t kBytesScale = 1024;
  for (const Value* v : fw.values) {
    const bool view = !v->is_placeholder() && v->producer()->def().Has(kTraitView);
    flow.AddEdge(fw.In(v), fw.Out(v), v->type().bytes() * kBytesScale + (view ? 1 : 0));
  }
  for (const Node* node : problem.forward_nodes) {
    const bool recompute = options.may_recompute(*node) &&
                           std::none_of(node->results().begin(), node->results().end(),
                                        [&](const Value* r) { return options.pinned.contains(r); });
    for (const Value* r : node->results()) {
      if (!recompute) flow.AddEdge(kSource, fw.In(r), kInfiniteCapacity);
      for (const Value* in : node->inputs()) flow.AddEdge(fw.Out(in), fw.In(r), kInfiniteCapacity);
    }
  }

  for (const Value* v : fw.values) {
    if (problem.read_by_backward.contains(v)) flow.AddEdge(fw.Out(v), kSink, kInfiniteCapacity);
  }
  // Of the minimum cuts, the one closest to the sink: where saving a value
  // or its elementwise successor costs the same bytes (a linear's output or
  // its relu), it saves the later one, which the backward then need not
  // recompute.
  const MinCut cut = MaxFlowMinCut(flow, kSource, kSink);
  std::vector<Value*> saved;
  for (Value* v : fw.values) {
    if (!cut.reaches_sink[fw.In(v)] && cut.reaches_sink[fw.Out(v)]) saved.push_back(v);
  }
  return saved;
}

absl::StatusOr<PartitionResult> MinCutPartition(const Graph& joint, const JointLayout& layout) {
  TC_ASSIGN_OR_RETURN(std::vector<Value*> saved, MinCutSavedValues(joint, layout, MinCutOptions{}));
  return AssemblePartition(joint, layout, saved);
}

}  // namespace tc::partition
