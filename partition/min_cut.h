// The min-cut rematerialization partitioner (AOTAutograd's
// min_cut_rematerialization_partition): save the set of forward values of
// least total bytes from which the backward can recompute everything else it
// reads, never recomputing an op MayRecompute rejects.
//
//   absl::StatusOr<PartitionResult> part = MinCutPartition(joint.graph, joint.layout);
//   // x -> h = linear(x, w1, b1) -> r = relu(h) -> y = linear(r, w2, b2):
//   // the default partition saves h and r; this one saves h only, and the
//   // backward recomputes r = relu(h).
//
// How: each forward value v (a primal, or a result of a node the forward
// outputs need) becomes two flow nodes in(v) -> out(v) with capacity
// bytes(v), the cost of saving it; out(u) -> in(v), infinitely, for each
// operand u of v's producer. The source feeds in(p) of each primal and in(v)
// of each value whose producer may not be recomputed; out(v) feeds the sink
// for each value a backward node (or a gradient output) reads. A minimum cut
// then crosses only in->out edges, and the values whose edges it crosses are
// saved (partition/partition.h's AssemblePartition builds the graphs).
//
// Other strategies (partition/strategies.h, or a user's PartitionFn) solve
// the same cut with their own recompute predicate and pinned values:
//
//   MinCutOptions options{.may_recompute = IsRecomputable};
//   absl::StatusOr<std::vector<Value*>> saved = MinCutSavedValues(joint.graph, joint.layout,
//                                                                 options);
//   absl::StatusOr<PartitionResult> part = AssemblePartition(joint.graph, joint.layout, *saved);
#ifndef TENSORCUT_PARTITION_MIN_CUT_H_
#define TENSORCUT_PARTITION_MIN_CUT_H_

#include <functional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "graph/ir.h"
#include "graph/joint_layout.h"
#include "partition/partition.h"

namespace tc::partition {

// A reduction whose input has more than this many times its output's
// elements is not recomputed: the saved result is small and re-reading the
// whole input in the backward costs more than it saves.
inline constexpr int64_t kMaxRecomputedReductionRatio = 4;

// Whether the backward may recompute `node` instead of the forward saving its
// results: elementwise ops (dropout too: it reads its seed and offset, so a
// recomputed mask is the same mask), views, creation ops, batch and
// layer normalisation, and reductions (softmax included) that shrink their
// input at most kMaxRecomputedReductionRatio times. Never matmul, linear,
// convolution (kTraitExpensive), pooling, embedding, concat or pad, and
// never a collective (kTraitCollective: it talks to other processes).
bool MayRecompute(const Node& node);

// Whether recomputing `node` in the backward is correct and not expensive:
// every op but kTraitExpensive ones (matmul, linear, convolution and their
// backwards) and collectives. Every other op is a pure function of its operands and attributes
// (dropout's mask too), so this is MayRecompute without its cost heuristics:
// pooling, embedding, concat, pad and any reduction may be recomputed.
bool IsRecomputable(const Node& node);

// The choice every save-or-recompute partitioner makes, as min-cut models
// it: the forward graph holds exactly the nodes the forward outputs need;
// of their results and the primals (the forward values), some are saved and
// the backward recomputes the rest of what it reads from those.
struct SaveOrRecompute {
  std::vector<Value*> forward_values;      // the primals, then node results in graph order
  std::vector<const Node*> forward_nodes;  // the nodes the forward outputs need, in graph order
  // The forward values the backward reads: operands of the nodes outside the
  // forward that the gradients need, and gradients that are forward values.
  absl::flat_hash_set<const Value*> read_by_backward;
};

// InvalidArgument for a bad layout or a forward output that needs a tangent.
absl::StatusOr<SaveOrRecompute> MakeSaveOrRecompute(const Graph& joint, const JointLayout& layout);

struct MinCutOptions {
  // Whether the backward may recompute a forward node instead of the forward
  // saving its results.
  std::function<bool(const Node&)> may_recompute = MayRecompute;
  // Forward values whose producers are never recomputed, whatever
  // may_recompute says: the backward reads these values (and their
  // producers' other results), or values computed from them, as saved values.
  absl::flat_hash_set<const Value*> pinned;
};

// The values the minimum cut under `options` saves: primals first, then node
// results in the joint graph's order. InvalidArgument for a bad layout, a
// forward output that needs a tangent, or a pinned value that is not a
// forward value of `joint`.
absl::StatusOr<std::vector<Value*>> MinCutSavedValues(const Graph& joint, const JointLayout& layout,
                                                      const MinCutOptions& options);

// A PartitionFn: the same graphs and calling convention as DefaultPartition,
// with the saved values chosen by a minimum cut under MinCutOptions{}.
absl::StatusOr<PartitionResult> MinCutPartition(const Graph& joint, const JointLayout& layout);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_MIN_CUT_H_
