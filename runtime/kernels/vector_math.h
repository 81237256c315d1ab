// Branch-free float exp and erf that GCC vectorises inside elementwise
// loops, where libm's expf and erff stay scalar calls (erff alone was a fifth
// of the transformer's training step). Accuracy, checked against libm in
// double by tests/runtime/vector_math_test.cc:
//   VectorExp: relative error < 2.5e-7 (2 ulp), 0 below -87.3, +inf above
//   88.376 (where float overflows);
//   VectorErf: absolute error < 3.5e-7 (3 ulp near 1; gelu, x Phi(x), inherits
//   under 2 ulp); exact sign, erf(+-inf) = +-1. Both: NaN in, NaN out.
// Only f32 uses them; f64 keeps libm.
#ifndef TENSORCUT_RUNTIME_KERNELS_VECTOR_MATH_H_
#define TENSORCUT_RUNTIME_KERNELS_VECTOR_MATH_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/base/casts.h"

namespace tc::kernels {

// e^x: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two parts so n ln2 is
// exact), e^r by its Taylor polynomial to r^7, and 2^n put in the exponent.
inline float VectorExp(float x) {
  constexpr float kMaxExp = 88.3762626647949f;  // log(FLT_MAX)
  // Clamped by selects: std::fmin and std::fmax are libm calls, not
  // vectorised. A NaN fails both tests and clamps to the low end, so that
  // the exponent below is a number (converting NaN to int is undefined).
  const float clamped = x >= -87.3f ? (x <= kMaxExp ? x : kMaxExp) : -87.3f;
  // n = round(x / ln2) by the 1.5 * 2^23 trick: std::floor does not vectorise.
  const float n = (clamped * 1.44269504088896341f + 12582912.f) - 12582912.f;
  const float r = (clamped - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.f / 5040;
  p = p * r + 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const float scale = absl::bit_cast<float>(static_cast<int32_t>(n + 127.f) << 23);
  const float y = p * scale;
  const float edges = x < -87.3f ? 0.f : (x > kMaxExp ? std::numeric_limits<float>::infinity() : y);
  return x != x ? x : edges;  // NaN: selects, not branches, so the caller's loop vectorises
}

// erf(x): its Taylor series for |x| < 0.5, else Abramowitz and Stegun 7.1.26
// (1 - t (a1 + t (a2 + ...)) e^{-x^2}, t = 1 / (1 + p |x|)), with x's sign.
inline float VectorErf(float x) {
  const float a = std::fabs(x) > 10.f ? 10.f : std::fabs(x);
  const float a2 = a * a;
  float small = 1.2055332981e-4f;  // 2/sqrt(pi) / (6! 13), then lower terms
  small = small * a2 - 8.5483270767e-4f;
  small = small * a2 + 5.2239776254e-3f;
  small = small * a2 - 2.6866170645e-2f;
  small = small * a2 + 1.1283791671e-1f;
  small = small * a2 - 3.7612638903e-1f;
  small = small * a2 + 1.1283791671f;
  small *= a;
  const float t = 1.f / (1.f + 0.3275911f * a);
  float poly = 1.061405429f;
  poly = poly * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  const float large = 1.f - poly * t * VectorExp(-a2);
  const float erf = std::copysign(a < 0.5f ? small : large, x);
  return x != x ? x : erf;
}

}  // namespace tc::kernels

#endif  // TENSORCUT_RUNTIME_KERNELS_VECTOR_MATH_H_
