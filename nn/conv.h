// Convolution layers, as torch.nn's Conv1d, Conv2d and ConvTranspose2d: the
// same arguments (an IntPair takes one int or one per dim), weight layouts,
// FQNs ("weight", "bias") and default initialisation (kaiming_uniform_ with
// a = sqrt(5), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))). Padding is with
// zeros (PyTorch's padding_mode "zeros").
//
//   nn::Conv2d depthwise(32, 32, 3, /*stride=*/1, /*padding=*/1, /*dilation=*/1, /*groups=*/32);
//   nn::ConvTranspose2d up(32, 16, 2, /*stride=*/2);   // doubles H and W
#ifndef TENSORCUT_NN_CONV_H_
#define TENSORCUT_NN_CONV_H_

#include <cstdint>
#include <string>

#include "nn/int_pair.h"
#include "nn/module.h"

namespace tc::nn {

// Over [N, C, L]: weight [out, in / groups, kernel_size], bias [out].
class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
         int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1, bool bias = true,
         Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // undefined without bias

 private:
  int64_t in_channels_, out_channels_, kernel_size_;
  Conv2dOptions options_;  // as a conv2d over [N, C, 1, L]
  Tensor weight_, bias_;
};

// Over [N, C, H, W]: weight [out, in / groups, kh, kw], bias [out].
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, IntPair kernel_size, IntPair stride = 1,
         IntPair padding = 0, IntPair dilation = 1, int64_t groups = 1, bool bias = true,
         Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // undefined without bias
  const Conv2dOptions& options() const { return options_; }

 private:
  int64_t in_channels_, out_channels_;
  IntPair kernel_size_;
  Conv2dOptions options_;
  Tensor weight_, bias_;
};

// The gradient of a Conv2d with respect to its input, as a layer: over
// [N, in, H, W] it gives [N, out, H', W'] with
// H' = (H - 1) stride - 2 padding + dilation (kernel - 1) + output_padding + 1.
// weight [in, out / groups, kh, kw] (PyTorch's transposed layout), bias [out];
// fans for the initialisation come from that layout, as in PyTorch.
class ConvTranspose2d : public Module {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, IntPair kernel_size,
                  IntPair stride = 1, IntPair padding = 0, IntPair output_padding = 0,
                  int64_t groups = 1, bool bias = true, IntPair dilation = 1,
                  Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // undefined without bias

 private:
  int64_t in_channels_, out_channels_;
  IntPair kernel_size_, output_padding_;
  Conv2dOptions options_;
  Tensor weight_, bias_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_CONV_H_
