// Training an imported model: a small CNN built as PyTorch exports one for
// training (BatchNormalization with training_mode, a dynamic batch N)
// trained by TrainStep under every partition strategy against eager
// training of the same import, step by step; its loss falls; bf16 mixed
// precision trains it too; and a batch of another size runs.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "nn/losses.h"
#include "nn/onnx/import.h"
#include "nn/optim.h"
#include "partition/strategies.h"
#include "pipeline/train_step.h"
#include "runtime/bf16.h"
#include "runtime/ops.h"
#include "tests/nn/onnx/onnx_builder.h"
#include "tests/test_util.h"

namespace tc::onnx {
namespace {

using testing::OnnxBuilder;

// conv 3x3 (1 -> 4) -> batch norm -> relu -> max pool 2 -> flatten -> gemm (64 -> 2).
std::shared_ptr<ImportedModule> SmallCnn() {
  OnnxBuilder model(15);
  model.Input("images", DType::kF32, {"N", int64_t{1}, int64_t{8}, int64_t{8}});
  model.Initializer("conv.weight", testing::Random({4, 1, 3, 3}, DType::kF32, 1) * 0.5);
  model.Initializer("conv.bias", zeros({4}));
  model.Initializer("bn.weight", ones({4}));
  model.Initializer("bn.bias", zeros({4}));
  model.Initializer("bn.running_mean", zeros({4}));
  model.Initializer("bn.running_var", ones({4}));
  model.Initializer("fc.weight", testing::Random({2, 64}, DType::kF32, 2) * 0.1);
  model.Initializer("fc.bias", zeros({2}));
  model.Node("Conv", {"images", "conv.weight", "conv.bias"}, {"c"})
      .Ints("kernel_shape", {3, 3})
      .Ints("pads", {1, 1, 1, 1});
  model
      .Node("BatchNormalization",
            {"c", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, {"n", "", ""})
      .Float("momentum", 0.9)
      .Int("training_mode", 1);
  model.Node("Relu", {"n"}, {"a"});
  model.Node("MaxPool", {"a"}, {"p"}).Ints("kernel_shape", {2, 2}).Ints("strides", {2, 2});
  model.Node("Flatten", {"p"}, {"f"});
  model.Node("Gemm", {"f", "fc.weight", "fc.bias"}, {"logits"}).Int("transB", 1);
  model.Output("logits", DType::kF32);
  return ImportFromString(model.Bytes()).value();
}

// 16 images whose label says whether the left half is brighter.
struct Data {
  Tensor images, labels;
};
Data MakeData(int64_t n, uint64_t seed) {
  const Tensor images = testing::Random({n, 1, 8, 8}, DType::kF32, seed);
  const Tensor left = mean(slice(images, 3, 0, 4), {1, 2, 3});
  const Tensor right = mean(slice(images, 3, 4, 8), {1, 2, 3});
  return {images, cast(gt(left, right), DType::kI64)};
}

Tensor Loss(const TensorTree& logits, const TensorTree& labels) {
  return nn::cross_entropy(logits.leaf(), labels.leaf());
}

TEST_CASE("an imported CNN trains under TrainStep as eagerly, with every partition strategy") {
  const Data data = MakeData(16, 3);
  for (const std::string& strategy : partition::StrategyNames()) {
    INFO(strategy);
    auto compiled = SmallCnn(), eager = SmallCnn();
    nn::SGD sgd_c(compiled->named_parameters(), 0.1, 0.9),
        sgd_e(eager->named_parameters(), 0.1, 0.9);
    std::unique_ptr<TrainStep> step =
        TrainStep::Create(*compiled, Loss, TensorTree::MakeLeaf(data.images),
                          TensorTree::MakeLeaf(data.labels), sgd_c,
                          {.partition_fn = partition::PartitionerByName(strategy).value()})
            .value();
    double first = 0, last = 0;
    for (int i = 0; i < 12; ++i) {
      const double loss_c = step->Run({data.images, data.labels}).value();
      sgd_e.zero_grad();
      const Tensor loss_e =
          Loss((*eager)(TensorTree::MakeLeaf(data.images)), TensorTree::MakeLeaf(data.labels));
      loss_e.backward();
      sgd_e.step();
      REQUIRE(loss_c == Approx(loss_e.item<float>()).epsilon(1e-4));
      if (i == 0) first = loss_c;
      last = loss_c;
    }
    CHECK(last < 0.6 * first);
    const nn::NamedTensors buffers_c = compiled->named_buffers(),
                           buffers_e = eager->named_buffers();
    REQUIRE(buffers_c.size() == 2);
    for (size_t i = 0; i < buffers_c.size(); ++i) {
      INFO(buffers_c[i].first);
      CHECK(testing::CompareTensors(buffers_c[i].second, buffers_e[i].second, 1e-4, 1e-5) == "");
    }
  }
}

TEST_CASE("an imported CNN trains in bf16 mixed precision and at another batch size") {
  const Data data = MakeData(16, 3);
  auto model = SmallCnn();
  nn::SGD sgd(model->named_parameters(), 0.1, 0.9);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*model, Loss, TensorTree::MakeLeaf(data.images),
                        TensorTree::MakeLeaf(data.labels), sgd, {.precision = Precision::kBF16})
          .value();
  const double first = step->Run({data.images, data.labels}).value();
  double last = first;
  for (int i = 0; i < 11; ++i) last = step->Run({data.images, data.labels}).value();
  CHECK(last < 0.6 * first);
  const Data other = MakeData(10, 4);  // the batch N takes 10: compiled once more, over a symbol
  CHECK(std::isfinite(step->Run({other.images, other.labels}).value()));
  CHECK(step->compilations() == 2);
}

TEST_CASE("the model's named batch dim is a symbol from the first compilation") {
  auto model = SmallCnn();
  DynamicDims dims = model->named_dims("arg0");
  CHECK(dims == DynamicDims{{"arg0", {0}}});
  dims["arg1"] = {0};  // the labels' batch
  nn::SGD sgd(model->named_parameters(), 0.1);
  const Data data = MakeData(16, 3), other = MakeData(6, 5);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*model, Loss, TensorTree::MakeLeaf(data.images),
                        TensorTree::MakeLeaf(data.labels), sgd, {.dynamic_dims = dims})
          .value();
  CHECK(std::isfinite(step->Run({data.images, data.labels}).value()));
  CHECK(std::isfinite(step->Run({other.images, other.labels}).value()));
  CHECK(step->compilations() == 1);
}

}  // namespace
}  // namespace tc::onnx
