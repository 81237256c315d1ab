#include "nn/models/mobilenet.h"

#include <utility>
#include <vector>

#include "runtime/ops.h"

namespace tc::nn {
namespace {

using Modules = std::vector<std::shared_ptr<Module>>;

// torchvision's Conv2dNormActivation: Conv2d without bias, BatchNorm2d, ReLU6.
std::shared_ptr<Sequential> ConvBnRelu6(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                        int64_t groups, Generator* gen) {
  return std::make_shared<Sequential>(
      Modules{std::make_shared<Conv2d>(in, out, kernel, stride, (kernel - 1) / 2, /*dilation=*/1,
                                       groups, /*bias=*/false, gen),
              std::make_shared<BatchNorm2d>(out), std::make_shared<Hardtanh>(0, 6)});
}

// torchvision's inverted residual settings: expansion t, channels c,
// blocks n, first stride s.
struct Stage {
  int64_t t, c, n, s;
};
constexpr Stage kStages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                             {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};

std::shared_ptr<Sequential> Features(Generator* gen) {
  Modules layers = {ConvBnRelu6(3, 32, 3, 2, 1, gen)};
  int64_t channels = 32;
  for (const Stage& stage : kStages) {
    for (int64_t i = 0; i < stage.n; ++i) {
      layers.push_back(std::make_shared<InvertedResidual>(channels, stage.c, i == 0 ? stage.s : 1,
                                                          stage.t, gen));
      channels = stage.c;
    }
  }
  layers.push_back(ConvBnRelu6(channels, 1280, 1, 1, 1, gen));
  return std::make_shared<Sequential>(std::move(layers));
}

}  // namespace

InvertedResidual::InvertedResidual(int64_t in_channels, int64_t out_channels, int64_t stride,
                                   int64_t expand_ratio, Generator* gen)
    : residual_(stride == 1 && in_channels == out_channels) {
  const int64_t hidden = in_channels * expand_ratio;
  Modules layers;
  if (expand_ratio != 1) layers.push_back(ConvBnRelu6(in_channels, hidden, 1, 1, 1, gen));
  layers.push_back(ConvBnRelu6(hidden, hidden, 3, stride, /*groups=*/hidden, gen));
  layers.push_back(std::make_shared<Conv2d>(hidden, out_channels, 1, 1, 0, 1, 1, false, gen));
  layers.push_back(std::make_shared<BatchNorm2d>(out_channels));
  conv_ = register_module("conv", std::make_shared<Sequential>(std::move(layers)));
}

Tensor InvertedResidual::forward(const Tensor& x) {
  const Tensor out = (*conv_)(x);
  return residual_ ? x + out : out;
}

MobileNetV2::MobileNetV2(int64_t num_classes, Generator* gen)
    : features_(register_module("features", Features(gen))),
      pool_(std::make_shared<AdaptiveAvgPool2d>(1)),
      classifier_(register_module(
          "classifier", std::make_shared<Sequential>(
                            Modules{std::make_shared<Dropout>(0.2),
                                    std::make_shared<Linear>(1280, num_classes, true, gen)}))) {}

Tensor MobileNetV2::forward(const Tensor& x) {
  return (*classifier_)(reshape((*pool_)((*features_)(x)), {-1, 1280}));
}

}  // namespace tc::nn
