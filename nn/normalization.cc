#include "nn/normalization.h"

#include <algorithm>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "nn/layer_checks.h"
#include "runtime/autograd_meta.h"

namespace tc::nn {
namespace {

using internal::PerChannel;
using internal::PyBool;
using internal::PyFloat;
using internal::PyTuple;
using internal::RequirePositive;
using internal::ThrowInvalid;

}  // namespace

// ---- BatchNorm1d, BatchNorm2d

BatchNorm::BatchNorm(std::string layer, std::vector<int64_t> ranks, int64_t num_features,
                     double eps, std::optional<double> momentum, bool affine,
                     bool track_running_stats)
    : layer_(std::move(layer)),
      ranks_(std::move(ranks)),
      num_features_(num_features),
      eps_(eps),
      momentum_(momentum) {
  RequirePositive(layer_, "num_features", num_features);
  if (affine) {
    weight_ = register_parameter("weight", ones({num_features}));
    bias_ = register_parameter("bias", zeros({num_features}));
  }
  if (track_running_stats) {
    running_mean_ = register_buffer("running_mean", zeros({num_features}));
    running_var_ = register_buffer("running_var", ones({num_features}));
    num_batches_tracked_ = register_buffer("num_batches_tracked", zeros({}, DType::kI64));
  }
}

Tensor BatchNorm::forward(const Tensor& x) {
  if (!absl::c_linear_search(ranks_, x.dim()) || x.size(1) != num_features_) {
    ThrowInvalid(absl::StrCat(layer_, ": expected input ",
                              ranks_.size() == 1 ? "[N, C, H, W]" : "[N, C] or [N, C, L]",
                              " with C = ", num_features_, ", got ", x.type().ToString()));
  }
  // Symbolic when the batch is: the check then holds for every batch size of
  // at least 2 (nothing checks the size of one call).
  const int64_t per_channel = *DimDivide(x.numel(), x.size(1));
  if (is_training() && !IsSymbolic(per_channel) && per_channel < 2) {
    ThrowInvalid(absl::StrCat(layer_, ": expected more than 1 value per channel in training, ",
                              "got input ", x.type().ToString()));
  }
  if (x.dim() == 4) return Normalize4d(x);
  // The batch_norm ops take NCHW: [N, C] and [N, C, L] as [N, C, L, 1].
  const int64_t length = x.dim() == 3 ? x.size(2) : 1;
  const Tensor y = Normalize4d(reshape(x, {x.size(0), x.size(1), length, 1}));
  return reshape(y, std::vector<int64_t>(x.shape().begin(), x.shape().end()));
}

Tensor BatchNorm::Normalize4d(const Tensor& x) {
  const Tensor w = weight_.defined() ? weight_ : ones({num_features_}, x.dtype());
  const Tensor b = bias_.defined() ? bias_ : zeros({num_features_}, x.dtype());
  const bool tracking = running_mean_.defined();
  if (!is_training() && tracking) {
    return batch_norm_inference(x, w, b, running_mean_, running_var_, eps_);
  }
  if (is_training() && !sync_group_.empty()) return SyncNormalize4d(x, w, b);
  NormResult r = batch_norm(x, w, b, eps_);
  if (!is_training() || !tracking) return r.y;
  const int64_t n = *DimDivide(x.numel(), x.size(1));
  const DType dtype = x.dtype();
  // The running statistics are state, not part of the differentiated
  // computation: eagerly the update records nothing, and in a traced graph
  // its results are buffer updates, which the joint graph does not
  // differentiate (so no stop_gradient is needed). The handles are kept.
  NoGradGuard no_grad;
  const Tensor count = num_batches_tracked_ + 1.0;
  const Tensor &mean = r.mean, &var = r.var;
  // n / (n - 1) turns the biased batch variance into the unbiased one.
  if (momentum_.has_value()) {
    const double m = *momentum_;
    AssignInPlace(running_mean_, running_mean_ * (1 - m) + mean * m);
    const Tensor unbiased = IsSymbolic(n)
                                ? var * m * size_scalar(n, dtype) / size_scalar(DimSub(n, 1), dtype)
                                : var * (m * static_cast<double>(n) / static_cast<double>(n - 1));
    AssignInPlace(running_var_, running_var_ * (1 - m) + unbiased);
  } else {
    // momentum None: the cumulative average, batch k weighted 1 / k.
    const Tensor f = 1.0 / cast(count, dtype);
    const Tensor correction =
        IsSymbolic(n) ? size_scalar(n, dtype) / size_scalar(DimSub(n, 1), dtype)
                      : scalar(static_cast<double>(n) / static_cast<double>(n - 1), dtype);
    AssignInPlace(running_mean_, running_mean_ * (1.0 - f) + mean * f);
    AssignInPlace(running_var_, running_var_ * (1.0 - f) + var * correction * f);
  }
  AssignInPlace(num_batches_tracked_, count);
  return r.y;
}

Tensor BatchNorm::SyncNormalize4d(const Tensor& x, const Tensor& w, const Tensor& b) {
  // Two passes, as batch_norm's, each a sum over the group's ranks: per
  // channel the values and their count, for the mean; then the squares of
  // the centred values, for the (biased) variance.
  const std::vector<int64_t> dims = {0, 2, 3}, channels = {1, num_features_, 1, 1};
  const Tensor count = reshape(size_scalar(*DimDivide(x.numel(), x.size(1)), x.dtype()), {1});
  const TensorList totals = all_reduce_sum({sum(x, dims), count}, sync_group_);
  const Tensor& n = totals[1];
  const Tensor mean = totals[0] / n;
  const Tensor centered = x - reshape(mean, channels);
  const Tensor var = all_reduce_sum({sum(centered * centered, dims)}, sync_group_)[0] / n;
  const Tensor y = centered * reshape(rsqrt(var + eps_) * w, channels) + reshape(b, channels);
  if (!running_mean_.defined()) return y;
  // As Normalize4d updates them, with the global batch's count.
  NoGradGuard no_grad;
  const Tensor batches = num_batches_tracked_ + 1.0;
  const Tensor f =
      momentum_.has_value() ? scalar(*momentum_, x.dtype()) : 1.0 / cast(batches, x.dtype());
  AssignInPlace(running_mean_, running_mean_ * (1.0 - f) + mean * f);
  AssignInPlace(running_var_, running_var_ * (1.0 - f) + var * (n / (n - 1.0)) * f);
  AssignInPlace(num_batches_tracked_, batches);
  return y;
}

std::string BatchNorm::extra_repr() const {
  return absl::StrCat(num_features_, ", eps=", PyFloat(eps_),
                      ", momentum=", momentum_.has_value() ? PyFloat(*momentum_) : "None",
                      ", affine=", PyBool(weight_.defined()),
                      ", track_running_stats=", PyBool(running_mean_.defined()));
}

int ConvertSyncBatchNorm(Module& module, const std::string& group) {
  int converted = 0;
  for (const auto& [name, m] : module.named_modules()) {
    if (auto* bn = dynamic_cast<BatchNorm*>(m); bn != nullptr) {
      bn->set_sync_group(group);
      ++converted;
    }
  }
  return converted;
}

// ---- LayerNorm

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine)
    : normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  if (normalized_shape_.empty()) ThrowInvalid("LayerNorm: normalized_shape must not be empty");
  for (int64_t d : normalized_shape_) RequirePositive("LayerNorm", "each normalized dim", d);
  if (elementwise_affine) {
    weight_ = register_parameter("weight", ones(normalized_shape_));
    bias_ = register_parameter("bias", zeros(normalized_shape_));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  const int64_t axis = x.dim() - static_cast<int64_t>(normalized_shape_.size());
  const bool fits = axis >= 0 && std::equal(normalized_shape_.begin(), normalized_shape_.end(),
                                            x.shape().begin() + std::max<int64_t>(axis, 0));
  if (!fits) {
    ThrowInvalid(absl::StrCat("LayerNorm: expected an input ending in dims ",
                              ShapeToString(normalized_shape_), ", got ", x.type().ToString()));
  }
  const Tensor w = weight_.defined() ? weight_ : ones(normalized_shape_, x.dtype());
  const Tensor b = bias_.defined() ? bias_ : zeros(normalized_shape_, x.dtype());
  return layer_norm(x, w, b, axis, eps_).y;
}

std::string LayerNorm::extra_repr() const {
  return absl::StrCat(PyTuple(normalized_shape_), ", eps=", PyFloat(eps_),
                      ", elementwise_affine=", PyBool(weight_.defined()));
}

// ---- GroupNorm

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, double eps, bool affine)
    : num_groups_(num_groups), num_channels_(num_channels), eps_(eps) {
  RequirePositive("GroupNorm", "num_groups", num_groups);
  RequirePositive("GroupNorm", "num_channels", num_channels);
  if (num_channels % num_groups != 0) {
    ThrowInvalid(absl::StrCat("GroupNorm: num_channels (", num_channels,
                              ") must be divisible by num_groups (", num_groups, ")"));
  }
  if (affine) {
    weight_ = register_parameter("weight", ones({num_channels}));
    bias_ = register_parameter("bias", zeros({num_channels}));
  }
}

Tensor GroupNorm::forward(const Tensor& x) {
  if (x.dim() < 2 || x.size(1) != num_channels_) {
    ThrowInvalid(absl::StrCat("GroupNorm: expected input [N, C, *] with C = ", num_channels_,
                              ", got ", x.type().ToString()));
  }
  // Each (sample, group) row: C / G channels times the spatial size.
  int64_t per_group = num_channels_ / num_groups_;
  for (int64_t d = 2; d < x.dim(); ++d) per_group = DimMul(per_group, x.size(d));
  const Tensor rows = reshape(x, {x.size(0), num_groups_, per_group});
  const Tensor centered = rows - mean(rows, {2}, /*keepdim=*/true);
  const Tensor variance = var(rows, {2}, /*keepdim=*/true, /*correction=*/0);
  Tensor y = reshape(centered * rsqrt(variance + eps_),
                     std::vector<int64_t>(x.shape().begin(), x.shape().end()));
  if (weight_.defined()) y = y * PerChannel(weight_, x.dim()) + PerChannel(bias_, x.dim());
  return y;
}

std::string GroupNorm::extra_repr() const {
  return absl::StrCat(num_groups_, ", ", num_channels_, ", eps=", PyFloat(eps_),
                      ", affine=", PyBool(weight_.defined()));
}

}  // namespace tc::nn
