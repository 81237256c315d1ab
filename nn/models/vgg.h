// VGG-11 with batch normalisation as torchvision builds its features
// (vgg11_bn): "features" is the same Sequential, so its parameters and
// buffers carry torchvision's names ("features.0.weight",
// "features.1.running_mean", ... "features.26.bias"). The head is sized for
// CIFAR-size inputs, where the features end 1x1: "avgpool" is an
// AdaptiveAvgPool2d(1) and "classifier" is Linear(512, 512), ReLU, Dropout,
// Linear(512, 512), ReLU, Dropout, Linear(512, num_classes), the same
// layers at indices 0, 3 and 6 as torchvision's 25088-4096-4096 head for
// 224x224 images, at a width that trains on two cores.
//
//   auto net = std::make_shared<nn::Vgg11>(/*num_classes=*/10, &gen);
//   Tensor logits = (*net)(images);  // [N, 3, 32, 32] -> [N, 10]
#ifndef TENSORCUT_NN_MODELS_VGG_H_
#define TENSORCUT_NN_MODELS_VGG_H_

#include <cstdint>
#include <memory>

#include "nn/layers.h"
#include "nn/module.h"
#include "runtime/random.h"

namespace tc::nn {

class Vgg11 : public Module {
 public:
  explicit Vgg11(int64_t num_classes, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  std::shared_ptr<Sequential> features_;
  std::shared_ptr<AdaptiveAvgPool2d> avgpool_;
  std::shared_ptr<Sequential> classifier_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_MODELS_VGG_H_
