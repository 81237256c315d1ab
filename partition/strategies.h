// The partition strategies beyond DefaultPartition and MinCutPartition, and a
// registry that finds any of them by name:
//
//   RecomputeAllPartition   recompute everything but expensive ops (matmul,
//                           linear, conv): the least-memory cut
//   BudgetPartition(b)      activation_memory_budget b in [0, 1]: 1 is
//                           MinCutPartition, 0 is the least-memory cut, values
//                           between keep the min-cut's saved values chosen by a
//                           knapsack (weight: bytes; value: recompute FLOPs)
//   BudgetSweep             the Pareto curve (saved bytes, recompute FLOPs) over
//                           a list of budgets
//
//   absl::StatusOr<PartitionFn> fn = PartitionerByName("budget", 0.5);
//   absl::StatusOr<PartitionResult> part = (*fn)(joint.graph, joint.layout);
#ifndef TENSORCUT_PARTITION_STRATEGIES_H_
#define TENSORCUT_PARTITION_STRATEGIES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/ir.h"
#include "graph/joint_layout.h"
#include "partition/partition.h"

namespace tc::partition {

// A PartitionFn: the minimum cut (partition/min_cut.h) that may recompute
// every forward node IsRecomputable accepts (all but kTraitExpensive ones),
// ignoring MayRecompute's cost heuristics. It saves the fewest bytes of any
// cut, never more than MinCutPartition.
absl::StatusOr<PartitionResult> RecomputeAllPartition(const Graph& joint,
                                                      const JointLayout& layout);

// The partition under activation_memory_budget `budget` (InvalidArgument
// outside [0, 1]). 1 is MinCutPartition's result, 0 RecomputeAllPartition's.
// In between, the candidates are the node results min-cut saves and budget 0
// does not; a candidate's value is the FLOPs of the nodes the backward would
// run to rebuild it from budget 0's saved values, its weight its bytes. A
// greedy knapsack keeps the longest prefix of the candidates, sorted by FLOPs
// per byte, that fits b * (saved bytes at 1 - saved bytes at 0); those values
// are pinned (their producers are not recomputed) and the cut is solved again
// with IsRecomputable. The kept sets nest as the budget grows, and pinning
// only adds edges to the cut's graph, so total saved bytes never grow as the
// budget falls (and at budgets below 1 never exceed min-cut's: min-cut's
// saved set is a cut of every pinned graph). The bytes saved need not be
// budget 0's plus the pinned values': the re-solved cut may trade others.
absl::StatusOr<PartitionResult> BudgetPartition(const Graph& joint, const JointLayout& layout,
                                                double budget);
PartitionFn MemoryBudgetPartitioner(double budget);

struct ParetoPoint {
  double budget = 0;
  int64_t saved_bytes = 0;  // all saved values
  // As partition/accounting.h defines them: saved values that are not graph
  // inputs or views of them, and the FLOPs of the forward nodes the backward
  // graph runs again.
  int64_t saved_activation_bytes = 0;
  double recompute_flops = 0;
};

// The byte limit activation_memory_budget `budget` sets: recompute_all's
// saved bytes at 0, min-cut's at 1, linear between (BudgetPartition's
// knapsack fills the span above recompute_all's). InvalidArgument outside [0, 1].
absl::StatusOr<int64_t> SavedBytesAtBudget(const Graph& joint, const JointLayout& layout,
                                           double budget);

// OK for a budget in [0, 1]; InvalidArgument naming it otherwise.
absl::Status CheckActivationMemoryBudget(double budget);

// BudgetPartition at each of `budgets`, in the order given.
absl::StatusOr<std::vector<ParetoPoint>> BudgetSweep(const Graph& joint, const JointLayout& layout,
                                                     absl::Span<const double> budgets);

// The strategies by name: "default", "min_cut", "budget" (uses `budget`),
// "recompute_all", then the registered ones ("milp" when //partition:milp
// is linked). InvalidArgument naming the known strategies otherwise.
absl::StatusOr<PartitionFn> PartitionerByName(absl::string_view name, double budget = 1.0);
std::vector<std::string> StrategyNames();

// A strategy from a target of its own joins the names above: its factory
// makes the PartitionFn for a budget (and rejects a budget it cannot use).
// Meant for static initialisation; false, and no change, if the name is taken.
using PartitionerFactory = std::function<absl::StatusOr<PartitionFn>(double budget)>;
bool RegisterPartitioner(std::string name, PartitionerFactory factory);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_STRATEGIES_H_
