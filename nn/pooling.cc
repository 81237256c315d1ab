#include "nn/pooling.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nn/layer_checks.h"

namespace tc::nn {
namespace {

using internal::PyBool;
using internal::RequireInput;
using internal::RequireNonNegative;
using internal::RequirePositive;
using internal::ThrowInvalid;

// A window's kernel_size, stride or dilation: positive, and at most 2^31 as
// the ops take them (so a dilated extent cannot overflow).
void RequireWindowSize(absl::string_view layer, absl::string_view what, const IntPair& value) {
  RequirePositive(layer, what, value);
  constexpr int64_t kMax = int64_t{1} << 31;
  if (value[0] > kMax || value[1] > kMax) {
    ThrowInvalid(absl::StrCat(layer, ": ", what, " must be at most 2^31, got ", value.ToString()));
  }
}

void CheckWindow(absl::string_view layer, const IntPair& kernel, const IntPair& stride,
                 const IntPair& padding) {
  RequireWindowSize(layer, "kernel_size", kernel);
  RequireWindowSize(layer, "stride", stride);
  RequireNonNegative(layer, "padding", padding);
  for (int d = 0; d < 2; ++d) {
    if (padding[d] > kernel[d] / 2) {
      ThrowInvalid(absl::StrCat(layer, ": padding should be at most half of the kernel size, got ",
                                "padding=", padding.ToString(),
                                " and kernel_size=", kernel.ToString()));
    }
  }
}

// The op's options and, with ceil_mode, the extra bottom/right padding the
// last, partial windows reach into. PyTorch's output size, with the dilated
// kernel's extent e = d (k - 1) + 1:
//   out = floor_or_ceil((in + 2 p - e) / s) + 1,
// less one when ceil_mode's last window would start beyond the input and
// its left padding.
struct Windows {
  Pool2dOptions options;
  std::array<int64_t, 2> ceil_extra{0, 0};
};

Windows PlanWindows(absl::string_view layer, const Tensor& x, const IntPair& kernel,
                    const IntPair& stride, const IntPair& padding, const IntPair& dilation,
                    bool ceil_mode) {
  RequireInput(layer, x, {4}, -1, "[N, C, H, W]");
  Windows w;
  w.options.kernel = kernel.values;
  w.options.stride = stride.values;
  w.options.padding = padding.values;
  w.options.dilation = dilation.values;
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.size(2 + d), s = stride[d], p = padding[d];
    const int64_t k = dilation[d] * (kernel[d] - 1) + 1;
    const int64_t span = in + 2 * p - k + (ceil_mode ? s - 1 : 0);
    int64_t out = span < 0 ? 0 : span / s + 1;  // floor division of a non-negative span
    if (ceil_mode && out > 0 && (out - 1) * s >= in + p) --out;
    if (out < 1) {
      const std::string dilated =
          dilation == IntPair(1) ? "" : absl::StrCat(" and dilation ", dilation.ToString());
      ThrowInvalid(absl::StrCat(layer, ": input ", x.type().ToString(),
                                " is smaller than the kernel ", kernel.ToString(), " with padding ",
                                padding.ToString(), dilated));
    }
    if (ceil_mode) w.ceil_extra[d] = std::max<int64_t>(0, (out - 1) * s + k - (in + 2 * p));
  }
  return w;
}

// pad's [lo, hi] pairs for an NCHW tensor: none on N and C.
std::vector<int64_t> SpatialPads(const std::array<int64_t, 2>& lo,
                                 const std::array<int64_t, 2>& hi) {
  return {0, 0, 0, 0, lo[0], hi[0], lo[1], hi[1]};
}

std::string WindowRepr(const IntPair& kernel, const IntPair& stride, const IntPair& padding) {
  return absl::StrCat("kernel_size=", kernel.ToString(), ", stride=", stride.ToString(),
                      ", padding=", padding.ToString());
}

}  // namespace

// ---- MaxPool2d

MaxPool2d::MaxPool2d(const MaxPool2dOptions& options)
    : kernel_size_(options.kernel_size),
      stride_(options.stride.value_or(options.kernel_size)),
      padding_(options.padding),
      dilation_(options.dilation),
      ceil_mode_(options.ceil_mode) {
  CheckWindow("MaxPool2d", kernel_size_, stride_, padding_);
  RequireWindowSize("MaxPool2d", "dilation", dilation_);
}

MaxPool2d::MaxPool2d(IntPair kernel_size, std::optional<IntPair> stride, IntPair padding,
                     bool ceil_mode)
    : MaxPool2d(MaxPool2dOptions{.kernel_size = kernel_size,
                                 .stride = stride,
                                 .padding = padding,
                                 .ceil_mode = ceil_mode}) {}

Tensor MaxPool2d::forward(const Tensor& x) {
  Windows w = PlanWindows("MaxPool2d", x, kernel_size_, stride_, padding_, dilation_, ceil_mode_);
  if (w.ceil_extra == std::array<int64_t, 2>{0, 0}) return max_pool2d(x, w.options);
  // The partial windows see -inf beyond the input, as the op's own padding.
  const std::array<int64_t, 2> p = w.options.padding;
  const Tensor padded = pad(x, SpatialPads(p, {p[0] + w.ceil_extra[0], p[1] + w.ceil_extra[1]}),
                            -std::numeric_limits<double>::infinity());
  w.options.padding = {0, 0};
  return max_pool2d(padded, w.options);
}

std::string MaxPool2d::extra_repr() const {
  return absl::StrCat(WindowRepr(kernel_size_, stride_, padding_),
                      ", dilation=", dilation_.ToString(), ", ceil_mode=", PyBool(ceil_mode_));
}

// ---- AvgPool2d

AvgPool2d::AvgPool2d(IntPair kernel_size, std::optional<IntPair> stride, IntPair padding,
                     bool ceil_mode, bool count_include_pad)
    : kernel_size_(kernel_size),
      stride_(stride.value_or(kernel_size)),
      padding_(padding),
      ceil_mode_(ceil_mode),
      count_include_pad_(count_include_pad) {
  CheckWindow("AvgPool2d", kernel_size_, stride_, padding_);
}

Tensor AvgPool2d::forward(const Tensor& x) {
  Windows w = PlanWindows("AvgPool2d", x, kernel_size_, stride_, padding_, 1, ceil_mode_);
  const std::array<int64_t, 2> p = w.options.padding, extra = w.ceil_extra;
  const bool no_padding = p == std::array<int64_t, 2>{0, 0};
  // The op divides by the whole window, padding included.
  if (extra == std::array<int64_t, 2>{0, 0} && (count_include_pad_ || no_padding)) {
    return avg_pool2d(x, w.options);
  }
  // Otherwise: the window mean over zero padding, rescaled by the window
  // mean of a mask of what the divisor counts (so the window sizes cancel).
  const std::array<int64_t, 2> hi = {p[0] + extra[0], p[1] + extra[1]};
  w.options.padding = {0, 0};
  const Tensor sums = avg_pool2d(pad(x, SpatialPads(p, hi)), w.options);
  Tensor mask = ones({1, 1, x.size(2), x.size(3)}, x.dtype());
  mask = count_include_pad_ ? pad(pad(mask, SpatialPads(p, p), 1), SpatialPads({0, 0}, extra))
                            : pad(mask, SpatialPads(p, hi));
  return sums / avg_pool2d(mask, w.options);
}

Tensor max_pool2d(const Tensor& x, IntPair kernel_size, std::optional<IntPair> stride,
                  IntPair padding, bool ceil_mode) {
  return MaxPool2d(kernel_size, stride, padding, ceil_mode).forward(x);
}

Tensor max_pool2d(const Tensor& x, const MaxPool2dOptions& options) {
  return MaxPool2d(options).forward(x);
}

Tensor avg_pool2d(const Tensor& x, IntPair kernel_size, std::optional<IntPair> stride,
                  IntPair padding, bool ceil_mode, bool count_include_pad) {
  return AvgPool2d(kernel_size, stride, padding, ceil_mode, count_include_pad).forward(x);
}

std::string AvgPool2d::extra_repr() const {
  return WindowRepr(kernel_size_, stride_, padding_);  // torch prints no more
}

// ---- AdaptiveAvgPool2d, AdaptiveAvgPool1d

namespace {

// PyTorch's adaptive bands along `dim`: output i is the mean of
// [floor(i in / out), ceil((i + 1) in / out)), where bands may overlap.
Tensor AdaptiveBands(const Tensor& t, int64_t dim, int64_t out) {
  const int64_t in = t.size(dim);
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t start = i * in / out, end = ((i + 1) * in + out - 1) / out;
    parts.push_back(mean(slice(t, dim, start, end), {dim}, /*keepdim=*/true));
  }
  return concat(parts, dim);
}

}  // namespace

AdaptiveAvgPool2d::AdaptiveAvgPool2d(IntPair output_size) : output_size_(output_size) {
  RequirePositive("AdaptiveAvgPool2d", "output_size", output_size);
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  RequireInput("AdaptiveAvgPool2d", x, {4}, -1, "[N, C, H, W]");
  const int64_t oh = output_size_[0], ow = output_size_[1];
  const int64_t h = x.size(2), w = x.size(3);
  if (oh == 1 && ow == 1) return mean(x, {2, 3}, /*keepdim=*/true);
  if (h % oh == 0 && w % ow == 0) {
    Pool2dOptions o;
    o.kernel = o.stride = {h / oh, w / ow};
    o.padding = {0, 0};
    return avg_pool2d(x, o);
  }
  // Uneven windows: the mean over each band of rows, then of columns (a
  // rectangle's mean is the mean of its rows' means).
  return AdaptiveBands(AdaptiveBands(x, 2, oh), 3, ow);
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return absl::StrCat("output_size=", output_size_.ToString());
}

AdaptiveAvgPool1d::AdaptiveAvgPool1d(int64_t output_size) : output_size_(output_size) {
  RequirePositive("AdaptiveAvgPool1d", "output_size", output_size);
}

Tensor AdaptiveAvgPool1d::forward(const Tensor& x) {
  RequireInput("AdaptiveAvgPool1d", x, {2, 3}, -1, "[N, C, L] or [C, L]");
  const int64_t length = x.size(-1), rank = x.dim();
  if (length % output_size_ != 0) return AdaptiveBands(x, rank - 1, output_size_);
  // Even windows: each a row of a [..., out, L / out] view.
  std::vector<int64_t> rows(x.shape().begin(), x.shape().end() - 1);
  rows.push_back(output_size_);
  rows.push_back(length / output_size_);
  return mean(reshape(x, rows), {rank});
}

std::string AdaptiveAvgPool1d::extra_repr() const {
  return absl::StrCat("output_size=", output_size_);
}

}  // namespace tc::nn
