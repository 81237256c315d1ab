// The model zoo: torchvision's names and sizes, and each model's compiled
// training step against eager in f64 under default, min-cut, budget 0.5 and
// milp 0.5: outputs, gradients, parameters and BatchNorm's running
// statistics.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "nn/models/models.h"
#include "partition/milp.h"
#include "partition/strategies.h"
#include "pipeline/compiler_pipeline.h"
#include "runtime/ops.h"
#include "runtime/random.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

int64_t NumElements(const nn::NamedTensors& tensors) {
  int64_t n = 0;
  for (const auto& [name, t] : tensors) n += t.numel();
  return n;
}

std::vector<std::string> Names(const nn::NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  return names;
}

TEST_CASE("resnet18 has torchvision's parameter names and counts") {
  const nn::ModelSpec spec = nn::MakeModel("resnet18", 0).value();
  const nn::NamedTensors params = spec.module->named_parameters();
  // torchvision's resnet18(num_classes=10): 62 tensors, 11,181,642 numbers.
  CHECK(params.size() == 62);
  CHECK(NumElements(params) == 11181642);
  const std::vector<std::string> names = Names(params);
  CHECK(names.front() == "conv1.weight");
  CHECK(names[3] == "layer1.0.conv1.weight");
  CHECK(std::count(names.begin(), names.end(), "layer2.0.downsample.0.weight") == 1);
  CHECK(std::count(names.begin(), names.end(), "layer1.0.downsample.0.weight") == 0);
  CHECK(names.back() == "fc.bias");
  // 20 BatchNorm2d layers, three buffers each.
  CHECK(spec.module->named_buffers().size() == 60);
  const Tensor logits = (*spec.module)(spec.inputs).leaf();
  CHECK(logits.shape() == Shape{8, 10});
}

TEST_CASE("vgg11 has torchvision's feature names and its 512-wide head") {
  const nn::ModelSpec spec = nn::MakeModel("vgg11", 0).value();
  const nn::NamedTensors params = spec.module->named_parameters();
  // 8 convolutions and 8 BatchNorms (weight, bias each), 3 Linear layers.
  CHECK(params.size() == 38);
  CHECK(NumElements(params) == 9756426);
  const std::vector<std::string> names = Names(params);
  CHECK(names.front() == "features.0.weight");
  CHECK(names[2] == "features.1.weight");  // the first BatchNorm2d
  CHECK(names[31] == "features.26.bias");  // the last
  CHECK(names[32] == "classifier.0.weight");
  CHECK(names.back() == "classifier.6.bias");
  CHECK(spec.module->named_buffers().size() == 24);
  const Tensor logits = (*spec.module)(spec.inputs).leaf();
  CHECK(logits.shape() == Shape{8, 10});
}

// The model in f64 on the first two examples of its batch.
nn::ModelSpec SmallF64(const std::string& name) {
  nn::ModelSpec s = nn::MakeModel(name, 3).value();
  s.module->to(DType::kF64);
  s.inputs = TensorTree::MakeLeaf(slice(s.inputs.leaf(), 0, 0, 2).to(DType::kF64));
  s.targets = TensorTree::MakeLeaf(slice(s.targets.leaf(), 0, 0, 2));
  return s;
}

// 1e-9: through 20 BatchNorms over batches of 2 (1x1 at layer4), each
// dividing by a small deviation, summation orders that differ between the
// compiled kernels and eager's move f64 gradients by more than the 1e-10
// the reference models hold to.
constexpr double kTol = 1e-9;

void CheckStrategiesAgainstEager(const std::string& name) {
  constexpr uint64_t kDropoutSeed = 17;  // vgg11's classifier draws masks
  nn::ModelSpec eager = SmallF64(name);
  manual_seed(kDropoutSeed);
  const Tensor out_e = (*eager.module)(eager.inputs).leaf();
  eager.loss(TensorTree::MakeLeaf(out_e), eager.targets).backward();

  const std::vector<std::pair<std::string, partition::PartitionFn>> strategies = {
      {"default", partition::PartitionerByName("default").value()},
      {"min_cut", partition::PartitionerByName("min_cut").value()},
      {"budget 0.5", partition::PartitionerByName("budget", 0.5).value()},
      {"milp 0.5", partition::MilpPartitioner(0.5)},
  };
  for (const auto& [strategy, fn] : strategies) {
    INFO(name << " under " << strategy);
    nn::ModelSpec compiled = SmallF64(name);
    CompilerPipeline pipeline = CompilerPipeline::Create(*compiled.module, compiled.inputs).value();
    const Function step = testing::CompileStages(pipeline, fn, nullptr, codegen::fusing());
    manual_seed(kDropoutSeed);
    const Tensor out_c = step(compiled.inputs).value().leaf();
    REQUIRE_TENSORS_CLOSE(out_c, out_e, kTol, kTol);
    compiled.loss(TensorTree::MakeLeaf(out_c), compiled.targets).backward();
    testing::RequireSameState(*compiled.module, *eager.module, kTol, /*grads=*/true);
  }
}

TEST_CASE("resnet18 in f64: the compiled step equals eager under every strategy") {
  CheckStrategiesAgainstEager("resnet18");
}

TEST_CASE("vgg11 in f64: the compiled step equals eager under every strategy") {
  CheckStrategiesAgainstEager("vgg11");
}

}  // namespace
}  // namespace tc
