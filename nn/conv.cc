#include "nn/conv.h"

#include <array>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nn/init.h"
#include "nn/layer_checks.h"

namespace tc::nn {
namespace {

using internal::RequireInput;
using internal::RequireNonNegative;
using internal::RequirePositive;
using internal::ThrowInvalid;

void CheckChannels(absl::string_view layer, int64_t in_channels, int64_t out_channels,
                   int64_t groups) {
  RequirePositive(layer, "in_channels", in_channels);
  RequirePositive(layer, "out_channels", out_channels);
  RequirePositive(layer, "groups", groups);
  if (in_channels % groups != 0 || out_channels % groups != 0) {
    ThrowInvalid(absl::StrCat(layer, ": in_channels (", in_channels, ") and out_channels (",
                              out_channels, ") must be divisible by groups (", groups, ")"));
  }
}

Conv2dOptions Options(absl::string_view layer, const IntPair& stride, const IntPair& padding,
                      const IntPair& dilation, int64_t groups) {
  RequirePositive(layer, "stride", stride);
  RequireNonNegative(layer, "padding", padding);
  RequirePositive(layer, "dilation", dilation);
  Conv2dOptions o;
  o.stride = stride.values;
  o.padding = padding.values;
  o.dilation = dilation.values;
  o.groups = groups;
  return o;
}

Tensor AddChannelBias(const Tensor& y, const Tensor& bias) {
  return bias.defined() ? y + internal::PerChannel(bias, y.dim()) : y;
}

// PyTorch's extra_repr of a convolution: the arguments that differ from
// their defaults after the required ones.
std::string ConvRepr(int64_t in, int64_t out, const std::string& kernel, const Conv2dOptions& o,
                     int64_t dims, const IntPair& output_padding, bool bias) {
  auto tuple = [dims](const std::array<int64_t, 2>& v) {
    return dims == 1 ? absl::StrCat("(", v[1], ",)") : absl::StrCat("(", v[0], ", ", v[1], ")");
  };
  std::string s =
      absl::StrCat(in, ", ", out, ", kernel_size=", kernel, ", stride=", tuple(o.stride));
  if (o.padding != std::array<int64_t, 2>{0, 0})
    absl::StrAppend(&s, ", padding=", tuple(o.padding));
  if (o.dilation != std::array<int64_t, 2>{1, 1}) {
    absl::StrAppend(&s, ", dilation=", tuple(o.dilation));
  }
  if (!(output_padding == IntPair(0))) {
    absl::StrAppend(&s, ", output_padding=", tuple(output_padding.values));
  }
  if (o.groups != 1) absl::StrAppend(&s, ", groups=", o.groups);
  if (!bias) absl::StrAppend(&s, ", bias=False");
  return s;
}

}  // namespace

// ---- Conv1d

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
               int64_t padding, int64_t dilation, int64_t groups, bool bias, Generator* gen)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {
  CheckChannels("Conv1d", in_channels, out_channels, groups);
  RequirePositive("Conv1d", "kernel_size", kernel_size);
  options_ = Options("Conv1d", {1, stride}, {0, padding}, {1, dilation}, groups);
  weight_ = register_parameter("weight", empty({out_channels, in_channels / groups, kernel_size}));
  if (bias) bias_ = register_parameter("bias", empty({out_channels}));
  internal::ResetWeightAndBias(weight_, bias_, gen);
}

Tensor Conv1d::forward(const Tensor& x) {
  RequireInput("Conv1d", x, {3}, in_channels_, "[N, C, L]");
  const Tensor w = reshape(weight_, {weight_.size(0), weight_.size(1), 1, kernel_size_});
  const Tensor y = conv2d(reshape(x, {x.size(0), x.size(1), 1, x.size(2)}), w, options_);
  return AddChannelBias(reshape(y, {y.size(0), y.size(1), y.size(3)}), bias_);
}

std::string Conv1d::extra_repr() const {
  return ConvRepr(in_channels_, out_channels_, absl::StrCat("(", kernel_size_, ",)"), options_, 1,
                  0, bias_.defined());
}

// ---- Conv2d

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, IntPair kernel_size, IntPair stride,
               IntPair padding, IntPair dilation, int64_t groups, bool bias, Generator* gen)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {
  CheckChannels("Conv2d", in_channels, out_channels, groups);
  RequirePositive("Conv2d", "kernel_size", kernel_size);
  options_ = Options("Conv2d", stride, padding, dilation, groups);
  weight_ = register_parameter(
      "weight", empty({out_channels, in_channels / groups, kernel_size[0], kernel_size[1]}));
  if (bias) bias_ = register_parameter("bias", empty({out_channels}));
  internal::ResetWeightAndBias(weight_, bias_, gen);
}

Tensor Conv2d::forward(const Tensor& x) {
  RequireInput("Conv2d", x, {4}, in_channels_, "[N, C, H, W]");
  return AddChannelBias(conv2d(x, weight_, options_), bias_);
}

std::string Conv2d::extra_repr() const {
  return ConvRepr(in_channels_, out_channels_,
                  absl::StrCat("(", kernel_size_[0], ", ", kernel_size_[1], ")"), options_, 2, 0,
                  bias_.defined());
}

// ---- ConvTranspose2d

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, IntPair kernel_size,
                                 IntPair stride, IntPair padding, IntPair output_padding,
                                 int64_t groups, bool bias, IntPair dilation, Generator* gen)
    : in_channels_(in_channels),
      out_channels_(out_channels),
      kernel_size_(kernel_size),
      output_padding_(output_padding) {
  CheckChannels("ConvTranspose2d", in_channels, out_channels, groups);
  RequirePositive("ConvTranspose2d", "kernel_size", kernel_size);
  options_ = Options("ConvTranspose2d", stride, padding, dilation, groups);
  RequireNonNegative("ConvTranspose2d", "output_padding", output_padding);
  // PyTorch also allows output_padding < dilation; the data-gradient op
  // needs it below the stride (the conv of the output must give back the input).
  for (int d = 0; d < 2; ++d) {
    if (output_padding[d] >= stride[d]) {
      ThrowInvalid(absl::StrCat("ConvTranspose2d: output_padding (", output_padding.ToString(),
                                ") must be smaller than stride (", stride.ToString(), ")"));
    }
  }
  weight_ = register_parameter(
      "weight", empty({in_channels, out_channels / groups, kernel_size[0], kernel_size[1]}));
  if (bias) bias_ = register_parameter("bias", empty({out_channels}));
  internal::ResetWeightAndBias(weight_, bias_, gen);
}

Tensor ConvTranspose2d::forward(const Tensor& x) {
  RequireInput("ConvTranspose2d", x, {4}, in_channels_, "[N, C, H, W]");
  std::vector<int64_t> out_shape = {x.size(0), out_channels_, 0, 0};
  for (int d = 0; d < 2; ++d) {
    out_shape[2 + d] = (x.size(2 + d) - 1) * options_.stride[d] - 2 * options_.padding[d] +
                       options_.dilation[d] * (kernel_size_[d] - 1) + output_padding_[d] + 1;
  }
  if (out_shape[2] <= 0 || out_shape[3] <= 0) {
    ThrowInvalid(absl::StrCat("ConvTranspose2d: input ", x.type().ToString(),
                              " gives an empty output ", ShapeToString(out_shape)));
  }
  // The transposed convolution is the data gradient of the convolution whose
  // weight this is: [in, out / groups, kh, kw] maps out channels to in.
  return AddChannelBias(conv2d_backward_data(x, weight_, std::move(out_shape), options_), bias_);
}

std::string ConvTranspose2d::extra_repr() const {
  return ConvRepr(in_channels_, out_channels_,
                  absl::StrCat("(", kernel_size_[0], ", ", kernel_size_[1], ")"), options_, 2,
                  output_padding_, bias_.defined());
}

}  // namespace tc::nn
