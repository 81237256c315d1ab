#include "nn/upsample.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nn/layer_checks.h"
#include "runtime/ops.h"

namespace tc::nn {

using internal::PyBool;
using internal::PyFloat;
using internal::RequireInput;
using internal::ThrowInvalid;

namespace {

void CheckOptions(const UpsampleOptions& o) {
  if (o.size.has_value() == o.scale_factor.has_value()) {
    ThrowInvalid("Upsample: give either size or scale_factor, not both or neither");
  }
  if (o.mode != "nearest" && o.mode != "bilinear") {
    ThrowInvalid(absl::StrCat("Upsample: mode \"", o.mode,
                              "\" is not supported (\"nearest\", \"bilinear\")"));
  }
  if (o.align_corners && o.mode != "bilinear") {
    ThrowInvalid("Upsample: align_corners applies to mode \"bilinear\" only");
  }
  if (o.scale_factor.has_value() && !(*o.scale_factor > 0 && std::isfinite(*o.scale_factor))) {
    ThrowInvalid(absl::StrCat("Upsample: scale_factor must be positive, got ", *o.scale_factor));
  }
  if (o.size.has_value() && ((*o.size)[0] < 1 || (*o.size)[1] < 1)) {
    ThrowInvalid(absl::StrCat("Upsample: size must be at least 1, got ", o.size->ToString()));
  }
}

// Along one dim: where each output index reads, the two source indices and
// the weight of the second.
struct Taps {
  std::vector<int64_t> lo, hi;
  std::vector<double> frac;
};

Taps MakeTaps(int64_t in, int64_t out, const UpsampleOptions& o) {
  // PyTorch's source step: 1 / factor when a factor was given, else in / out.
  const double scale =
      o.scale_factor.has_value() ? 1.0 / *o.scale_factor : static_cast<double>(in) / out;
  Taps t;
  for (int64_t i = 0; i < out; ++i) {
    if (o.mode == "nearest") {
      t.lo.push_back(std::min(static_cast<int64_t>(std::floor(i * scale)), in - 1));
      continue;
    }
    const double src = o.align_corners
                           ? (out > 1 ? static_cast<double>(i) * (in - 1) / (out - 1) : 0)
                           : std::max((i + 0.5) * scale - 0.5, 0.0);
    const int64_t lo = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
    t.lo.push_back(lo);
    t.hi.push_back(std::min(lo + 1, in - 1));
    t.frac.push_back(src - static_cast<double>(lo));
  }
  return t;
}

// x's slices `index` along `dim`, in order (a gather whose gradient sums).
Tensor Pick(const Tensor& x, int64_t dim, const std::vector<int64_t>& index) {
  std::vector<int64_t> to_front = {dim}, back(static_cast<size_t>(x.dim()));
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != dim) to_front.push_back(d);
  }
  for (size_t i = 0; i < to_front.size(); ++i) back[static_cast<size_t>(to_front[i])] = i;
  const Tensor front = permute(x, to_front);
  std::vector<int64_t> shape(front.shape().begin(), front.shape().end());
  const Tensor rows = reshape(front, {shape[0], -1});
  shape[0] = static_cast<int64_t>(index.size());
  const Tensor picked = embedding(rows, from_vector(index, {shape[0]}));
  return permute(reshape(picked, shape), back);
}

Tensor ResizeDim(const Tensor& x, int64_t dim, int64_t out, const UpsampleOptions& o) {
  const Taps t = MakeTaps(x.size(dim), out, o);
  const Tensor lo = Pick(x, dim, t.lo);
  if (o.mode == "nearest") return lo;
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[static_cast<size_t>(dim)] = out;
  const Tensor weight = cast(from_vector(t.frac, shape), x.dtype());
  return lo + (Pick(x, dim, t.hi) - lo) * weight;
}

}  // namespace

Tensor interpolate(const Tensor& x, const UpsampleOptions& o) {
  CheckOptions(o);
  RequireInput("Upsample", x, {4}, -1, "[N, C, H, W]");
  int64_t out[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.size(2 + d);
    out[d] =
        o.size.has_value() ? (*o.size)[d] : static_cast<int64_t>(std::floor(in * *o.scale_factor));
    if (out[d] < 1) {
      ThrowInvalid(absl::StrCat("Upsample: scale_factor ", *o.scale_factor, " makes dim ", 2 + d,
                                " of ", x.type().ToString(), " empty"));
    }
  }
  const double factor = o.scale_factor.value_or(0);
  if (o.mode == "nearest" && factor >= 1 && factor == std::floor(factor)) {
    // Each pixel broadcast over a block; the gradient sums the block.
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    const auto s = static_cast<int64_t>(factor);
    return reshape(expand(reshape(x, {n, c, h, 1, w, 1}), {n, c, h, s, w, s}),
                   {n, c, h * s, w * s});
  }
  return ResizeDim(ResizeDim(x, 2, out[0], o), 3, out[1], o);
}

Upsample::Upsample(double scale_factor, std::string mode)
    : Upsample(UpsampleOptions{.scale_factor = scale_factor, .mode = std::move(mode)}) {}

Upsample::Upsample(UpsampleOptions options) : options_(std::move(options)) {
  CheckOptions(options_);
}

Tensor Upsample::forward(const Tensor& x) { return interpolate(x, options_); }

std::string Upsample::extra_repr() const {
  const std::string what = options_.size.has_value()
                               ? absl::StrCat("size=", options_.size->ToString())
                               : absl::StrCat("scale_factor=", PyFloat(*options_.scale_factor));
  return absl::StrCat(what, ", mode='", options_.mode, "'",
                      options_.mode == "bilinear"
                          ? absl::StrCat(", align_corners=", PyBool(options_.align_corners))
                          : "");
}

}  // namespace tc::nn
