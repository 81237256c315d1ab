#include "nn/activations.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "nn/layer_checks.h"

namespace tc::nn {
namespace {

using internal::PyFloat;

Tensor Scalar(double value, const Tensor& like) { return scalar(value, like.dtype()); }

}  // namespace

Tensor silu(const Tensor& x) { return x * sigmoid(x); }

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return where(gt(x, Scalar(0, x)), x, x * negative_slope);
}

Tensor elu(const Tensor& x, double alpha) {
  // exp of the clamped input, so the untaken branch stays finite (and its
  // zero gradient does not become inf * 0) for large x.
  const Tensor zero = Scalar(0, x), positive = gt(x, zero);
  const Tensor negative = where(positive, zero, x);
  return where(positive, x, (exp(negative) - 1.0) * alpha);
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  // Nested where, so the gradient is x's strictly inside and 0 elsewhere.
  return where(le(x, Scalar(min_val, x)), Scalar(min_val, x),
               where(ge(x, Scalar(max_val, x)), Scalar(max_val, x), x));
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  const Tensor scaled = x * beta;
  const Tensor linear = gt(scaled, Scalar(threshold, x));
  // The soft branch sees at most the threshold, so exp cannot overflow.
  const Tensor bounded = where(linear, Scalar(threshold, x), scaled);
  return where(linear, x, log1p(exp(bounded)) / beta);
}

std::string GELU::extra_repr() const { return absl::StrCat("approximate='", approximate_, "'"); }

std::string LeakyReLU::extra_repr() const {
  return absl::StrCat("negative_slope=", PyFloat(negative_slope_));
}

std::string ELU::extra_repr() const { return absl::StrCat("alpha=", PyFloat(alpha_)); }

Hardtanh::Hardtanh(double min_val, double max_val) : min_val_(min_val), max_val_(max_val) {
  if (!(min_val < max_val)) {
    internal::ThrowInvalid(absl::StrCat("Hardtanh: min_val (", min_val,
                                        ") must be less than max_val (", max_val, ")"));
  }
}

std::string Hardtanh::extra_repr() const {
  return absl::StrCat("min_val=", PyFloat(min_val_), ", max_val=", PyFloat(max_val_));
}

std::string Softplus::extra_repr() const {
  return absl::StrCat("beta=", PyFloat(beta_), ", threshold=", PyFloat(threshold_));
}

std::string Softmax::extra_repr() const { return absl::StrCat("dim=", dim_); }
std::string LogSoftmax::extra_repr() const { return absl::StrCat("dim=", dim_); }

}  // namespace tc::nn
