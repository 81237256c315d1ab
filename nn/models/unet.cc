#include "nn/models/unet.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/error.h"
#include "runtime/ops.h"

namespace tc::nn {
namespace {

std::shared_ptr<Conv2d> Conv3x3(int64_t in, int64_t out, Generator* gen) {
  return std::make_shared<Conv2d>(in, out, 3, /*stride=*/1, /*padding=*/1, /*dilation=*/1,
                                  /*groups=*/1, /*bias=*/false, gen);
}

// "outc": the implementation's OutConv, a module holding one 1x1
// convolution named "conv".
class OutConv : public Module {
 public:
  OutConv(int64_t in_channels, int64_t num_classes, Generator* gen)
      : conv_(register_module("conv", std::make_shared<Conv2d>(in_channels, num_classes, 1, 1, 0, 1,
                                                               1, /*bias=*/true, gen))) {}
  Tensor forward(const Tensor& x) override { return (*conv_)(x); }
  using Module::forward;

 private:
  std::shared_ptr<Conv2d> conv_;
};

}  // namespace

DoubleConv::DoubleConv(int64_t in_channels, int64_t out_channels, Generator* gen)
    : double_conv_(register_module(
          "double_conv",
          std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
              Conv3x3(in_channels, out_channels, gen), std::make_shared<BatchNorm2d>(out_channels),
              std::make_shared<ReLU>(), Conv3x3(out_channels, out_channels, gen),
              std::make_shared<BatchNorm2d>(out_channels), std::make_shared<ReLU>()}))) {}

Tensor DoubleConv::forward(const Tensor& x) { return (*double_conv_)(x); }

UNetDown::UNetDown(int64_t in_channels, int64_t out_channels, Generator* gen)
    : maxpool_conv_(register_module(
          "maxpool_conv", std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
                              std::make_shared<MaxPool2d>(2),
                              std::make_shared<DoubleConv>(in_channels, out_channels, gen)}))) {}

Tensor UNetDown::forward(const Tensor& x) { return (*maxpool_conv_)(x); }

UNetUp::UNetUp(int64_t in_channels, int64_t out_channels, Generator* gen)
    : up_(register_module("up", std::make_shared<ConvTranspose2d>(
                                    in_channels, in_channels / 2, 2, /*stride=*/2, /*padding=*/0,
                                    /*output_padding=*/0, /*groups=*/1, /*bias=*/true,
                                    /*dilation=*/1, gen))),
      conv_(register_module("conv", std::make_shared<DoubleConv>(in_channels, out_channels, gen))) {
}

TensorTree UNetUp::forward(const TensorTree& coarser_and_skip) {
  if (coarser_and_skip.kind() != TreeKind::kTuple || coarser_and_skip.items().size() != 2) {
    throw Error(
        absl::InvalidArgumentError("UNetUp: expected the tuple (coarser, skip) of two tensors"));
  }
  const Tensor up = (*up_)(coarser_and_skip[0].leaf());
  const Tensor& skip = coarser_and_skip[1].leaf();
  return TensorTree::MakeLeaf((*conv_)(concat({skip, up}, 1)));
}

UNet::UNet(int64_t in_channels, int64_t num_classes, int64_t width, Generator* gen)
    : inc_(register_module("inc", std::make_shared<DoubleConv>(in_channels, width, gen))) {
  for (int i = 0; i < 4; ++i) {
    down_[i] = register_module(absl::StrCat("down", i + 1),
                               std::make_shared<UNetDown>(width << i, width << (i + 1), gen));
  }
  for (int i = 0; i < 4; ++i) {
    up_[i] = register_module(absl::StrCat("up", i + 1),
                             std::make_shared<UNetUp>(width << (4 - i), width << (3 - i), gen));
  }
  outc_ = register_module("outc", std::make_shared<OutConv>(width, num_classes, gen));
}

Tensor UNet::forward(const Tensor& x) {
  if (x.dim() != 4 || x.size(2) % 16 != 0 || x.size(3) % 16 != 0) {
    throw Error(absl::InvalidArgumentError(absl::StrCat(
        "UNet: expected images [N, C, H, W] with H and W multiples of 16 (four 2x2 poolings), "
        "got ",
        x.type().ToString())));
  }
  // The encoder's result at each scale, finest first: the skips.
  std::vector<Tensor> scales = {(*inc_)(x)};
  for (const std::shared_ptr<UNetDown>& down : down_) scales.push_back((*down)(scales.back()));
  Tensor h = scales.back();
  for (int i = 0; i < 4; ++i) {
    h = (*up_[i])(TensorTree::Tuple({TensorTree::MakeLeaf(h), TensorTree::MakeLeaf(scales[3 - i])}))
            .leaf();
  }
  return (*outc_)(h);
}

}  // namespace tc::nn
