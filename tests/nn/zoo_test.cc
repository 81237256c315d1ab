// The model zoo: torchvision's (and the U-Net implementation's) names and
// sizes, and each model's compiled training step against eager in f64 under
// default, min-cut, budget 0.5 and milp 0.5: outputs, gradients, parameters
// and BatchNorm's running statistics.
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

// The shape of the tensor named `name`; empty when there is none.
Shape ShapeOf(const nn::NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors) {
    if (n == name) return t.shape();
  }
  return Shape{};
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

TEST_CASE("mobilenetv2 has torchvision's names, depthwise filters and counts") {
  const nn::ModelSpec spec = nn::MakeModel("mobilenetv2", 0).value();
  const nn::NamedTensors params = spec.module->named_parameters();
  // torchvision's mobilenet_v2(num_classes=10): 52 convolutions and 52
  // BatchNorms, a Linear; 3,504,872 numbers at 1000 classes, 1,268,190 fewer
  // at 10.
  CHECK(params.size() == 158);
  CHECK(NumElements(params) == 3504872 - 1268190);
  const std::vector<std::string> names = Names(params);
  CHECK(names.front() == "features.0.0.weight");
  // Block 1 (expansion 1) starts with its depthwise filter; block 2 with
  // its expansion, then the depthwise one.
  CHECK(names[3] == "features.1.conv.0.0.weight");
  CHECK(ShapeOf(params, "features.1.conv.0.0.weight") == Shape{32, 1, 3, 3});
  CHECK(ShapeOf(params, "features.2.conv.0.0.weight") == Shape{96, 16, 1, 1});
  CHECK(ShapeOf(params, "features.2.conv.1.0.weight") == Shape{96, 1, 3, 3});
  CHECK(ShapeOf(params, "features.18.0.weight") == Shape{1280, 320, 1, 1});
  CHECK(names.back() == "classifier.1.bias");
  CHECK(spec.module->named_buffers().size() == 3 * 52);
  const Tensor logits = (*spec.module)(spec.inputs).leaf();
  CHECK(logits.shape() == Shape{8, 10});
}

TEST_CASE("gpt ties its logits to the token embedding; lstm has PyTorch's LSTM names") {
  const nn::ModelSpec gpt = nn::MakeModel("gpt", 0).value();
  const std::vector<std::string> names = Names(gpt.module->named_parameters());
  // wte, wpe, 4 blocks of 12 tensors, ln_f; no weight of the logits' own.
  CHECK(names.size() == 52);
  CHECK(NumElements(gpt.module->named_parameters()) == 834304);
  CHECK(names[0] == "wte.weight");
  CHECK(names[2] == "h.0.ln1.weight");
  CHECK(names[4] == "h.0.attn.in_proj_weight");
  CHECK(names.back() == "ln_f.bias");
  CHECK(gpt.module->named_buffers().empty());
  CHECK((*gpt.module)(gpt.inputs).leaf().shape() == Shape{8, 64, 256});

  const nn::ModelSpec lstm = nn::MakeModel("lstm", 0).value();
  CHECK(Names(lstm.module->named_parameters()) ==
        std::vector<std::string>{"encoder.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0",
                                 "rnn.bias_ih_l0", "rnn.bias_hh_l0", "rnn.weight_ih_l1",
                                 "rnn.weight_hh_l1", "rnn.bias_ih_l1", "rnn.bias_hh_l1",
                                 "decoder.weight", "decoder.bias"});
  CHECK(NumElements(lstm.module->named_parameters()) == 1020160);
  CHECK((*lstm.module)(lstm.inputs).leaf().shape() == Shape{32, 8, 256});
}

TEST_CASE("unet has the U-Net implementation's names, counts and skips") {
  const nn::ModelSpec spec = nn::MakeModel("unet", 0).value();
  const nn::NamedTensors params = spec.module->named_parameters();
  // 9 DoubleConvs (2 convolutions, 2 BatchNorms each), 4 transposed
  // convolutions with bias, the 1x1 output convolution: 64 tensors; at
  // width 64 the same formula gives that implementation's 31,037,698.
  CHECK(params.size() == 64);
  CHECK(NumElements(params) == 1942594);
  const std::vector<std::string> names = Names(params);
  CHECK(names.front() == "inc.double_conv.0.weight");
  CHECK(names[6] == "down1.maxpool_conv.1.double_conv.0.weight");
  CHECK(std::count(names.begin(), names.end(), "up1.up.weight") == 1);
  CHECK(std::count(names.begin(), names.end(), "up4.conv.double_conv.4.bias") == 1);
  CHECK(names.back() == "outc.conv.bias");
  // up1 halves 256 channels to 128, then joins down3's 128: 256 in again.
  CHECK(ShapeOf(params, "up1.up.weight") == Shape{256, 128, 2, 2});
  CHECK(ShapeOf(params, "up1.conv.double_conv.0.weight") == Shape{128, 256, 3, 3});
  CHECK(spec.module->named_buffers().size() == 3 * 18);
  const Tensor logits = (*spec.module)(spec.inputs).leaf();
  CHECK(logits.shape() == Shape{8, 2, 32, 32});
  CHECK(spec.targets.leaf().shape() == Shape{8, 32, 32});

  // A size the four poolings cannot halve is an error naming it.
  REQUIRE_THROWS_WITH((*spec.module)(randn({1, 3, 24, 24})),
                      Catch::Contains("UNet: expected images [N, C, H, W] with H and W "
                                      "multiples of 16 (four 2x2 poolings), got f32[1,3,24,24]"));
}

TEST_CASE("a causal model's logits at a position do not depend on later tokens") {
  const nn::ModelSpec gpt = nn::MakeModel("gpt", 0).value();
  const Tensor tokens = gpt.inputs.leaf();
  // Every token from position 10 on changed.
  const Tensor changed = concat({slice(tokens, 1, 0, 10), full({8, 54}, 7, DType::kI64)}, 1);
  const Tensor before = (*gpt.module)(tokens), after = (*gpt.module)(changed);
  REQUIRE_TENSORS_CLOSE(slice(after, 1, 0, 10), slice(before, 1, 0, 10), 1e-6, 1e-6);
  CHECK(max(abs(slice(after, 1, 10, 64) - slice(before, 1, 10, 64))).item<float>() > 1e-3);
}

// The model in f64 on the first `examples` examples of its batch.
nn::ModelSpec SmallF64(const std::string& name, int64_t examples) {
  nn::ModelSpec s = nn::MakeModel(name, 3).value();
  s.module->to(DType::kF64);
  const Tensor inputs = slice(s.inputs.leaf(), 0, 0, examples);
  s.inputs = TensorTree::MakeLeaf(IsFloating(inputs.dtype()) ? inputs.to(DType::kF64) : inputs);
  s.targets = TensorTree::MakeLeaf(slice(s.targets.leaf(), 0, 0, examples));
  return s;
}

// 1e-8, not the reference models' 1e-10: through 20 to 52 BatchNorms over
// small batches, the summation orders of the compiled kernels and of eager
// move f64 gradients by more (resnet18's stem by over 1e-10, mobilenetv2's
// by over 1e-9, relative).
constexpr double kTol = 1e-8;

void CheckStrategiesAgainstEager(const std::string& name, int64_t examples = 2) {
  constexpr uint64_t kDropoutSeed = 17;  // vgg11's and mobilenetv2's classifiers draw masks
  nn::ModelSpec eager = SmallF64(name, examples);
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
    nn::ModelSpec compiled = SmallF64(name, examples);
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

TEST_CASE("gpt and lstm in f64: the compiled step equals eager under every strategy") {
  CheckStrategiesAgainstEager("gpt");
  CheckStrategiesAgainstEager("lstm");  // 2 of its 32 time steps
}

TEST_CASE("unet in f64: the compiled step equals eager under every strategy") {
  CheckStrategiesAgainstEager("unet");
}

TEST_CASE("mobilenetv2 in f64: the compiled step equals eager under every strategy") {
  // 4 examples: over 2, the BatchNorms of its last, 1x1 stages see two
  // values a channel, and the stem's gradients reach 1e6, ill-conditioned.
  CheckStrategiesAgainstEager("mobilenetv2", /*examples=*/4);
}

}  // namespace
}  // namespace tc
