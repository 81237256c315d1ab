// Any batch size through one compiled step or function: a TrainStep and a
// staged training function called with batches of 1, 7, 32 and 128 in turn
// (the transformer with a new sequence length each time), checked in f64
// against eager training at every size; the capture, autodiff and partition
// done once for all sizes, each size planned once.
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "graph/parser.h"
#include "graph/printer.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "partition/min_cut.h"
#include "pipeline/compiler_pipeline.h"
#include "pipeline/train_step.h"
#include "runtime/ops.h"
#include "runtime/random.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

// One size of a model's batch: the batch size, and for the transformer the
// sequence length.
struct Size {
  int64_t batch, length;
};
constexpr Size kSizes[] = {{1, 16}, {7, 5}, {32, 8}, {128, 3}};

nn::ModelSpec Model(const std::string& name) {
  nn::ModelSpec spec = nn::MakeModel(name, 5).value();
  spec.module->to(DType::kF64);
  auto cast = [](const Tensor& t) { return IsFloating(t.dtype()) ? t.to(DType::kF64) : t; };
  spec.inputs = spec.inputs.Map(cast);
  spec.targets = spec.targets.Map(cast);
  return spec;
}

// The example's leaves, resized: dim 0 to the batch, and a transformer's
// dim 1 to the length; floats drawn from `gen`, labels in [0, 10).
std::vector<Tensor> Resized(const TensorTree& tree, const std::string& name, Size size,
                            Generator& gen) {
  std::vector<Tensor> out;
  for (const Tensor& t : Flatten(tree).first) {
    Shape shape = t.shape();
    shape[0] = size.batch;
    if (name == "transformer") shape[1] = size.length;
    if (IsFloating(t.dtype())) {
      out.push_back(randn(shape, t.dtype(), &gen));
    } else {
      std::vector<int64_t> labels(NumElements(shape));
      for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 7 + 3) % 10);
      out.push_back(from_vector(labels, shape));
    }
  }
  return out;
}

struct Batch {
  std::vector<Tensor> inputs, targets;
  TensorTree input_tree, target_tree;
};

Batch MakeBatch(const nn::ModelSpec& spec, Size size, Generator& gen) {
  Batch b;
  b.inputs = Resized(spec.inputs, spec.name, size, gen);
  b.targets = Resized(spec.targets, spec.name, size, gen);
  b.input_tree = *Unflatten(b.inputs, Flatten(spec.inputs).second);
  b.target_tree = *Unflatten(b.targets, Flatten(spec.targets).second);
  return b;
}

TEST_CASE("one TrainStep trains every batch size as eager does, compiled twice") {
  for (const std::string name : {"mlp", "cnn", "transformer"}) {
    INFO(name);
    nn::ModelSpec compiled = Model(name), eager = Model(name);
    nn::SGD sgd_c(compiled.module->named_parameters(), 0.05, 0.9);
    nn::SGD sgd_e(eager.module->named_parameters(), 0.05, 0.9);
    std::unique_ptr<TrainStep> step =
        TrainStep::Create(*compiled.module, compiled.loss, compiled.inputs, compiled.targets, sgd_c)
            .value();
    CHECK(step->compilations() == 1);
    Generator gen(11);
    for (Size size : kSizes) {
      INFO("batch " << size.batch << ", length " << size.length);
      const Batch b = MakeBatch(compiled, size, gen);
      std::vector<Tensor> leaves = b.inputs;
      leaves.insert(leaves.end(), b.targets.begin(), b.targets.end());
      const double loss_c = step->Run(leaves).value();
      sgd_e.zero_grad();
      const Tensor loss_e = eager.loss((*eager.module)(b.input_tree), b.target_tree);
      loss_e.backward();
      sgd_e.step();
      REQUIRE(loss_c == Approx(loss_e.item<double>()).epsilon(1e-10));
      testing::RequireSameState(*compiled.module, *eager.module, 1e-10, /*grads=*/false);
    }
    // The first batch of a new size made its dims symbols; every later size
    // was a plan of the same compiled step.
    CHECK(step->compilations() == 2);
    const codegen::PlanCacheStats stats = step->forward().plan_cache();
    CHECK(stats.misses + stats.hits == 4);
    // The example's batch (mlp 128, cnn 32) is among the sizes; the
    // transformer's (8 x 128) is not.
    CHECK(stats.hits == (name == "transformer" ? 0 : 1));
    CHECK(stats.plans == 1 + stats.misses);  // the example's size, planned at compile time
    CHECK(step->backward().plan_cache().misses == stats.misses);
  }
}

TEST_CASE("dropout over a symbolic batch draws as many numbers as eager, at every size") {
  for (const std::string name : {"mlp_dropout", "transformer_dropout"}) {
    INFO(name);
    nn::ModelSpec compiled = Model(name), eager = Model(name);
    nn::SGD sgd_c(compiled.module->named_parameters(), 0.05);
    nn::SGD sgd_e(eager.module->named_parameters(), 0.05);
    manual_seed(9);
    std::unique_ptr<TrainStep> step =
        TrainStep::Create(*compiled.module, compiled.loss, compiled.inputs, compiled.targets, sgd_c)
            .value();
    Generator eager_gen = DefaultGenerator();
    Generator data(5);
    const std::string model = name == "mlp_dropout" ? "mlp" : "transformer";
    for (Size size : kSizes) {
      INFO("batch " << size.batch << ", length " << size.length);
      nn::ModelSpec shaped = compiled;
      shaped.name = model;  // Resized reads the sequence dim by model name
      const Batch b = MakeBatch(shaped, size, data);
      std::vector<Tensor> leaves = b.inputs;
      leaves.insert(leaves.end(), b.targets.begin(), b.targets.end());
      const double loss_c = step->Run(leaves).value();
      const Generator compiled_gen = DefaultGenerator();
      DefaultGenerator() = eager_gen;
      sgd_e.zero_grad();
      const Tensor loss_e = eager.loss((*eager.module)(b.input_tree), b.target_tree);
      loss_e.backward();
      sgd_e.step();
      eager_gen = DefaultGenerator();
      DefaultGenerator() = compiled_gen;
      CHECK(compiled_gen.offset() == eager_gen.offset());
      REQUIRE(loss_c == Approx(loss_e.item<double>()).epsilon(1e-10));
      testing::RequireSameState(*compiled.module, *eager.module, 1e-10, /*grads=*/false);
    }
    CHECK(step->compilations() == 2);
  }
}

TEST_CASE("dims marked dynamic at capture: one compilation, one partition, graphs as text") {
  for (const std::string name : {"mlp", "cnn", "transformer"}) {
    INFO(name);
    nn::ModelSpec compiled = Model(name), eager = Model(name);
    const std::vector<int64_t> dims =
        name == "transformer" ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
    CompilerPipeline pipeline = CompilerPipeline::Create(*compiled.module, compiled.inputs,
                                                         {.dynamic_dims = {{"arg", dims}}})
                                    .value();
    const std::string captured = ToString(pipeline.captured().graph);
    CHECK(captured.find("%arg: f64[s") != std::string::npos);
    CHECK(ToString(Parse(captured).value()) == captured);
    REQUIRE(pipeline.generate_ir_for_training().ok());
    CHECK(!pipeline.partition(partition::MinCutPartition, **pipeline.joint_graph())
               .value()
               .symbols_for_bw.empty());
    // The same stages in one call, counted: a recompilation would partition
    // again.
    int partitions = 0;
    const partition::PartitionFn counting = [&](const Graph& joint, const JointLayout& layout) {
      ++partitions;
      return partition::MinCutPartition(joint, layout);
    };
    auto stats = std::make_shared<CompileStats>();
    const Function fn =
        compile(*compiled.module, compiled.inputs,
                {.partition_fn = counting, .dynamic_dims = {{"arg", dims}}, .stats = stats})
            .value();
    Generator gen(3);
    for (Size size : kSizes) {
      INFO("batch " << size.batch << ", length " << size.length);
      const Batch b = MakeBatch(compiled, size, gen);
      for (nn::Module* m : {compiled.module.get(), eager.module.get()}) {
        for (auto& [fqn, p] : m->named_parameters()) p.set_grad(Tensor());
      }
      const Tensor out_c = fn(b.input_tree).value().leaf();
      const Tensor out_e = (*eager.module)(b.input_tree).leaf();
      REQUIRE(testing::CompareTensors(out_c, out_e, 1e-10, 1e-10).empty());
      sum(out_c * out_c).backward();
      sum(out_e * out_e).backward();
      testing::RequireSameState(*compiled.module, *eager.module, 1e-10, /*grads=*/true);
    }
    CHECK(partitions == 1);
    CHECK(stats->compilations == 1);
  }
}

// Draws a tensor shaped by its input's batch: data of a symbolic size.
class NoiseModel : public nn::Module {
 public:
  TensorTree forward(const TensorTree& in) override {
    const Tensor& x = in.leaf();
    return TensorTree::MakeLeaf(x + randn({x.size(0), x.size(1)}, x.dtype()));
  }
};

TEST_CASE("data of a symbolic size inside traced code is an error, not a crash") {
  NoiseModel model;
  absl::StatusOr<CompilerPipeline> pipeline = CompilerPipeline::Create(
      model, TensorTree::MakeLeaf(zeros({4, 3})), {.dynamic_dims = {{"arg", {0}}}});
  REQUIRE_FALSE(pipeline.ok());
  CHECK_THAT(std::string(pipeline.status().message()),
             Catch::StartsWith("a tensor of symbolic shape [s") &&
                 Catch::Contains(",3] has no data: traced code creates data of number sizes only"));
}

TEST_CASE("without automatic dynamic, a batch of another size is an error") {
  nn::ModelSpec spec = Model("mlp");
  nn::SGD sgd(spec.module->named_parameters(), 0.05);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd,
                        {.automatic_dynamic = false})
          .value();
  Generator gen(1);
  const Batch b = MakeBatch(spec, {7, 0}, gen);
  absl::StatusOr<double> loss = step->Run({b.inputs[0], b.targets[0]});
  REQUIRE_FALSE(loss.ok());
  CHECK(std::string(loss.status().message()).find("expected f64[128,784], got f64[7,784]") !=
        std::string::npos);
}

}  // namespace
}  // namespace tc
