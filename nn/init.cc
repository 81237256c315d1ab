#include "nn/init.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nn/layer_checks.h"
#include "nn/module.h"

namespace tc::nn::init {
namespace {

using internal::ThrowInvalid;

void RequireFloating(absl::string_view fn, const Tensor& t) {
  if (!IsFloating(t.dtype())) {
    ThrowInvalid(absl::StrCat(fn, ": expected a floating tensor, got ", t.type().ToString()));
  }
}

// Writes `values` (any floating dtype, t's shape) into t's storage.
const Tensor& Fill(const Tensor& t, const Tensor& values) {
  CopyValues(t, values.to(t.dtype()));
  return t;
}

int64_t FanByMode(absl::string_view fn, const Tensor& t, absl::string_view mode) {
  const Fans fans = calculate_fans(t);
  if (mode == "fan_in") return fans.fan_in;
  if (mode == "fan_out") return fans.fan_out;
  ThrowInvalid(absl::StrCat(fn, ": mode must be \"fan_in\" or \"fan_out\", got \"", mode, "\""));
}

double KaimingStd(absl::string_view fn, const Tensor& t, double a, absl::string_view mode,
                  absl::string_view nonlinearity) {
  const int64_t fan = FanByMode(fn, t, mode);
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}

double StandardNormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// The x in [lo, hi] with StandardNormalCdf(x) = p, for p between the bounds'
// CDFs: bisection, which stays within the bounds and needs no erfinv.
double StandardNormalQuantile(double p, double lo, double hi) {
  for (int i = 0; i < 200 && hi - lo > 1e-15 * std::max(1.0, std::abs(lo)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (StandardNormalCdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

double calculate_gain(absl::string_view nonlinearity, std::optional<double> param) {
  for (absl::string_view linear : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                                   "conv_transpose2d", "conv_transpose3d", "sigmoid"}) {
    if (nonlinearity == linear) return 1;
  }
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4;
  ThrowInvalid(absl::StrCat("calculate_gain: unsupported nonlinearity \"", nonlinearity,
                            "\" (linear, conv*, sigmoid, tanh, relu, leaky_relu, selu)"));
}

Fans calculate_fans(const Tensor& t) {
  if (t.dim() < 2) {
    ThrowInvalid(
        absl::StrCat("fan in and fan out can not be computed for a tensor with fewer "
                     "than 2 dimensions, got ",
                     t.type().ToString()));
  }
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

const Tensor& uniform_(const Tensor& t, double a, double b, Generator* gen) {
  RequireFloating("uniform_", t);
  if (!(a <= b)) ThrowInvalid(absl::StrCat("uniform_: expects a <= b, got a=", a, ", b=", b));
  return Fill(t, rand(t.shape(), t.dtype(), gen, a, b));
}

const Tensor& normal_(const Tensor& t, double mean, double std_dev, Generator* gen) {
  RequireFloating("normal_", t);
  if (!(std_dev >= 0)) ThrowInvalid(absl::StrCat("normal_: std must be >= 0, got ", std_dev));
  return Fill(t, randn(t.shape(), t.dtype(), gen) * std_dev + mean);
}

const Tensor& constant_(const Tensor& t, double value) {
  return Fill(t, full(t.shape(), value, t.dtype()));
}
const Tensor& zeros_(const Tensor& t) { return constant_(t, 0); }
const Tensor& ones_(const Tensor& t) { return constant_(t, 1); }

const Tensor& xavier_uniform_(const Tensor& t, double gain, Generator* gen) {
  const Fans fans = calculate_fans(t);
  const double std_dev = gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  const double bound = std::sqrt(3.0) * std_dev;
  return uniform_(t, -bound, bound, gen);
}

const Tensor& xavier_normal_(const Tensor& t, double gain, Generator* gen) {
  const Fans fans = calculate_fans(t);
  return normal_(t, 0, gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out)),
                 gen);
}

const Tensor& kaiming_uniform_(const Tensor& t, double a, absl::string_view mode,
                               absl::string_view nonlinearity, Generator* gen) {
  if (t.numel() == 0) return t;  // a no-op, as in PyTorch
  const double bound = std::sqrt(3.0) * KaimingStd("kaiming_uniform_", t, a, mode, nonlinearity);
  return uniform_(t, -bound, bound, gen);
}

const Tensor& kaiming_normal_(const Tensor& t, double a, absl::string_view mode,
                              absl::string_view nonlinearity, Generator* gen) {
  if (t.numel() == 0) return t;  // a no-op, as in PyTorch
  return normal_(t, 0, KaimingStd("kaiming_normal_", t, a, mode, nonlinearity), gen);
}

const Tensor& trunc_normal_(const Tensor& t, double mean, double std_dev, double a, double b,
                            Generator* gen) {
  RequireFloating("trunc_normal_", t);
  if (!(a < b) || !(std_dev > 0)) {
    ThrowInvalid(absl::StrCat("trunc_normal_: needs a < b and std > 0, got a=", a, ", b=", b,
                              ", std=", std_dev));
  }
  const double lo = (a - mean) / std_dev, hi = (b - mean) / std_dev;
  std::vector<double> p =
      rand(t.shape(), DType::kF64, gen, StandardNormalCdf(lo), StandardNormalCdf(hi))
          .to_vector<double>();
  for (double& v : p) v = mean + std_dev * StandardNormalQuantile(v, lo, hi);
  return Fill(t, from_vector(p, t.shape()));
}

const Tensor& orthogonal_(const Tensor& t, double gain, Generator* gen) {
  RequireFloating("orthogonal_", t);
  if (t.dim() < 2) {
    ThrowInvalid(absl::StrCat("orthogonal_: expected a tensor of 2 or more dimensions, got ",
                              t.type().ToString()));
  }
  const int64_t rows = t.size(0), cols = t.numel() / std::max<int64_t>(rows, 1);
  if (rows == 0 || cols == 0) return t;
  // Orthonormalise the shorter side's vectors: q holds n vectors of length m
  // (m >= n), vector j at q[j * m, (j + 1) * m).
  const bool by_rows = rows < cols;
  const int64_t m = by_rows ? cols : rows, n = by_rows ? rows : cols;
  std::vector<double> draw = randn({rows, cols}, DType::kF64, gen).to_vector<double>();
  std::vector<double> q(m * n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      (by_rows ? q[r * m + c] : q[c * m + r]) = draw[r * cols + c];
    }
  }
  // Modified Gram-Schmidt, twice for accuracy. Its R has a positive
  // diagonal, the sign PyTorch's fix-up of the QR factors enforces.
  for (int64_t j = 0; j < n; ++j) {
    double* v = &q[j * m];
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t k = 0; k < j; ++k) {
        const double* u = &q[k * m];
        double dot = 0;
        for (int64_t i = 0; i < m; ++i) dot += u[i] * v[i];
        for (int64_t i = 0; i < m; ++i) v[i] -= dot * u[i];
      }
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += v[i] * v[i];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < m; ++i) v[i] /= norm;
  }
  std::vector<double> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      out[r * cols + c] = gain * (by_rows ? q[r * m + c] : q[c * m + r]);
    }
  }
  return Fill(t, from_vector(out, t.shape()));
}

}  // namespace tc::nn::init
