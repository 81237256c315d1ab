// Pooling layers over [N, C, H, W], as torch.nn's MaxPool2d, AvgPool2d and
// AdaptiveAvgPool2d (and AdaptiveAvgPool1d over [N, C, L]): rectangular windows (an IntPair takes
// one int or one per dim), the stride defaulting to the kernel size, padding of at most half the
// kernel, and PyTorch's output sizes, ceil_mode and count_include_pad.
//
//   nn::MaxPool2d pool(3, 2, 1, /*ceil_mode=*/true);
//   nn::MaxPool2d dilated({.kernel_size = 3, .stride = 1, .dilation = 2});
//   nn::AvgPool2d avg({2, 3}, std::nullopt, 0, false, /*count_include_pad=*/false);
//   nn::AdaptiveAvgPool2d gap(1);                   // global average pooling
//   nn::AdaptiveAvgPool1d bins(4);                  // [N, C, L] -> [N, C, 4]
//   Tensor y = nn::max_pool2d(x, 3, 2, 1, /*ceil_mode=*/true);  // the functional form
#ifndef TENSORCUT_NN_POOLING_H_
#define TENSORCUT_NN_POOLING_H_

#include <optional>
#include <string>

#include "nn/int_pair.h"
#include "nn/module.h"

namespace tc::nn {

// torch.nn.MaxPool2d's arguments by name (return_indices is not offered).
// The window's taps are `dilation` apart; padding is at most half the
// kernel_size, as PyTorch checks it.
struct MaxPool2dOptions {
  IntPair kernel_size;
  std::optional<IntPair> stride = std::nullopt;  // default: kernel_size
  IntPair padding = 0;
  IntPair dilation = 1;
  bool ceil_mode = false;
};

// Windows that PyTorch's ceil_mode starts beyond the input (or its left
// padding) are dropped, as in PyTorch. The positional constructor has no
// dilation (its fourth argument is ceil_mode); MaxPool2dOptions has it. A
// rectangular kernel alone is MaxPool2d(nn::IntPair(2, 3)): MaxPool2d({2, 3})
// could be either constructor.
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const MaxPool2dOptions& options);
  explicit MaxPool2d(IntPair kernel_size, std::optional<IntPair> stride = std::nullopt,
                     IntPair padding = 0, bool ceil_mode = false);

  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

 private:
  IntPair kernel_size_, stride_, padding_, dilation_;
  bool ceil_mode_;
};

// Each window's mean. With count_include_pad the divisor counts the zero
// padding (but not the part a ceil_mode window reaches beyond it); without,
// only the input elements the window covers.
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(IntPair kernel_size, std::optional<IntPair> stride = std::nullopt,
                     IntPair padding = 0, bool ceil_mode = false, bool count_include_pad = true);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

 private:
  IntPair kernel_size_, stride_, padding_;
  bool ceil_mode_, count_include_pad_;
};

// The functional forms, as torch.nn.functional's max_pool2d and avg_pool2d
// (runtime/ops.h's take the op's options, without ceil_mode).
using tc::avg_pool2d;
using tc::max_pool2d;
Tensor max_pool2d(const Tensor& x, IntPair kernel_size, std::optional<IntPair> stride,
                  IntPair padding = 0, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& x, const MaxPool2dOptions& options);
Tensor avg_pool2d(const Tensor& x, IntPair kernel_size, std::optional<IntPair> stride,
                  IntPair padding = 0, bool ceil_mode = false, bool count_include_pad = true);

// Output [N, C, oh, ow]: output cell (i, j) is the mean of input rows
// [floor(i H / oh), ceil((i + 1) H / oh)) and the same for columns.
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(IntPair output_size);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

 private:
  IntPair output_size_;
};

// Over [N, C, L] or [C, L]: output i is the mean of input
// [floor(i L / out), ceil((i + 1) L / out)).
class AdaptiveAvgPool1d : public Module {
 public:
  explicit AdaptiveAvgPool1d(int64_t output_size);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

 private:
  int64_t output_size_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_POOLING_H_
