#include "nn/data/transforms.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/error.h"
#include "runtime/kernels/dtype_dispatch.h"

namespace tc::nn {
namespace {

[[noreturn]] void Fail(absl::string_view what) { throw Error(absl::InvalidArgumentError(what)); }

// OK for a contiguous floating [N, C, H, W] batch; else what `name` expected.
absl::Status CheckImages(absl::string_view name, const Tensor& images) {
  if (images.dim() != 4 || !IsFloating(images.dtype()) || !images.is_contiguous()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected a contiguous floating batch [N, C, H, W], got ",
                     images.type().ToString()));
  }
  return absl::OkStatus();
}

}  // namespace

Normalize::Normalize(std::vector<double> mean, std::vector<double> std_dev)
    : mean_(std::move(mean)), std_dev_(std::move(std_dev)) {
  if (mean_.size() != std_dev_.size() || mean_.empty()) {
    Fail(
        absl::StrCat("Normalize: expected as many means as standard deviations (one per channel), "
                     "got ",
                     mean_.size(), " and ", std_dev_.size()));
  }
  for (double s : std_dev_) {
    if (!(s > 0)) Fail(absl::StrCat("Normalize: a standard deviation must be > 0, got ", s));
  }
}

absl::StatusOr<Tensor> Normalize::Apply(const Tensor& images, Generator&) const {
  if (absl::Status s = CheckImages("Normalize", images); !s.ok()) return s;
  const int64_t n = images.size(0), c = images.size(1), plane = images.size(2) * images.size(3);
  if (c != static_cast<int64_t>(mean_.size())) {
    return absl::InvalidArgumentError(absl::StrCat("Normalize: ", mean_.size(),
                                                   " channels' statistics for a batch of ", c,
                                                   " channels, ", images.type().ToString()));
  }
  kernels::VisitFloatDType(images.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* data = images.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < c; ++k) {
        const T mean = static_cast<T>(mean_[k]), scale = static_cast<T>(1 / std_dev_[k]);
        T* p = data + (i * c + k) * plane;
        for (int64_t e = 0; e < plane; ++e) p[e] = (p[e] - mean) * scale;
      }
    }
  });
  return images;
}

RandomCrop::RandomCrop(std::pair<int64_t, int64_t> size, int64_t padding)
    : height_(size.first), width_(size.second), padding_(padding) {
  if (height_ < 1 || width_ < 1 || padding < 0) {
    Fail(absl::StrCat("RandomCrop: expected a size >= 1 and a padding >= 0, got ", height_, "x",
                      width_, " and ", padding));
  }
}

absl::StatusOr<Tensor> RandomCrop::Apply(const Tensor& images, Generator& gen) const {
  if (absl::Status s = CheckImages("RandomCrop", images); !s.ok()) return s;
  const int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  const int64_t spare_y = h + 2 * padding_ - height_, spare_x = w + 2 * padding_ - width_;
  if (spare_y < 0 || spare_x < 0) {
    return absl::InvalidArgumentError(absl::StrCat("RandomCrop: a ", height_, "x", width_,
                                                   " crop of ", images.type().ToString(),
                                                   " padded by ", padding_, " does not fit"));
  }
  Tensor out = Tensor::Empty({n, c, height_, width_}, images.dtype());  // zeros: the padding
  const uint64_t counter = gen.Advance(static_cast<uint64_t>(2 * n));
  kernels::VisitFloatDType(images.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* src = images.data<T>();
    T* dst = out.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      // The crop's top-left corner in padded coordinates.
      const int64_t y0 = static_cast<int64_t>(RandomBits(gen.seed(), counter + 2 * i) %
                                              static_cast<uint64_t>(spare_y + 1)) -
                         padding_;
      const int64_t x0 = static_cast<int64_t>(RandomBits(gen.seed(), counter + 2 * i + 1) %
                                              static_cast<uint64_t>(spare_x + 1)) -
                         padding_;
      for (int64_t k = 0; k < c; ++k) {
        const T* plane = src + (i * c + k) * h * w;
        T* crop = dst + (i * c + k) * height_ * width_;
        for (int64_t y = 0; y < height_; ++y) {
          const int64_t sy = y0 + y;
          if (sy < 0 || sy >= h) continue;
          for (int64_t x = 0; x < width_; ++x) {
            const int64_t sx = x0 + x;
            if (sx >= 0 && sx < w) crop[y * width_ + x] = plane[sy * w + sx];
          }
        }
      }
    }
  });
  return out;
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  if (!(p >= 0 && p <= 1)) Fail(absl::StrCat("RandomHorizontalFlip: p must be in [0, 1], got ", p));
}

absl::StatusOr<Tensor> RandomHorizontalFlip::Apply(const Tensor& images, Generator& gen) const {
  if (absl::Status s = CheckImages("RandomHorizontalFlip", images); !s.ok()) return s;
  const int64_t n = images.size(0), rows = images.size(1) * images.size(2), w = images.size(3);
  const uint64_t counter = gen.Advance(static_cast<uint64_t>(n));
  kernels::VisitFloatDType(images.dtype(), [&](auto zero) {
    auto* data = images.data<decltype(zero)>();
    for (int64_t i = 0; i < n; ++i) {
      if (!(RandomUniform(gen.seed(), counter + i) < p_)) continue;
      for (int64_t r = 0; r < rows; ++r) {
        auto* row = data + (i * rows + r) * w;
        std::reverse(row, row + w);
      }
    }
  });
  return images;
}

}  // namespace tc::nn
