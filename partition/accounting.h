// The numbers that compare partitions, defined once for every strategy and
// report: which saved values are activations (and their bytes), and which
// forward nodes the backward graph runs again (and their FLOPs).
//
//   absl::StatusOr<PartitionResult> part = MinCutPartition(joint.graph, joint.layout);
//   int64_t act = SavedActivationBytes(joint.graph, *part);  // inputs and their views excluded
//   RecomputeStats re = Recomputed(*part);                   // re.nodes, re.flops
#ifndef TENSORCUT_PARTITION_ACCOUNTING_H_
#define TENSORCUT_PARTITION_ACCOUNTING_H_

#include <cstdint>
#include <vector>

#include "graph/ir.h"
#include "partition/partition.h"

namespace tc::partition {

// Whether `value` is a graph input, or a view of one through a chain of
// kTraitView ops (reshape, permute, expand, slice): saving it keeps no memory
// alive beyond the input's own.
bool IsInputOrViewOfInput(const Value& value);

// Whether the saved value `saved` is an activation: its namesake in `joint`
// is not IsInputOrViewOfInput (a name `joint` lacks counts as an activation).
bool IsActivation(const Graph& joint, const SavedValue& saved);

// The bytes of part.saved that are activations; `joint` is the graph `part`
// was made from.
int64_t SavedActivationBytes(const Graph& joint, const PartitionResult& part);

// The nodes of part.backward that recompute a forward node: ExtractSubgraph
// keeps result names, so a backward node whose result is named like a forward
// node's result is that node run again. In backward-graph order.
std::vector<const Node*> RecomputedNodes(const PartitionResult& part);

struct RecomputeStats {
  int nodes = 0;
  double flops = 0;  // EstimateCost of each recomputed node
};
RecomputeStats Recomputed(const PartitionResult& part);

// EstimateCost(node's op, operand types, result types, attributes).flops.
double NodeFlops(const Node& node);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_ACCOUNTING_H_
