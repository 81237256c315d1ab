// The MILP partitioner: its optimum against brute-force enumeration of every
// saved set on small graphs, a hand case with its byte and FLOP arithmetic,
// never worse than another strategy at that strategy's saved bytes on the
// reference models, and its error messages.
#include "partition/milp.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "autodiff/joint_graph.h"
#include "catch2/catch.hpp"
#include "graph/decompositions.h"
#include "graph/verifier.h"
#include "nn/models/models.h"
#include "partition/accounting.h"
#include "partition/min_cut.h"
#include "partition/strategies.h"
#include "pipeline/compiler_pipeline.h"
#include "runtime/ops.h"
#include "runtime/trace.h"
#include "tests/graph/models.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using partition::MilpOptions;
using partition::MilpPartitionResult;
using partition::PartitionResult;
using T = Tree<Tensor>;

int64_t SavedBytes(const PartitionResult& part) {
  int64_t bytes = 0;
  for (const partition::SavedValue& s : part.saved) bytes += s.bytes;
  return bytes;
}

MilpPartitionResult Solve(const JointGraph& joint, int64_t max_saved_bytes) {
  absl::StatusOr<MilpPartitionResult> r =
      partition::MilpPartition(joint.graph, joint.layout, {.max_saved_bytes = max_saved_bytes});
  INFO(r.status().message());
  REQUIRE(r.ok());
  CHECK(r->solve.proven_optimal);
  CHECK(r->solve.relative_gap == 0);
  CHECK(Verify(r->partition.forward).ok());
  CHECK(Verify(r->partition.backward).ok());
  CHECK(SavedBytes(r->partition) <= max_saved_bytes);
  return *std::move(r);
}

// A saved set's partition when it is one: the backward recomputes only nodes
// IsRecomputable accepts. Its saved bytes and recompute FLOPs.
struct Point {
  int64_t bytes;
  double flops;
};

std::optional<Point> Evaluate(const JointGraph& joint, const std::vector<Value*>& saved) {
  absl::StatusOr<PartitionResult> part =
      partition::AssemblePartition(joint.graph, joint.layout, saved);
  if (!part.ok()) return std::nullopt;
  for (const Node* node : partition::RecomputedNodes(*part)) {
    if (!partition::IsRecomputable(*node)) return std::nullopt;
  }
  return Point{SavedBytes(*part), partition::Recomputed(*part).flops};
}

// Every subset of the forward values, as saved values: the least FLOPs
// recomputed at saved bytes at most each of `limits`.
std::vector<double> BruteForce(const JointGraph& joint, const std::vector<int64_t>& limits) {
  const partition::SaveOrRecompute problem =
      partition::MakeSaveOrRecompute(joint.graph, joint.layout).value();
  const std::vector<Value*>& values = problem.forward_values;
  std::vector<double> best(limits.size(), std::numeric_limits<double>::infinity());
  for (uint32_t mask = 0; mask < (1u << values.size()); ++mask) {
    std::vector<Value*> saved;
    for (size_t i = 0; i < values.size(); ++i) {
      if (mask & (1u << i)) saved.push_back(values[i]);
    }
    const std::optional<Point> point = Evaluate(joint, saved);
    if (!point.has_value()) continue;
    for (size_t k = 0; k < limits.size(); ++k) {
      if (point->bytes <= limits[k]) best[k] = std::min(best[k], point->flops);
    }
  }
  return best;
}

JointGraph JointOf(const testing::Model& m) {
  TracedProgram program = Trace(m.fn, m.inputs, m.params, m.buffers).value();
  JointOptions options;
  m.inputs.ForEachLeaf([&](const Tensor&) { options.user_inputs_require_grad.push_back(true); });
  return BuildJointGraph(program, options).value();
}

// h = x a, m1 = sum(exp(h)), m2 = sum(h, 1), y = h m1 m2: the hand graph of
// strategies_test's knapsack case.
JointGraph TwoSums() {
  Tensor a = testing::Random({8, 8}, DType::kF64, 1);
  TracedProgram program =
      Trace(
          [&](const T& in) {
            const Tensor h = matmul(in[0].leaf(), a);
            const Tensor m1 = sum(exp(h));
            const Tensor m2 = sum(h, {1}, true);
            return T::MakeLeaf(h * m1 * m2);
          },
          T::Tuple({T::MakeLeaf(testing::Random({4, 8}, DType::kF64, 3))}), {{"a", a}})
          .value();
  JointOptions options;
  options.user_inputs_require_grad = {true};
  return BuildJointGraph(program, options).value();
}

std::vector<std::string> SavedNames(const PartitionResult& part) {
  std::vector<std::string> names;
  for (const partition::SavedValue& s : part.saved) names.push_back(s.name);
  return names;
}

TEST_CASE("two sums: at each byte limit the MILP saves what avoids the most FLOPs") {
  const JointGraph joint = TwoSums();
  // h = x a (f64[4,8], 256 bytes), e = exp(h) (256), m1 = sum(e) (8),
  // m2 = sum(h, 1) (f64[4,1], 32), u = h m1 (256), y = u m2. Each of e, m1,
  // m2 and u costs 32 FLOPs by the cost model (an op per element read). The
  // backward reads x and a (256 + 512 bytes, for the matmul's gradients), h
  // (a matmul result: never recomputed), e (exp's gradient), m1, m2 and u.
  auto check = [&](int64_t limit, double flops, std::vector<std::string> names) {
    INFO("at most " << limit << " bytes");
    const MilpPartitionResult r = Solve(joint, limit);
    CHECK(partition::Recomputed(r.partition).flops == flops);
    if (!names.empty()) CHECK(SavedNames(r.partition) == names);
  };
  // 1024 bytes: x, a and h; the backward recomputes e, m1, m2 and u.
  check(1024, 128, {"p_a", "arg0", "0"});
  // Room for m1 or m2, not both: either avoids 32 FLOPs, and of equal optima
  // the tie-break takes the fewer bytes, m1's 8.
  check(1063, 96, {"p_a", "arg0", "0", "2"});
  check(1064, 64, {"p_a", "arg0", "0", "2", "3"});
  // One of e and u (256 bytes each, 32 FLOPs each) more; then both.
  check(1064 + 256, 32, {});
  check(1064 + 512, 0, {"p_a", "arg0", "0", "1", "2", "3", "4"});
  // More bytes buy nothing: the tie-break keeps the least bytes of the optima.
  CHECK(SavedBytes(Solve(joint, 1 << 20).partition) == 1064 + 512);
}

TEST_CASE("the MILP's optimum equals brute-force enumeration of the saved sets") {
  std::vector<std::pair<std::string, JointGraph>> graphs;
  graphs.emplace_back("two sums", TwoSums());
  for (const testing::Model& m : testing::AllModels()) graphs.emplace_back(m.name, JointOf(m));
  int enumerated = 0;
  for (const auto& [name, joint] : graphs) {
    INFO(name);
    const partition::SaveOrRecompute problem =
        partition::MakeSaveOrRecompute(joint.graph, joint.layout).value();
    if (problem.forward_values.size() > 16) continue;  // 2^16 partitions at most
    ++enumerated;
    const int64_t least = partition::SavedBytesAtBudget(joint.graph, joint.layout, 0).value();
    const int64_t most = partition::SavedBytesAtBudget(joint.graph, joint.layout, 1).value();
    std::vector<int64_t> limits = {least, least + (most - least) / 3,
                                   least + 2 * (most - least) / 3, most, 2 * most};
    const std::vector<double> best = BruteForce(joint, limits);
    for (size_t k = 0; k < limits.size(); ++k) {
      INFO("at most " << limits[k] << " bytes");
      CHECK(partition::Recomputed(Solve(joint, limits[k]).partition).flops == best[k]);
    }
  }
  CHECK(enumerated >= 3);
}

TEST_CASE("on the reference models, no strategy recomputes fewer FLOPs at its saved bytes") {
  for (const std::string name : {"linear", "convbn", "structured", "mlp", "cnn", "transformer"}) {
    INFO(name);
    nn::ModelSpec spec = nn::MakeModel(name, 11).value();
    CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
    REQUIRE(pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
    const JointGraph& joint = *pipeline.joint_graph().value();
    std::vector<std::pair<std::string, double>> strategies = {
        {"default", 1}, {"min_cut", 1}, {"recompute_all", 1}};
    for (double b : {0.25, 0.5, 0.75}) strategies.push_back({"budget", b});
    for (const auto& [strategy, budget] : strategies) {
      INFO(strategy << " " << budget);
      const PartitionResult part =
          partition::PartitionerByName(strategy, budget).value()(joint.graph, joint.layout).value();
      const MilpPartitionResult optimum = Solve(joint, SavedBytes(part));
      CHECK(partition::Recomputed(optimum.partition).flops <= partition::Recomputed(part).flops);
    }
  }
}

TEST_CASE("a solve the time limit stops is never worse than the best start that fits") {
  nn::ModelSpec spec = nn::MakeModel("transformer", 11).value();
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
  REQUIRE(pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
  const JointGraph& joint = *pipeline.joint_graph().value();
  const PartitionResult min_cut =
      partition::PartitionerByName("min_cut").value()(joint.graph, joint.layout).value();
  const PartitionResult everything = partition::DefaultPartition(joint.graph, joint.layout).value();
  const double min_cut_flops = partition::Recomputed(min_cut).flops;
  // So little time that the solver has no time to improve on its start:
  // without starts it returns recompute_all's cut, with min-cut's among
  // them (and the default's, which does not fit) no more than min-cut.
  MilpOptions options{.max_saved_bytes = SavedBytes(min_cut), .time_limit_seconds = 1e-9};
  const MilpPartitionResult bare =
      partition::MilpPartition(joint.graph, joint.layout, options).value();
  options.starts = {&everything, &min_cut};
  const MilpPartitionResult started =
      partition::MilpPartition(joint.graph, joint.layout, options).value();
  CHECK(SavedBytes(started.partition) <= SavedBytes(min_cut));
  CHECK(partition::Recomputed(started.partition).flops <= min_cut_flops);
  CHECK_FALSE(bare.solve.proven_optimal);
  CHECK(partition::Recomputed(bare.partition).flops > min_cut_flops);
  CHECK(Verify(started.partition.backward).ok());
}

TEST_CASE("milp is a strategy by name; impossible limits and bad options are InvalidArgument") {
  const std::vector<std::string> names = partition::StrategyNames();
  CHECK(std::find(names.begin(), names.end(), "milp") != names.end());
  CHECK_FALSE(partition::RegisterPartitioner("milp", nullptr));
  CHECK_FALSE(partition::RegisterPartitioner("min_cut", nullptr));
  CHECK(partition::PartitionerByName("milp", 1.5).status().message() ==
        "activation_memory_budget must be in [0, 1], got 1.5");

  const JointGraph joint = TwoSums();
  const PartitionResult at_half =
      partition::PartitionerByName("milp", 0.5).value()(joint.graph, joint.layout).value();
  // Budget 0.5: 1024 + (1064 - 1024) / 2 = 1044 bytes, room for m1.
  CHECK(SavedNames(at_half) == std::vector<std::string>{"p_a", "arg0", "0", "2"});

  absl::StatusOr<MilpPartitionResult> too_few =
      partition::MilpPartition(joint.graph, joint.layout, {.max_saved_bytes = 1000});
  CHECK(too_few.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(too_few.status().message() ==
        "no partition saves at most 1000 bytes: the least any saves is 1024 (recompute_all's)");
  absl::StatusOr<MilpPartitionResult> no_time =
      partition::MilpPartition(joint.graph, joint.layout, {.time_limit_seconds = 0});
  CHECK(no_time.status().message() == "the MILP time limit must be positive, got 0 seconds");
}

}  // namespace
}  // namespace tc
