#include "nn/clip_grad.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/error.h"
#include "runtime/kernels/dtype_dispatch.h"

namespace tc::nn {
namespace {

[[noreturn]] void Fail(absl::string_view fn, absl::string_view what) {
  throw Error(absl::InvalidArgumentError(absl::StrCat(fn, ": ", what)));
}

// The defined grads of `params`, contiguous, each checked to be f32 or f64.
std::vector<Tensor> Grads(absl::string_view fn, absl::Span<const Tensor> params) {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor g = params[i].grad();
    if (!g.defined()) continue;
    if (g.dtype() != DType::kF32 && g.dtype() != DType::kF64) {
      Fail(fn, absl::StrCat("the grad of parameter ", i, " is ", g.type().ToString(),
                            "; only f32 and f64 grads can be clipped"));
    }
    if (!g.is_contiguous()) {
      g = g.contiguous();
      params[i].set_grad(g);
    }
    grads.push_back(g);
  }
  return grads;
}

}  // namespace

double clip_grad_norm_(absl::Span<const Tensor> params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  constexpr absl::string_view kFn = "clip_grad_norm_";
  if (!(norm_type > 0)) Fail(kFn, absl::StrCat("norm_type must be > 0, got ", norm_type));
  const std::vector<Tensor> grads = Grads(kFn, params);
  const bool inf = std::isinf(norm_type);
  double total = 0;  // the largest |g| for inf, else sum |g|^p
  for (const Tensor& g : grads) {
    kernels::VisitFloatDType(g.dtype(), [&](auto zero) {
      const auto* data = g.data<decltype(zero)>();
      const int64_t n = g.numel();
      for (int64_t i = 0; i < n; ++i) {
        const double a = std::abs(static_cast<double>(data[i]));
        if (inf) {
          // std::max would drop a NaN; PyTorch's norm keeps it.
          total = std::isnan(a) || a > total ? a : total;
        } else {
          total += norm_type == 2 ? a * a : (norm_type == 1 ? a : std::pow(a, norm_type));
        }
      }
    });
  }
  if (!inf) total = norm_type == 2 ? std::sqrt(total) : std::pow(total, 1 / norm_type);
  if (error_if_nonfinite && !std::isfinite(total)) {
    Fail(kFn, absl::StrCat("the total norm of order ", norm_type, " of the gradients is ", total,
                           "; with error_if_nonfinite the grads are left as they are"));
  }
  // PyTorch clamps the coefficient at 1 and multiplies; by 1 changes nothing.
  // A NaN norm gives a NaN coefficient, which is applied.
  const double coef = max_norm / (total + 1e-6);
  if (coef >= 1) return total;
  for (const Tensor& g : grads) {
    kernels::VisitFloatDType(g.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* data = g.data<T>();
      const int64_t n = g.numel();
      const T c = static_cast<T>(coef);
      for (int64_t i = 0; i < n; ++i) data[i] *= c;
    });
  }
  return total;
}

void clip_grad_value_(absl::Span<const Tensor> params, double clip_value) {
  constexpr absl::string_view kFn = "clip_grad_value_";
  if (!(clip_value >= 0)) Fail(kFn, absl::StrCat("clip_value must be >= 0, got ", clip_value));
  for (const Tensor& g : Grads(kFn, params)) {
    kernels::VisitFloatDType(g.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* data = g.data<T>();
      const int64_t n = g.numel();
      const T hi = static_cast<T>(clip_value), lo = -hi;
      // Comparisons, so a NaN stays NaN as in torch.clamp.
      for (int64_t i = 0; i < n; ++i) data[i] = data[i] > hi ? hi : (data[i] < lo ? lo : data[i]);
    });
  }
}

}  // namespace tc::nn
