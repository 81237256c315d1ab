// MobileNetV2 as torchvision builds it (mobilenet_v2, width 1.0), for
// CIFAR-size inputs: inverted residual blocks of a 1x1 expansion, a 3x3
// depthwise convolution (groups = channels) and a linear 1x1 projection,
// with ReLU6, under torchvision's names ("features.0.0.weight",
// "features.2.conv.1.0.weight" for a depthwise filter,
// "classifier.1.bias").
//
//   auto net = std::make_shared<nn::MobileNetV2>(/*num_classes=*/10, &gen);
//   Tensor logits = (*net)(images);  // [N, 3, 32, 32] -> [N, 10]
//
// A 32x32 image is 1x1 after the five stride-2 stages.
#ifndef TENSORCUT_NN_MODELS_MOBILENET_H_
#define TENSORCUT_NN_MODELS_MOBILENET_H_

#include <cstdint>
#include <memory>

#include "nn/layers.h"
#include "nn/module.h"
#include "runtime/random.h"

namespace tc::nn {

// "conv": [1x1 expansion by `expand_ratio` (Conv2d, BatchNorm2d, ReLU6)
// when it is not 1], 3x3 depthwise with `stride` (the same), 1x1
// projection (Conv2d, BatchNorm2d); x is added back when the shape stays.
class InvertedResidual : public Module {
 public:
  InvertedResidual(int64_t in_channels, int64_t out_channels, int64_t stride, int64_t expand_ratio,
                   Generator* gen);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  std::shared_ptr<Sequential> conv_;
  bool residual_;
};

class MobileNetV2 : public Module {
 public:
  explicit MobileNetV2(int64_t num_classes, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  std::shared_ptr<Sequential> features_;
  std::shared_ptr<AdaptiveAvgPool2d> pool_;  // torchvision pools functionally: no name of its own
  std::shared_ptr<Sequential> classifier_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_MODELS_MOBILENET_H_
