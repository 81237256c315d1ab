#include "nn/models/vgg.h"

#include <utility>
#include <vector>

#include "runtime/ops.h"

namespace tc::nn {
namespace {

constexpr int64_t kPool = 0;
// torchvision's configuration "A": output channels of each 3x3
// convolution (each followed by BatchNorm2d and ReLU), kPool a 2x2 max pool.
constexpr int64_t kVgg11[] = {64,  kPool, 128,   kPool, 256, 256,  kPool,
                              512, 512,   kPool, 512,   512, kPool};

std::shared_ptr<Sequential> Features(Generator* gen) {
  std::vector<std::shared_ptr<Module>> layers;
  int64_t channels = 3;
  for (const int64_t out : kVgg11) {
    if (out == kPool) {
      layers.push_back(std::make_shared<MaxPool2d>(2, 2));
      continue;
    }
    layers.push_back(std::make_shared<Conv2d>(channels, out, 3, 1, 1, 1, 1, true, gen));
    layers.push_back(std::make_shared<BatchNorm2d>(out));
    layers.push_back(std::make_shared<ReLU>());
    channels = out;
  }
  return std::make_shared<Sequential>(std::move(layers));
}

std::shared_ptr<Sequential> Classifier(int64_t num_classes, Generator* gen) {
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(512, 512, true, gen), std::make_shared<ReLU>(),
      std::make_shared<Dropout>(0.5), std::make_shared<Linear>(512, 512, true, gen),
      std::make_shared<ReLU>(), std::make_shared<Dropout>(0.5),
      std::make_shared<Linear>(512, num_classes, true, gen)});
}

}  // namespace

Vgg11::Vgg11(int64_t num_classes, Generator* gen)
    : features_(register_module("features", Features(gen))),
      avgpool_(register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1))),
      classifier_(register_module("classifier", Classifier(num_classes, gen))) {}

Tensor Vgg11::forward(const Tensor& x) {
  return (*classifier_)(reshape((*avgpool_)((*features_)(x)), {-1, 512}));
}

}  // namespace tc::nn
