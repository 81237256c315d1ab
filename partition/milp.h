// The optimal reference partitioner: the save-or-recompute choice solved
// exactly, as a mixed-integer program, by the COIN-OR CBC solver.
//
//   MilpOptions options{.max_saved_bytes = 1 << 20, .time_limit_seconds = 10};
//   absl::StatusOr<MilpPartitionResult> r = MilpPartition(joint.graph, joint.layout, options);
//   // r->partition: a PartitionResult like every strategy's
//   // r->solve: proven optimal or not, the solver's lower bound and its gap
//
// The program, over the forward values of min-cut's model (the primals and
// the results of the nodes the forward outputs need; the forward graph holds
// exactly those nodes, whatever is saved):
//
//   s_v in {0, 1}   the forward saves value v
//   r_n in {0, 1}   the backward runs forward node n again (only nodes
//                   IsRecomputable accepts: never matmul, linear or conv)
//
//   minimise   sum_n flops(n) r_n            (the op table's cost model)
//   subject to s_v + r_producer(v) >= 1       for each v the backward reads
//              s_u + r_producer(u) >= r_n     for each operand u of each n
//              sum_v bytes(v) s_v <= max_saved_bytes
//
// The second line is the closure a recomputation needs: every operand of a
// node run again is saved or itself run again. A primal has no producer
// term. Every other strategy's partition is a feasible point (its saved
// values, and the nodes its backward recomputes), so at its saved bytes the
// optimum recomputes no more FLOPs than it does. Of the optimal solutions the
// solver prefers fewer saved bytes (a tie-break term worth less than 1e-3
// FLOPs in all). It starts from recompute_all's cut, the least bytes any
// partition can save, so a run stopped by the time limit still returns a
// valid partition, with the gap it had left (or from a better start the
// caller gives).
#ifndef TENSORCUT_PARTITION_MILP_H_
#define TENSORCUT_PARTITION_MILP_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/ir.h"
#include "graph/joint_layout.h"
#include "partition/partition.h"

namespace tc::partition {

struct MilpOptions {
  // The most bytes the saved values may take, all of them (graph inputs
  // too, as PartitionReport::saved_bytes counts them). InvalidArgument when
  // no partition fits: the message gives the least there is.
  int64_t max_saved_bytes = std::numeric_limits<int64_t>::max();
  // CBC stops after this long with the best solution it has.
  double time_limit_seconds = 10;
  // Partitions of the same joint graph to start from (another strategy's
  // result, a solve under a smaller limit): the solver starts at the one
  // that fits and recomputes least, if it beats recompute_all's cut. So a
  // solve stopped by the time limit is never worse than its best start.
  // Starts that do not fit are passed over.
  std::vector<const PartitionResult*> starts;
};

struct MilpSolve {
  bool proven_optimal = false;
  // The objective of the solution returned, and the solver's lower bound on
  // any solution's: the FLOPs recomputed (plus the tie-break term).
  double objective = 0;
  double lower_bound = 0;
  // (objective - lower_bound) / objective; 0 when proven optimal.
  double relative_gap = 0;
  double seconds = 0;
  int variables = 0;
  int constraints = 0;
};

struct MilpPartitionResult {
  PartitionResult partition;
  MilpSolve solve;
};

absl::StatusOr<MilpPartitionResult> MilpPartition(const Graph& joint, const JointLayout& layout,
                                                  const MilpOptions& options);

// A PartitionFn: MilpPartition under SavedBytesAtBudget(budget)
// (partition/strategies.h), starting from BudgetPartition's knapsack at the
// same budget or the best of `extra_starts` (which, and `*solve`, must
// outlive it), stopping after `time_limit_seconds`; each call stores its
// solve in `*solve` when given. Linking //partition:milp also
// registers it as "milp" with PartitionerByName.
PartitionFn MilpPartitioner(double budget, double time_limit_seconds = 10,
                            MilpSolve* solve = nullptr,
                            std::vector<const PartitionResult*> extra_starts = {});

// One line on how a solve ended: "proven optimal in 0.04 s (812 variables,
// 1930 constraints)", or where the time limit stopped it, with its gap.
std::string MilpSolveText(const MilpSolve& solve);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_MILP_H_
