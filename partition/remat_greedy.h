// The fast rematerialization scheduler: one pass over the stages of
// partition/remat_stages.h that keeps every value a later stage reads until
// a stage would exceed the budget, then lets go of the values that are
// cheapest to compute again per byte and are read furthest ahead (Belady's
// rule weighted by cost, in the spirit of DTR's eviction, ICLR 2021).
//
//   TC_ASSIGN_OR_RETURN(RematResult r, GreedyRematSchedule(graph, budget_bytes));
//   // r.found: r.schedule, checked, within budget; else r.why_not
//
// Each eviction replays its stage: quadratic in the nodes at least, yet
// milliseconds on the shipped graphs. It can fail where a schedule exists (a stage whose
// recomputation alone exceeds the budget because of earlier choices); a budget below some node's
// own need is reported as proven infeasible, naming the node.
#ifndef TENSORCUT_PARTITION_REMAT_GREEDY_H_
#define TENSORCUT_PARTITION_REMAT_GREEDY_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "partition/remat_graph.h"
#include "partition/remat_stages.h"

namespace tc::partition {

// The plan alone (for starting other schedulers), or nullopt where the
// greedy rule finds none.
std::optional<StagePlan> GreedyRematPlan(const RematGraph& graph, int64_t budget_bytes);

absl::StatusOr<RematResult> GreedyRematSchedule(const RematGraph& graph, int64_t budget_bytes);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_REMAT_GREEDY_H_
