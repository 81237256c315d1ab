#include "nn/models/resnet.h"

#include <utility>
#include <vector>

#include "runtime/ops.h"

namespace tc::nn {
namespace {

std::shared_ptr<Conv2d> Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                             int64_t padding, Generator* gen) {
  return std::make_shared<Conv2d>(in, out, kernel, stride, padding, /*dilation=*/1, /*groups=*/1,
                                  /*bias=*/false, gen);
}

// Two blocks: the first may change channels and stride, the second keeps them.
std::shared_ptr<Sequential> Layer(int64_t in, int64_t out, int64_t stride, Generator* gen) {
  return std::make_shared<Sequential>(
      std::vector<std::shared_ptr<Module>>{std::make_shared<BasicBlock>(in, out, stride, gen),
                                           std::make_shared<BasicBlock>(out, out, 1, gen)});
}

}  // namespace

BasicBlock::BasicBlock(int64_t in_channels, int64_t out_channels, int64_t stride, Generator* gen)
    : conv1_(register_module("conv1", Conv(in_channels, out_channels, 3, stride, 1, gen))),
      bn1_(register_module("bn1", std::make_shared<BatchNorm2d>(out_channels))),
      conv2_(register_module("conv2", Conv(out_channels, out_channels, 3, 1, 1, gen))),
      bn2_(register_module("bn2", std::make_shared<BatchNorm2d>(out_channels))) {
  if (stride != 1 || in_channels != out_channels) {
    downsample_ = register_module("downsample",
                                  std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
                                      Conv(in_channels, out_channels, 1, stride, 0, gen),
                                      std::make_shared<BatchNorm2d>(out_channels)}));
  }
}

Tensor BasicBlock::forward(const Tensor& x) {
  const Tensor out = (*bn2_)((*conv2_)(relu((*bn1_)((*conv1_)(x)))));
  return relu(out + (downsample_ ? (*downsample_)(x) : x));
}

ResNet18::ResNet18(int64_t num_classes, Generator* gen)
    : conv1_(register_module("conv1", Conv(3, 64, 7, 2, 3, gen))),
      bn1_(register_module("bn1", std::make_shared<BatchNorm2d>(64))),
      maxpool_(register_module("maxpool", std::make_shared<MaxPool2d>(3, 2, 1))),
      layer1_(register_module("layer1", Layer(64, 64, 1, gen))),
      layer2_(register_module("layer2", Layer(64, 128, 2, gen))),
      layer3_(register_module("layer3", Layer(128, 256, 2, gen))),
      layer4_(register_module("layer4", Layer(256, 512, 2, gen))),
      avgpool_(register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1))),
      fc_(register_module("fc", std::make_shared<Linear>(512, num_classes, true, gen))) {}

Tensor ResNet18::forward(const Tensor& x) {
  Tensor h = (*maxpool_)(relu((*bn1_)((*conv1_)(x))));
  h = (*layer4_)((*layer3_)((*layer2_)((*layer1_)(h))));
  return (*fc_)(reshape((*avgpool_)(h), {-1, 512}));
}

}  // namespace tc::nn
