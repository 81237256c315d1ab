// ResNet-18 as torchvision builds it (resnet18), for CIFAR-size inputs: the
// same modules in the same order, so parameters and buffers carry
// torchvision's names ("conv1.weight", "layer2.0.downsample.1.running_var",
// "fc.bias"), and a checkpoint maps onto torchvision's state_dict name for
// name.
//
//   auto net = std::make_shared<nn::ResNet18>(/*num_classes=*/10, &gen);
//   Tensor logits = (*net)(images);  // [N, 3, 32, 32] -> [N, 10]
//
// The stem is torchvision's (7x7 stride-2 convolution, 3x3 stride-2 max
// pool), so a 32x32 image is 8x8 at layer1 and 1x1 at layer4.
#ifndef TENSORCUT_NN_MODELS_RESNET_H_
#define TENSORCUT_NN_MODELS_RESNET_H_

#include <cstdint>
#include <memory>

#include "nn/layers.h"
#include "nn/module.h"
#include "runtime/random.h"

namespace tc::nn {

// relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)): both convolutions
// 3x3 without bias, the first with `stride`; the shortcut is x, or
// "downsample" (a 1x1 convolution with `stride` and a BatchNorm2d) when the
// shape changes.
class BasicBlock : public Module {
 public:
  BasicBlock(int64_t in_channels, int64_t out_channels, int64_t stride, Generator* gen);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::shared_ptr<Conv2d> conv2_;
  std::shared_ptr<BatchNorm2d> bn2_;
  std::shared_ptr<Sequential> downsample_;  // null: the identity
};

class ResNet18 : public Module {
 public:
  explicit ResNet18(int64_t num_classes, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::shared_ptr<MaxPool2d> maxpool_;
  std::shared_ptr<Sequential> layer1_, layer2_, layer3_, layer4_;
  std::shared_ptr<AdaptiveAvgPool2d> avgpool_;
  std::shared_ptr<Linear> fc_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_MODELS_RESNET_H_
