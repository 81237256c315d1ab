// Random ops compiled as eager runs them (functionalized RNG): a captured
// graph takes the default generator's seed and offset as inputs, drawn at
// each call and advanced by what the call consumed. Three calls of a compiled
// training function draw three masks, each equal bit for bit (f64) to eager's
// from the same generator state, with eager's gradients, under every
// partition and both compilers; a TrainStep with dropout trains as eager SGD
// does; the generator ends where eager leaves it.
#include "runtime/random.h"

#include <memory>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "graph/printer.h"
#include "nn/layers.h"
#include "nn/models/models.h"  // TransformerBlock, MeanSquareLoss
#include "nn/optim.h"
#include "partition/min_cut.h"
#include "partition/strategies.h"
#include "pipeline/compiler_pipeline.h"
#include "pipeline/train_step.h"
#include "runtime/ops.h"
#include "runtime/trace.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

// x + dropout(fc(x)): dropout in a residual branch.
class Residual : public nn::Module {
 public:
  Residual() : fc_(register_module("fc", std::make_shared<nn::Linear>(8, 8))) {
    drop_ = register_module("drop", std::make_shared<nn::Dropout>(0.4));
  }
  Tensor forward(const Tensor& x) override { return add(x, (*drop_)((*fc_)(x))); }
  using Module::forward;

 private:
  std::shared_ptr<nn::Linear> fc_;
  std::shared_ptr<nn::Dropout> drop_;
};

// The models, each made from a fixed seed (so two copies are equal), in f64.
std::shared_ptr<nn::Module> MakeModel(const std::string& name) {
  manual_seed(17);
  std::shared_ptr<nn::Module> m;
  if (name == "dropout before a matmul") {
    m = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Dropout>(0.3), std::make_shared<nn::Linear>(8, 6),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(6, 4)});
  } else if (name == "dropout after an activation") {
    m = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(8, 6), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Dropout>(0.5), std::make_shared<nn::Linear>(6, 4)});
  } else if (name == "dropout in a residual branch") {
    m = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
        std::make_shared<Residual>(), std::make_shared<nn::Linear>(8, 4)});
  } else {  // on attention weights and on both residual branches
    m = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::TransformerBlock>(8, 2, 16, nullptr, 0.3),
        std::make_shared<nn::Linear>(8, 4)});
  }
  m->to(DType::kF64);
  return m;
}

const std::vector<std::string> kModels = {"dropout before a matmul", "dropout after an activation",
                                          "dropout in a residual branch",
                                          "a transformer block with dropout"};

struct NamedPartition {
  const char* name;
  partition::PartitionFn fn;
};

std::vector<NamedPartition> Partitions() {
  return {{"default", partition::DefaultPartition},
          {"min-cut", partition::MinCutPartition},
          {"budget 0", partition::MemoryBudgetPartitioner(0)},
          {"budget 0.5", partition::MemoryBudgetPartitioner(0.5)},
          {"budget 1", partition::MemoryBudgetPartitioner(1)},
          {"recompute-all", partition::RecomputeAllPartition}};
}

TEST_CASE("compiled calls draw fresh masks, each eager's from the same generator state") {
  const Tensor x = testing::Random({2, 5, 8}, DType::kF64, 3);
  for (const std::string& name : kModels) {
    for (const NamedPartition& part : Partitions()) {
      for (const testing::NamedCompiler& compiler : testing::AllCompilers()) {
        INFO(name << ", " << part.name << ", " << compiler.name);
        std::shared_ptr<nn::Module> compiled = MakeModel(name), eager = MakeModel(name);
        const TensorTree in = TensorTree::MakeLeaf(x);
        manual_seed(5);
        const Function fn =
            compile(*compiled, in, {.partition_fn = part.fn, .compiler = compiler.compiler})
                .value();
        // Capture draws nothing.
        REQUIRE(DefaultGenerator().offset() == 0);
        std::vector<std::vector<double>> outputs;
        for (int call = 0; call < 3; ++call) {
          const Generator before = DefaultGenerator();
          const Tensor got = fn(in).value().leaf();
          const Generator after = DefaultGenerator();
          DefaultGenerator() = before;
          const Tensor want = (*eager)(x);
          REQUIRE(DefaultGenerator().offset() == after.offset());
          REQUIRE_TENSORS_CLOSE(got, want, 0, 0);
          outputs.push_back(got.to_vector<double>());
          compiled->zero_grad();
          eager->zero_grad();
          sum(mul(got, got)).backward();
          sum(mul(want, want)).backward();
          testing::RequireSameState(*compiled, *eager, 1e-12, /*grads=*/true);
        }
        CHECK(outputs[0] != outputs[1]);
        CHECK(outputs[1] != outputs[2]);
      }
    }
  }
}

TEST_CASE("a TrainStep with dropout trains as eager SGD does, drawing what eager draws") {
  for (const std::string& name : kModels) {
    INFO(name);
    std::shared_ptr<nn::Module> compiled = MakeModel(name), eager = MakeModel(name);
    const Tensor x = testing::Random({2, 5, 8}, DType::kF64, 4);
    const Tensor t = testing::Random({2, 5, 4}, DType::kF64, 6);
    nn::SGD sgd_c(compiled->named_parameters(), 0.1), sgd_e(eager->named_parameters(), 0.1);
    manual_seed(9);
    std::unique_ptr<TrainStep> step =
        TrainStep::Create(*compiled, nn::MeanSquareLoss, TensorTree::MakeLeaf(x),
                          TensorTree::MakeLeaf(t), sgd_c)
            .value();
    Generator eager_gen = DefaultGenerator();
    for (int i = 0; i < 3; ++i) {
      const double loss = step->Run({x, t}).value();
      const Generator compiled_gen = DefaultGenerator();
      DefaultGenerator() = eager_gen;
      eager->zero_grad();
      const Tensor eager_loss =
          nn::MeanSquareLoss(TensorTree::MakeLeaf((*eager)(x)), TensorTree::MakeLeaf(t));
      eager_loss.backward();
      sgd_e.step();
      eager_gen = DefaultGenerator();
      DefaultGenerator() = compiled_gen;
      CHECK(compiled_gen.offset() == eager_gen.offset());
      CHECK(loss == Approx(eager_loss.item<double>()).epsilon(1e-12));
      testing::RequireSameState(*compiled, *eager, 1e-12, /*grads=*/false);
    }
  }
}

TEST_CASE("in eval mode dropout is the identity and a compiled call draws nothing") {
  for (bool training_graph : {true, false}) {
    INFO((training_graph ? "training function" : "inference function"));
    std::shared_ptr<nn::Module> model = MakeModel("dropout after an activation");
    model->eval();
    const Tensor x = testing::Random({2, 5, 8}, DType::kF64, 8);
    const Function fn =
        compile(*model, TensorTree::MakeLeaf(x), {.training = training_graph}).value();
    manual_seed(4);
    const Tensor got = fn(TensorTree::MakeLeaf(x)).value().leaf();
    CHECK(DefaultGenerator().offset() == 0);
    REQUIRE_TENSORS_CLOSE(got, (*model)(x), 0, 0);
  }
}

TEST_CASE("traced code drawing from a generator of its own is an error") {
  Generator own(3);
  const absl::StatusOr<TracedProgram> p = Trace(
      [&](const TensorTree& in) { return TensorTree::MakeLeaf(dropout(in.leaf(), 0.5, &own)); },
      TensorTree::MakeLeaf(randn({2, 3})));
  REQUIRE(p.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(p.status().message() ==
        "a traced random op draws from the default generator, not a generator of its own");
}

TEST_CASE("a traced graph takes the random state as inputs, each op at its own offset") {
  const absl::StatusOr<TracedProgram> p = Trace(
      [](const TensorTree& in) {
        const Tensor a = dropout(in.leaf(), 0.5);
        return TensorTree::MakeLeaf(dropout(a, 0.25));
      },
      TensorTree::MakeLeaf(randn({2, 3})));
  REQUIRE(p.ok());
  CHECK(p->random.numbers == 12);
  REQUIRE(p->inputs.size() == 3);
  CHECK(p->inputs[1].kind == InputDescriptor::Kind::kRandomSeed);
  CHECK(p->inputs[2].kind == InputDescriptor::Kind::kRandomOffset);
  CHECK(ToString(p->graph) ==
        "graph(%arg: f32[2,3], %rng_seed: i64[], %rng_offset: i64[]) {\n"
        "  %0: f32[2,3] = dropout(%arg, %rng_seed, %rng_offset) {p=0.5}\n"
        "  %1: i64[] = full() {dtype=i64, shape=[], value=6.0}\n"
        "  %2: i64[] = add(%rng_offset, %1)\n"
        "  %3: f32[2,3] = dropout(%0, %rng_seed, %2) {p=0.25}\n"
        "  return (%3)\n"
        "}\n");
}

}  // namespace
}  // namespace tc
