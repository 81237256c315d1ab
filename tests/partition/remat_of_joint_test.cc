// A model's joint graph as a rematerialization problem: its nodes and bytes,
// each partition placed as a plan whose recomputation is the partition's
// own (the same nodes, the same FLOPs), and the MILP at a partition's peak
// never recomputing more than the partition does.
#include "partition/remat_of_joint.h"

#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "graph/decompositions.h"
#include "nn/models/models.h"
#include "partition/accounting.h"
#include "partition/min_cut.h"
#include "partition/remat_milp.h"
#include "partition/strategies.h"
#include "pipeline/compiler_pipeline.h"

namespace tc::partition {
namespace {

std::vector<std::string> SavedNames(const PartitionResult& part) {
  std::vector<std::string> names;
  for (const SavedValue& s : part.saved) names.push_back(s.name);
  return names;
}

TEST_CASE("a joint graph's partitions place as plans that recompute what they recompute") {
  for (const char* name : {"mlp", "cnn"}) {
    INFO(name);
    nn::ModelSpec spec = nn::MakeModel(name, 3).value();
    CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
    REQUIRE(pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
    const JointGraph& joint = *pipeline.joint_graph().value();
    const JointRematGraph problem = RematGraphOfJoint(joint.graph, joint.layout, name);
    REQUIRE(problem.graph.nodes.size() == static_cast<size_t>(joint.graph.num_nodes()) + 1);
    CHECK(problem.graph.nodes.back().name == "outputs");
    CHECK(problem.graph.nodes.back().inputs.size() > 0);
    int64_t resident = 0;
    for (const Value* p : joint.graph.placeholders()) resident += p->type().bytes();
    CHECK(problem.resident_bytes == resident);

    const PartitionResult everything = DefaultPartition(joint.graph, joint.layout).value();
    const PartitionResult least = RecomputeAllPartition(joint.graph, joint.layout).value();
    const PartitionResult cut = MinCutPartition(joint.graph, joint.layout).value();
    ScheduleCost cut_cost;
    for (const PartitionResult* part : {&everything, &least, &cut}) {
      const StagePlan plan = PlanOfPartition(problem, SavedNames(*part)).value();
      const ScheduleCost cost =
          CheckSchedule(problem.graph, StagesToSchedule(problem.graph, plan)).value();
      const RecomputeStats recomputed = Recomputed(*part);
      CHECK(cost.recomputed == recomputed.nodes);
      CHECK(cost.compute - TotalCost(problem.graph) == Approx(recomputed.flops).margin(1e-6));
      if (part == &cut) cut_cost = cost;
    }
    CHECK(Recomputed(everything).nodes == 0);

    // At min-cut's peak, started from min-cut's plan: never more compute
    // (on mlp: cnn's 164 nodes keep CBC in its root LP for minutes).
    if (std::string(name) != "mlp") continue;
    const StagePlan cut_plan = PlanOfPartition(problem, SavedNames(cut)).value();
    RematMilpOptions options{.time_limit_seconds = 20};
    options.starts.push_back(&cut_plan);
    const RematResult best =
        CheckmateMilpSchedule(problem.graph, cut_cost.peak_bytes, options).value();
    REQUIRE(best.found);
    CHECK(best.cost.peak_bytes <= cut_cost.peak_bytes);
    CHECK(best.cost.compute <= cut_cost.compute + 1e-6);
  }
}

}  // namespace
}  // namespace tc::partition
