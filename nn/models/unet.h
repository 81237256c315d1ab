// A U-Net as the widely used PyTorch implementation (milesial's Pytorch-UNet,
// with transposed-convolution upsampling) builds it, at a quarter of its
// width for CIFAR-size inputs: an encoder of four 2x2 max-pool stages and a
// decoder of four 2x upsampling stages, each joined to the encoder stage of
// its scale by concatenating channels (the skip connections), so the
// activations of every scale live until the decoder comes back to it. The
// modules carry that implementation's names ("inc.double_conv.0.weight",
// "down2.maxpool_conv.1.double_conv.4.running_var", "up1.up.weight",
// "outc.conv.bias").
//
//   auto net = std::make_shared<nn::UNet>(3, /*num_classes=*/2, /*width=*/16, &gen);
//   Tensor logits = (*net)(images);  // [N, 3, 32, 32] -> [N, 2, 32, 32]: scores per pixel
//
// Channels are width, 2, 4, 8 and 16 times width down the encoder; the
// input's height and width must be multiples of 16.
#ifndef TENSORCUT_NN_MODELS_UNET_H_
#define TENSORCUT_NN_MODELS_UNET_H_

#include <cstdint>
#include <memory>

#include "nn/conv.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "runtime/random.h"

namespace tc::nn {

// "double_conv": (3x3 convolution without bias, BatchNorm2d, ReLU) twice.
class DoubleConv : public Module {
 public:
  DoubleConv(int64_t in_channels, int64_t out_channels, Generator* gen);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  std::shared_ptr<Sequential> double_conv_;
};

// An encoder stage: "maxpool_conv", a Sequential of MaxPool2d(2) and
// DoubleConv(in, out).
class UNetDown : public Module {
 public:
  UNetDown(int64_t in_channels, int64_t out_channels, Generator* gen);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  std::shared_ptr<Sequential> maxpool_conv_;
};

// A decoder stage: "up" (ConvTranspose2d(in, in / 2, 2, stride 2)) on the
// coarser input, concatenated after the skip's channels, then "conv"
// (DoubleConv(in, out)). Its input is the tuple (coarser, skip).
class UNetUp : public Module {
 public:
  UNetUp(int64_t in_channels, int64_t out_channels, Generator* gen);
  TensorTree forward(const TensorTree& coarser_and_skip) override;
  using Module::forward;

 private:
  std::shared_ptr<ConvTranspose2d> up_;
  std::shared_ptr<DoubleConv> conv_;
};

class UNet : public Module {
 public:
  UNet(int64_t in_channels, int64_t num_classes, int64_t width, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  std::shared_ptr<DoubleConv> inc_;
  std::shared_ptr<UNetDown> down_[4];  // "down1".."down4", each doubling the channels
  std::shared_ptr<UNetUp> up_[4];      // "up1".."up4", each halving them
  std::shared_ptr<Module> outc_;       // "outc": a Module whose "conv" is 1x1, to the classes
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_MODELS_UNET_H_
