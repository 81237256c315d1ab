// Rematerialization schedules in Checkmate's stage form (MLSys 2020), the
// shape every scheduler of partition/remat_*.h works in: stage t computes
// node t last, after computing again whatever earlier nodes it needs that
// are not in memory, in order; between stages only the kept values stay.
//
//   stage 0: [0]            keeps {0}
//   stage 1: [1]            keeps {}      (0 freed: recomputed when needed)
//   stage 2: [0, 2]         ...           (2 reads 0 again)
//
// A plan is given by what each stage keeps; the least computation that
// serves it follows (CompleteStages), as do its memory (a value is freed
// after its last reader in the stage unless kept) and its steps for the
// checker of remat_schedule.h, which replays every result independently.
//
// Memory during a stage matches Checkmate's accounting exactly once every
// kept value is read in its stage or kept on (CompleteStages prunes the
// rest), so a plan's StagePeak is what the MILP's memory rows give it.
#ifndef TENSORCUT_PARTITION_REMAT_STAGES_H_
#define TENSORCUT_PARTITION_REMAT_STAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/remat_graph.h"
#include "partition/remat_schedule.h"

namespace tc::partition {

struct StagePlan {
  // kept[t]: the values in memory when stage t starts, ascending; kept[0]
  // is empty, and each is below t.
  std::vector<std::vector<int>> kept;
  // computed[t]: the nodes stage t computes, ascending; the last is t.
  std::vector<std::vector<int>> computed;
};

// What a stage computes to have `roots`: the roots and, transitively, every
// input of them not in memory (membership by node, 1 = computed).
std::vector<char> ComputedFor(const RematGraph& graph, const std::vector<int>& roots,
                              const std::vector<char>& in_memory);

// The plan that keeps `kept` (as StagePlan::kept; missing stages keep
// nothing) and computes least: stage t computes t, the values stage t + 1
// keeps that stage t does not, and every input of those not in memory,
// transitively. Kept values that their stage neither reads nor keeps on are
// dropped (freed earlier). InvalidArgument for a kept value not below its
// stage or outside the graph.
absl::StatusOr<StagePlan> CompleteStages(const RematGraph& graph,
                                         std::vector<std::vector<int>> kept);

// The most bytes in memory while stage t runs, as the checker counts them:
// everything in memory plus the output being computed. This and
// StagesToSchedule take a plan CompleteStages made (every kept value read in
// its stage or kept on).
int64_t PeakOfStage(const RematGraph& graph, const StagePlan& plan, size_t t);

// The plan as compute and free steps, each value freed right after its last
// reader in its stage unless the next stage keeps it.
RematSchedule StagesToSchedule(const RematGraph& graph, const StagePlan& plan);

// A node whose inputs and output together take more than `budget_bytes`:
// no schedule computes it within the budget. The first such node in order,
// with what it needs, or nullopt.
struct NodeNeed {
  int node = 0;
  int64_t bytes = 0;
};
std::optional<NodeNeed> NodeOverBudget(const RematGraph& graph, int64_t budget_bytes);

// What a scheduler returns. `found` with a schedule the checker accepted
// (its cost from CheckSchedule, its peak within the budget), or not found:
// `why_not` says whether the budget is proven infeasible (and by which node
// or which proof) or the scheduler gave up.
struct RematResult {
  std::string strategy;
  bool found = false;
  bool proven_infeasible = false;
  std::string why_not;
  RematSchedule schedule;
  ScheduleCost cost;
  // A lower bound on the compute of any schedule of the strategy's model,
  // in the graph's cost unit (one pass, TotalCost, when it knows no more),
  // and whether the schedule is proven to reach it.
  double lower_bound = 0;
  bool proven_optimal = false;
  double seconds = 0;
};

// The result for a budget some node cannot fit in (NodeOverBudget): not
// found, proven infeasible, naming the node; nullopt when every node fits.
std::optional<RematResult> InfeasibleByNode(const RematGraph& graph, int64_t budget_bytes,
                                            const std::string& strategy);

// (compute - lower_bound) / compute of a found result; 0 when proven optimal.
double ProvenGap(const RematResult& result);

// Checks `plan`'s steps with CheckSchedule and fills a found result; an
// InternalError (a scheduler's defect) when the checker refuses them or
// their peak exceeds the budget.
absl::StatusOr<RematResult> ResultOfPlan(const RematGraph& graph, const StagePlan& plan,
                                         int64_t budget_bytes, RematResult result);

// "12GB", "500MiB", "1024B" (bytes with a unit) or "0.8" (a number alone: a
// fraction of NoRematPeak): the budget in bytes. InvalidArgument naming the
// text otherwise.
absl::StatusOr<int64_t> ParseBudget(const std::string& text, int64_t no_remat_peak);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_REMAT_STAGES_H_
