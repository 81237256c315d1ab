// Optimal rematerialization schedules under a peak-memory budget:
// Checkmate's mixed-integer program (Jain et al., MLSys 2020) on CBC, and
// its LP relaxation with randomized rounding (Checkmate's approximation).
//
//   RematMilpOptions options{.time_limit_seconds = 60};
//   const std::optional<StagePlan> greedy = GreedyRematPlan(graph, budget);
//   if (greedy.has_value()) options.starts.push_back(&*greedy);
//   TC_ASSIGN_OR_RETURN(RematResult r, CheckmateMilpSchedule(graph, budget, options));
//   // r.proven_optimal, or r.lower_bound and ProvenGap(r) when time ran out
//
// The program over the stages of partition/remat_stages.h, memory in units
// of the budget and compute in units of one pass:
//
//   R[t,i] in {0,1}  stage t computes node i (i <= t; R[t,t] = 1)
//   S[t,i] in {0,1}  value i is in memory when stage t starts (i < t)
//   F[t,i,k] >= 0    value i is freed after stage t computes node k (i is
//                    k or an input of k)
//   U[t,k] >= 0      memory after stage t computes node k
//
//   minimise   sum cost_i R[t,i]
//   subject to R[t,k] <= R[t,j] + S[t,j]           j an input of k
//              S[t+1,i] <= S[t,i] + R[t,i]
//              F[t,i,k] <= R[t,k],  F[t,i,k] <= 1 - S[t+1,i],
//              F[t,i,k] <= 1 - R[t,j]               j a later reader of i in stage t
//              U[t,k] = U[t,k'] + bytes_k R[t,k] - sum bytes_i F[t,i,k']
//                       (k' the previous node with an R column in stage t;
//                       the first adds sum bytes_i S[t,i])
//              U[t,k] <= 1
//
// F is continuous: the bounds make it at most the product Checkmate's
// linearisation spells out, and freeing only helps the memory rows, so
// some optimum takes it at the product. Bound tightening before CBC's own
// presolve: R[t,i] and S[t,i] are fixed at 0 where nothing at or after
// stage t descends from i. A solution is read back as the values each
// stage keeps and completed with CompleteStages, which never computes more
// or holds more than the solution did; the checker replays it. Branch and
// bound starts from the cheapest of the given plans and of roundings of the
// root relaxation it has just solved.
#ifndef TENSORCUT_PARTITION_REMAT_MILP_H_
#define TENSORCUT_PARTITION_REMAT_MILP_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/remat_graph.h"
#include "partition/remat_stages.h"

namespace tc::partition {

struct RematMilpOptions {
  // CBC stops after this long with the best schedule it has and its bound.
  double time_limit_seconds = 60;
  // Plans to start from (the greedy one): CBC starts at the cheapest that
  // fits, so a solve the time limit stops is never worse than its starts.
  std::vector<const StagePlan*> starts;
  // Roundings of the root relaxation tried as one more start (as
  // lp_rounding rounds it: the first at 1/2, the rest at random); 0: none.
  int roundings = 64;
};

absl::StatusOr<RematResult> CheckmateMilpSchedule(const RematGraph& graph, int64_t budget_bytes,
                                                  const RematMilpOptions& options);

struct LpRoundingOptions {
  // Roundings tried per relaxation: the first at 1/2, the rest at random.
  int samples = 64;
  uint32_t seed = 0;
  // Each relaxation stops at what is left of it, and no relaxation starts
  // after it.
  // When no rounding fits, the relaxation is solved again at 0.9, 0.8 and
  // 0.7 of the budget (as Checkmate does).
  double time_limit_seconds = 60;
};

// The lower bound is the relaxation's optimum at the full budget.
absl::StatusOr<RematResult> LpRoundingSchedule(const RematGraph& graph, int64_t budget_bytes,
                                               const LpRoundingOptions& options);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_REMAT_MILP_H_
