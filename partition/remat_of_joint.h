// A tensorcut joint forward/backward graph as a rematerialization problem
// (partition/remat_graph.h), so the zoo runs through the same schedulers as
// the research graphs.
//
//   TC_ASSIGN_OR_RETURN(const JointGraph* joint, pipeline.joint_graph());
//   RematGraph problem = RematGraphOfJoint(joint->graph, joint->layout, "mlp");
//
// Each node is a problem node in the graph's order: its cost the op table's
// FLOPs, its bytes its results'. Placeholders (parameters, inputs, the
// tangents) stay in memory whatever the schedule does, so they are left out
// (their bytes are `resident_bytes`), and a last node, "outputs", of no cost
// and no bytes reads every graph output, so the step's results are all in
// memory at its end. A node is forward when a forward output needs it (the
// nodes every partition's forward graph holds), backward otherwise.
//
// PlanOfPartition places a partition in the same terms, so its peak and
// recomputation compare with the schedulers' at the same budget.
#ifndef TENSORCUT_PARTITION_REMAT_OF_JOINT_H_
#define TENSORCUT_PARTITION_REMAT_OF_JOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/ir.h"
#include "graph/joint_layout.h"
#include "partition/remat_graph.h"
#include "partition/remat_stages.h"

namespace tc::partition {

struct JointRematGraph {
  RematGraph graph;
  int64_t resident_bytes = 0;  // the placeholders'
  // The problem node computing each value of the joint graph, by name.
  absl::flat_hash_map<std::string, int> node_of_value;
};

JointRematGraph RematGraphOfJoint(const Graph& joint, const JointLayout& layout,
                                  const std::string& name);

// What a partition that saves `saved` (PartitionResult::saved's names) does:
// the forward runs its nodes in order and keeps a value while a later
// forward node reads it, or, when saved, until its last reader; the backward
// runs its nodes in order, computing again the forward values it needs that
// were not saved (each once) and keeping every value until its last reader.
// Saved names no node computes (placeholders) are in memory throughout. Two
// simplifications: a node counts as saved when any of its results is (its
// bytes are all its results'), and the step's results (the loss among them)
// are held to the end, where a partition's backward may recompute a
// forward output it reads rather than save it.
absl::StatusOr<StagePlan> PlanOfPartition(const JointRematGraph& problem,
                                          const std::vector<std::string>& saved);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_REMAT_OF_JOINT_H_
