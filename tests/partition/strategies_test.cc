// The partition strategies: every reference model under every strategy (the
// registered milp included, and a user's own PartitionFn) against eager,
// dropout recomputed bit for bit, the budget sweep's monotonicity, a hand
// case with its byte arithmetic, and the error messages.
#include "partition/strategies.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "autodiff/joint_graph.h"
#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "graph/decompositions.h"
#include "graph/printer.h"
#include "nn/layers.h"
#include "nn/models/models.h"
#include "partition/accounting.h"
#include "partition/min_cut.h"
#include "pipeline/compiler_pipeline.h"
#include "runtime/ops.h"
#include "runtime/random.h"
#include "runtime/trace.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using partition::PartitionFn;
using partition::PartitionResult;

PartitionFn ByName(absl::string_view name, double budget = 1) {
  absl::StatusOr<PartitionFn> fn = partition::PartitionerByName(name, budget);
  INFO(fn.status().message());
  REQUIRE(fn.ok());
  return *fn;
}

// A user's strategy, written against AssemblePartition only: save the
// results of the forward's matmul, linear and conv2d nodes that the backward
// reads, plus whatever else it then still needs from the forward (the graph
// inputs it reaches); the backward recomputes everything else.
absl::StatusOr<PartitionResult> SaveMatmulResults(const Graph& joint, const JointLayout& layout) {
  const partition::JointParts parts = partition::SplitJoint(joint, layout);
  absl::flat_hash_set<const Node*> forward;
  std::vector<const Value*> stack(parts.fw_outputs.begin(), parts.fw_outputs.end());
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (v->is_placeholder() || !forward.insert(v->producer()).second) continue;
    stack.insert(stack.end(), v->producer()->inputs().begin(), v->producer()->inputs().end());
  }
  auto is_saved_kind = [&](const Value* v) {
    if (v->is_placeholder()) return true;
    const OpKind op = v->producer()->op();
    return forward.contains(v->producer()) &&
           (op == OpKind::kMatmul || op == OpKind::kLinear || op == OpKind::kConv2d);
  };
  absl::flat_hash_set<const Value*> seen, reached;
  stack.assign(parts.gradients.begin(), parts.gradients.end());
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    if (is_saved_kind(v)) {
      reached.insert(v);
      continue;
    }
    stack.insert(stack.end(), v->producer()->inputs().begin(), v->producer()->inputs().end());
  }
  std::vector<Value*> saved;
  for (Value* p : parts.primals) {
    if (reached.contains(p)) saved.push_back(p);
  }
  for (const Node* node : joint.nodes()) {
    for (Value* r : node->results()) {
      if (reached.contains(r)) saved.push_back(r);
    }
  }
  return partition::AssemblePartition(joint, layout, saved);
}

struct Strategy {
  std::string name;
  PartitionFn fn;
};

std::vector<Strategy> AllStrategies() {
  std::vector<Strategy> out = {{"default", ByName("default")}, {"min_cut", ByName("min_cut")}};
  for (double b : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    out.push_back({absl::StrCat("budget ", b), ByName("budget", b)});
  }
  out.push_back({"recompute_all", ByName("recompute_all")});
  for (double b : {0.0, 0.5, 1.0}) out.push_back({absl::StrCat("milp ", b), ByName("milp", b)});
  out.push_back({"user: save matmul results", SaveMatmulResults});
  return out;
}

nn::ModelSpec MakeF64Model(const std::string& name) {
  nn::ModelSpec s = nn::MakeModel(name, 11).value();
  s.module->to(DType::kF64);
  auto to_f64 = [](const Tensor& t) { return IsFloating(t.dtype()) ? t.to(DType::kF64) : t; };
  s.inputs = s.inputs.Map(to_f64);
  s.targets = s.targets.Map(to_f64);
  return s;
}

// One eager step of `name` in f64, then one step compiled by the fusing
// compiler (which min_cut_test and the e2e tests hold to the interpreter's
// results) per strategy on a
// fresh copy: outputs, parameter gradients and buffers (batch-norm running
// statistics) must match eager's. A strategy whose forward and backward
// graphs print exactly like those of a strategy already run (budget 1 is
// min_cut, for one) would run the same code again, so it is not run twice.
void CheckAllStrategiesAgainstEager(const std::string& name) {
  nn::ModelSpec eager = MakeF64Model(name);
  const TensorTree out_e = (*eager.module)(eager.inputs);
  eager.loss(out_e, eager.targets).backward();
  const std::vector<Tensor> le = Flatten(out_e).first;

  nn::ModelSpec probe = MakeF64Model(name);
  CompilerPipeline probe_pipeline = CompilerPipeline::Create(*probe.module, probe.inputs).value();
  REQUIRE(
      probe_pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
  const JointGraph& joint = *probe_pipeline.joint_graph().value();
  absl::flat_hash_set<std::string> graphs_run;
  for (const Strategy& strategy : AllStrategies()) {
    INFO(name << " under " << strategy.name);
    absl::StatusOr<PartitionResult> part = strategy.fn(joint.graph, joint.layout);
    REQUIRE(part.ok());
    if (!graphs_run.insert(ToString(part->forward) + ToString(part->backward)).second) continue;
    nn::ModelSpec compiled = MakeF64Model(name);
    CompilerPipeline pipeline = CompilerPipeline::Create(*compiled.module, compiled.inputs).value();
    const Function fn = testing::CompileStages(pipeline, strategy.fn, nullptr, codegen::fusing());
    const TensorTree out_c = fn(compiled.inputs).value();
    const std::vector<Tensor> lc = Flatten(out_c).first;
    REQUIRE(lc.size() == le.size());
    for (size_t i = 0; i < lc.size(); ++i) REQUIRE_TENSORS_CLOSE(lc[i], le[i], 1e-10, 1e-10);
    compiled.loss(out_c, compiled.targets).backward();
    testing::RequireSameState(*compiled.module, *eager.module, 1e-10, /*grads=*/true);
  }
}

TEST_CASE("linear, convbn and structured in f64 under every strategy match eager") {
  for (const std::string name : {"linear", "convbn", "structured"}) {
    CheckAllStrategiesAgainstEager(name);
  }
}

TEST_CASE("mlp in f64 under every strategy matches eager") {
  CheckAllStrategiesAgainstEager("mlp");
}

TEST_CASE("cnn in f64 under every strategy matches eager") {
  CheckAllStrategiesAgainstEager("cnn");
}

TEST_CASE("transformer in f64 under every strategy matches eager") {
  CheckAllStrategiesAgainstEager("transformer");
}

// conv -> relu -> max_pool -> dropout -> linear, f32. Min-cut saves the pool
// result (max_pool2d is not MayRecompute); budget 0 recomputes relu, pool and
// dropout from the saved conv result.
std::shared_ptr<nn::Sequential> DropoutModel() {
  Generator gen(5);
  return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(3, 8, 3, 1, 1, 1, 1, true, &gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Dropout>(0.5),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(8 * 4 * 4, 10, true, &gen)});
}

TEST_CASE("dropout recomputed in the backward draws the forward's mask: gradients bit for bit") {
  constexpr uint64_t kSeed = 123;
  const TensorTree input = TensorTree::MakeLeaf(testing::Random({4, 3, 8, 8}, DType::kF32, 7));
  std::shared_ptr<nn::Sequential> eager = DropoutModel();
  manual_seed(kSeed);  // each compiled call below draws from the same state
  const TensorTree out_e = (*eager)(input);
  nn::MeanSquareLoss(out_e, TensorTree()).backward();

  const std::vector<std::pair<std::string, PartitionFn>> strategies = {
      {"min_cut", ByName("min_cut")},
      {"budget 0", ByName("budget", 0)},
      {"budget 0.25", ByName("budget", 0.25)},
      {"budget 0.5", ByName("budget", 0.5)},
      {"budget 0.75", ByName("budget", 0.75)},
      {"budget 1", ByName("budget", 1)},
      {"recompute_all", ByName("recompute_all")}};
  for (const auto& [name, fn] : strategies) {
    INFO(name);
    std::shared_ptr<nn::Sequential> compiled = DropoutModel();
    CompilerPipeline pipeline = CompilerPipeline::Create(*compiled, input).value();
    PartitionResult part;
    const Function model_fn = testing::CompileStages(pipeline, fn, &part);
    manual_seed(kSeed);
    int recomputed_dropouts = 0;
    for (const Node* node : partition::RecomputedNodes(part)) {
      recomputed_dropouts += node->op() == OpKind::kDropout;
    }
    if (name == "budget 0") CHECK(recomputed_dropouts == 1);
    const TensorTree out_c = model_fn(input).value();
    REQUIRE_TENSORS_CLOSE(out_c.leaf(), out_e.leaf(), 0, 0);
    nn::MeanSquareLoss(out_c, TensorTree()).backward();
    testing::RequireSameState(*compiled, *eager, 0, /*grads=*/true);
  }
}

std::vector<std::string> SavedNames(const PartitionResult& part) {
  std::vector<std::string> names;
  for (const partition::SavedValue& s : part.saved) names.push_back(s.name);
  return names;
}

int64_t SavedBytes(const PartitionResult& part) {
  int64_t bytes = 0;
  for (const partition::SavedValue& s : part.saved) bytes += s.bytes;
  return bytes;
}

TEST_CASE("the budget sweep on mlp, cnn and transformer is monotone") {
  const std::vector<double> budgets = {1, 0.75, 0.5, 0.25, 0};
  for (const std::string name : {"mlp", "cnn", "transformer"}) {
    INFO(name);
    nn::ModelSpec spec = nn::MakeModel(name, 11).value();
    CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
    REQUIRE(pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
    const JointGraph& joint = *pipeline.joint_graph().value();
    absl::StatusOr<std::vector<partition::ParetoPoint>> sweep =
        partition::BudgetSweep(joint.graph, joint.layout, budgets);
    INFO(sweep.status().message());
    REQUIRE(sweep.ok());
    REQUIRE(sweep->size() == budgets.size());
    for (size_t i = 0; i < budgets.size(); ++i) {
      INFO("budget " << budgets[i]);
      const partition::ParetoPoint& p = (*sweep)[i];
      CHECK(p.budget == budgets[i]);
      absl::StatusOr<PartitionResult> part =
          partition::BudgetPartition(joint.graph, joint.layout, budgets[i]);
      REQUIRE(part.ok());
      CHECK(p.saved_bytes == SavedBytes(*part));
      CHECK(p.saved_activation_bytes == partition::SavedActivationBytes(joint.graph, *part));
      CHECK(p.recompute_flops == partition::Recomputed(*part).flops);
      if (i == 0) continue;
      const partition::ParetoPoint& prev = (*sweep)[i - 1];
      CHECK(p.saved_bytes <= prev.saved_bytes);
      CHECK(p.recompute_flops >= prev.recompute_flops);
    }
    CHECK(sweep->back().saved_activation_bytes <= sweep->front().saved_activation_bytes);

    absl::StatusOr<PartitionResult> min_cut = partition::MinCutPartition(joint.graph, joint.layout);
    absl::StatusOr<PartitionResult> at_one =
        partition::BudgetPartition(joint.graph, joint.layout, 1);
    absl::StatusOr<PartitionResult> all =
        partition::RecomputeAllPartition(joint.graph, joint.layout);
    absl::StatusOr<PartitionResult> at_zero =
        partition::BudgetPartition(joint.graph, joint.layout, 0);
    REQUIRE(min_cut.ok());
    REQUIRE(at_one.ok());
    REQUIRE(all.ok());
    REQUIRE(at_zero.ok());
    CHECK(SavedNames(*at_one) == SavedNames(*min_cut));
    CHECK(SavedNames(*at_zero) == SavedNames(*all));
    CHECK(SavedBytes(*all) <= SavedBytes(*min_cut));
  }
}

TEST_CASE(
    "budgets between 0 and 1 pin the min-cut values with the most FLOPs per byte first; "
    "only forward values can be pinned") {
  using T = Tree<Tensor>;
  Tensor a = testing::Random({8, 8}, DType::kF64, 1);
  absl::StatusOr<TracedProgram> program = Trace(
      [&](const T& in) {
        const Tensor h = matmul(in[0].leaf(), a);
        const Tensor m1 = sum(exp(h));        // f64[] from 32 elements
        const Tensor m2 = sum(h, {1}, true);  // f64[4,1] from 32 elements
        return T::MakeLeaf(h * m1 * m2);
      },
      T::Tuple({T::MakeLeaf(testing::Random({4, 8}, DType::kF64, 3))}), {{"a", a}});
  REQUIRE(program.ok());
  JointOptions options;
  options.user_inputs_require_grad = {true};
  absl::StatusOr<JointGraph> joint = BuildJointGraph(*program, options);
  REQUIRE(joint.ok());
  const Graph& g = joint->graph;
  auto saved_at = [&](double budget) {
    absl::StatusOr<PartitionResult> part = partition::BudgetPartition(g, joint->layout, budget);
    INFO(part.status().message());
    REQUIRE(part.ok());
    return SavedNames(*part);
  };
  // h = x a (256 bytes, a matmul: always saved), e = exp(h), m1 = sum(e)
  // (8 bytes), m2 = sum(h, 1) (32 bytes), y = h m1 m2. The backward reads x
  // and a (256 + 512 bytes, for the matmul's gradients), h, e, m1, m2 and
  // u = h m1. MayRecompute rejects both sums (they shrink 32 and 8 times),
  // so min-cut saves x, a, h, m1 and m2: 1064 bytes. IsRecomputable accepts
  // them, so budget 0 saves x, a and h: 1024 bytes. Rebuilding m1 from those
  // runs exp and sum, 32 + 1 FLOPs for 8 bytes; m2 takes 4 FLOPs for 32
  // bytes. So m1 is pinned first, from budget 8 / 40 = 0.2 on, and m2 would
  // follow only at 40 / 40, where budget 1 is min-cut anyway.
  const std::vector<std::string> min_cut = {"p_a", "arg0", "0", "2", "3"};
  const std::vector<std::string> zero = {"p_a", "arg0", "0"};
  const std::vector<std::string> with_m1 = {"p_a", "arg0", "0", "2"};
  CHECK(saved_at(1) == min_cut);
  CHECK(saved_at(0.75) == with_m1);
  CHECK(saved_at(0.25) == with_m1);
  CHECK(saved_at(0.1) == zero);
  CHECK(saved_at(0) == zero);
  absl::StatusOr<std::vector<partition::ParetoPoint>> sweep =
      partition::BudgetSweep(g, joint->layout, std::vector<double>{1, 0.25, 0});
  REQUIRE(sweep.ok());
  CHECK((*sweep)[0].saved_bytes == 1064);
  CHECK((*sweep)[0].saved_activation_bytes == 296);
  CHECK((*sweep)[1].saved_bytes == 1032);
  CHECK((*sweep)[2].saved_bytes == 1024);
  CHECK((*sweep)[2].saved_activation_bytes == 256);

  partition::MinCutOptions pin_a_gradient;
  pin_a_gradient.pinned.insert(g.outputs().back());
  absl::StatusOr<std::vector<Value*>> bad =
      partition::MinCutSavedValues(g, joint->layout, pin_a_gradient);
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.status().message() == absl::StrCat("pinned value %", g.outputs().back()->name(),
                                               " is not a primal or a value the forward "
                                               "outputs need"));
}

TEST_CASE("unknown strategies and budgets outside [0, 1] are InvalidArgument") {
  absl::StatusOr<PartitionFn> unknown = partition::PartitionerByName("greedy");
  CHECK(unknown.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(unknown.status().message() ==
        "unknown partition strategy \"greedy\"; known: default, min_cut, budget, recompute_all, "
        "milp");
  CHECK(partition::StrategyNames() ==
        std::vector<std::string>{"default", "min_cut", "budget", "recompute_all", "milp"});

  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {2}});
  REQUIRE(g.SetOutputs({x}).ok());
  const JointLayout layout{.num_primals = 1, .num_forward_outputs = 1};
  for (double budget : {-0.1, 1.5}) {
    absl::StatusOr<PartitionResult> part = partition::BudgetPartition(g, layout, budget);
    CHECK(part.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(part.status().message() ==
          absl::StrCat("activation_memory_budget must be in [0, 1], got ", budget));
    CHECK(partition::PartitionerByName("budget", budget).status().message() ==
          part.status().message());
  }
}

}  // namespace
}  // namespace tc
