#include "partition/accounting.h"

#include <string>

#include "absl/container/flat_hash_set.h"

namespace tc::partition {

bool IsInputOrViewOfInput(const Value& value) {
  const Value* v = &value;
  while (!v->is_placeholder()) {
    const Node* producer = v->producer();
    if (!producer->def().Has(kTraitView)) return false;
    v = producer->input(0);
  }
  return true;
}

bool IsActivation(const Graph& joint, const SavedValue& saved) {
  const Value* v = joint.FindValue(saved.name);
  return v == nullptr || !IsInputOrViewOfInput(*v);
}

int64_t SavedActivationBytes(const Graph& joint, const PartitionResult& part) {
  int64_t bytes = 0;
  for (const SavedValue& s : part.saved) {
    if (IsActivation(joint, s)) bytes += s.bytes;
  }
  return bytes;
}

std::vector<const Node*> RecomputedNodes(const PartitionResult& part) {
  absl::flat_hash_set<std::string> forward_results;
  for (const Node* node : part.forward.nodes()) {
    for (const Value* r : node->results()) forward_results.insert(r->name());
  }
  std::vector<const Node*> recomputed;
  for (const Node* node : part.backward.nodes()) {
    if (forward_results.contains(node->result(0)->name())) recomputed.push_back(node);
  }
  return recomputed;
}

RecomputeStats Recomputed(const PartitionResult& part) {
  RecomputeStats stats;
  for (const Node* node : RecomputedNodes(part)) {
    ++stats.nodes;
    stats.flops += NodeFlops(*node);
  }
  return stats;
}

double NodeFlops(const Node& node) {
  std::vector<TensorType> in, out;
  for (const Value* v : node.inputs()) in.push_back(v->type());
  for (const Value* v : node.results()) out.push_back(v->type());
  return EstimateCost(node.op(), in, out, node.attrs()).flops;
}

}  // namespace tc::partition
