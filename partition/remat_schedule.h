// Schedules of a rematerialization problem (partition/remat_graph.h) and
// the checker every scheduler's result goes through: a schedule is a list
// of steps, each computing a node (whose inputs must be in memory then) or
// freeing a value; replaying it gives its peak memory and its compute,
// independently of whatever made it.
//
//   RematSchedule one_pass = NoRematSchedule(graph);
//   TC_ASSIGN_OR_RETURN(ScheduleCost cost, CheckSchedule(graph, one_pass));
//   cost.peak_bytes == NoRematPeak(graph);   // and cost.overhead == 0
//
// Memory while a node is computed is every value in memory plus its output;
// a value may be computed again only after it was freed.
#ifndef TENSORCUT_PARTITION_REMAT_SCHEDULE_H_
#define TENSORCUT_PARTITION_REMAT_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/remat_graph.h"

namespace tc::partition {

struct RematSchedule {
  struct Step {
    enum class Kind { kCompute, kFree };
    Kind kind;
    int node;
  };
  std::vector<Step> steps;
};

struct ScheduleCost {
  int64_t peak_bytes = 0;
  double compute = 0;      // the costs of every compute step
  double overhead = 0;     // compute over one pass's, less 1 (0: nothing recomputed)
  int64_t recomputed = 0;  // compute steps beyond one per node
};

// An InvalidArgumentError naming the step: a node read while not in
// memory, a value computed while in memory or freed while not, a node
// never computed, a node index outside the graph.
absl::StatusOr<ScheduleCost> CheckSchedule(const RematGraph& graph, const RematSchedule& schedule);

// One pass in order, each value freed after its last reader: the schedule
// NoRematPeak measures.
RematSchedule NoRematSchedule(const RematGraph& graph);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_REMAT_SCHEDULE_H_
