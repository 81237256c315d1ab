// The scalar formula of each elementwise op, as a functor templated on the
// element type. The eager kernels (runtime/kernels/elementwise.cc) and the
// fused kernels (codegen/fused_ops.cc) both evaluate these, so their results
// are bitwise equal by construction: same formula, same type, same order.
//
//   double y = math::Sigmoid{}(x);
//   float d = math::GeluBackward</*kTanh=*/true>{}(grad, x);
//   Map1<float, float>(x, out, math::Relu{});  // a loop calls one per element
//   math::VisitPlainOp(OpKind::kAdd, [&](auto f) { ... });  // f is math::Add{}
//
// VisitPlainOp is the one map from OpKind to functor for the ops without
// attributes; VisitGelu picks gelu's and gelu_backward's from their form, and
// VisitPow pow's from its exponent.
#ifndef TENSORCUT_RUNTIME_KERNELS_ELEMENTWISE_MATH_H_
#define TENSORCUT_RUNTIME_KERNELS_ELEMENTWISE_MATH_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/base/casts.h"
#include "graph/op_attrs.h"
#include "graph/op_def.h"
#include "runtime/kernels/vector_math.h"

namespace tc::kernels::math {

// The forms of the ops without attributes (VisitPlainOp): T(T), T(T, T) and
// bool(T, T).
struct UnaryFormula {};
struct BinaryFormula {};
struct Comparison {};

// Integers wrap on overflow (two's complement), as PyTorch's do, where C++'s
// signed overflow is undefined: their sums and products run unsigned.
template <typename T, typename Op>
T Wrapping(T a, T b, Op op) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(op(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return op(a, b);
  }
}

struct Add : BinaryFormula {
  template <typename T>
  T operator()(T a, T b) const {
    return Wrapping(a, b, [](auto x, auto y) { return x + y; });
  }
};
struct Sub : BinaryFormula {
  template <typename T>
  T operator()(T a, T b) const {
    return Wrapping(a, b, [](auto x, auto y) { return x - y; });
  }
};
struct Mul : BinaryFormula {
  template <typename T>
  T operator()(T a, T b) const {
    return Wrapping(a, b, [](auto x, auto y) { return x * y; });
  }
};
// Integers divide truncating toward zero, and never trap: by zero the
// result is 0, and the most negative value over -1 is itself (two's
// complement wraps). The kernel refuses a zero divisor first
// (elementwise.cc: eager and compiled, where integers never fuse); the rule
// here keeps anything else that divides from trapping.
struct Div : BinaryFormula {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T(0);
      if (b == T(-1)) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(a));
    }
    return a / b;
  }
};
// NaN propagates, as in PyTorch.
struct Maximum : BinaryFormula {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a > b ? a : b;
  }
};
struct Minimum : BinaryFormula {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a < b ? a : b;
  }
};

struct Eq : Comparison {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Ne : Comparison {
  template <typename T>
  bool operator()(T a, T b) const {
    return a != b;
  }
};
struct Lt : Comparison {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct Le : Comparison {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct Gt : Comparison {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct Ge : Comparison {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};

// Floats keep the sign of zero (0 - x would not); integers wrap at the
// most negative value.
struct Neg : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return Wrapping(T(0), x, [](auto zero, auto y) { return zero - y; });
    } else {
      return -x;
    }
  }
};
struct Abs : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return x < 0 ? Neg{}(x) : x;
  }
};
struct Sign : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return T((x > 0) - (x < 0));
  }
};
// x > 0 ? x : 0 (so NaN and -0 give +0), as a bit mask: GCC turns the
// ternary into a branch in loops at -O2, and a branch on the sign of random
// data costs about 7x the masked loop.
struct Relu : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "Relu is defined on 32 and 64-bit types");
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const Bits mask = x > 0 ? ~Bits{0} : Bits{0};
    return absl::bit_cast<T>(absl::bit_cast<Bits>(x) & mask);
  }
};
struct Exp : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return std::exp(x);
  }
};
struct Log : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return std::log(x);
  }
};
struct Log1p : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return std::log1p(x);
  }
};
struct Erf : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return std::erf(x);
  }
};
// The identity: stop_gradient's value (its effect is on the VJP only).
struct StopGradient : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return x;
  }
};
struct Sqrt : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return std::sqrt(x);
  }
};
struct Rsqrt : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return T(1) / std::sqrt(x);
  }
};
struct Sigmoid : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return T(1) / (T(1) + std::exp(-x));
  }
};
struct Tanh : UnaryFormula {
  template <typename T>
  T operator()(T x) const {
    return std::tanh(x);
  }
};

inline constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2 pi)

// x * Phi(x), or its tanh approximation (approximate="tanh").
// erf and exp as gelu uses them: vectorisable in f32 (vector_math.h), libm's
// in f64.
template <typename T>
T GeluErf(T x) {
  if constexpr (std::is_same_v<T, float>) return VectorErf(x);
  return std::erf(x);
}
template <typename T>
T GeluExp(T x) {
  if constexpr (std::is_same_v<T, float>) return VectorExp(x);
  return std::exp(x);
}

// gelu(x) = x Phi(x): exactly (with erf) or in PyTorch's tanh form. The form
// is a type, so a loop over the functor carries no branch on it.
template <bool kTanh>
struct Gelu {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kTanh) {
      return T(0.5) * x * (T(1) + std::tanh(T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + GeluErf(x * T(kInvSqrt2)));
  }
};

// grad * gelu'(x), in the same form as Gelu.
template <bool kTanh>
struct GeluBackward {
  template <typename T>
  T operator()(T grad, T x) const {
    return grad * Derivative(x);
  }
  template <typename T>
  T Derivative(T x) const {
    if constexpr (kTanh) {
      const T inner = T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x);
      const T t = std::tanh(inner);
      const T dinner = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * x * x);
      return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * dinner;
    }
    const T cdf = T(0.5) * (T(1) + GeluErf(x * T(kInvSqrt2)));
    const T pdf = T(kInvSqrt2Pi) * GeluExp(T(-0.5) * x * x);
    return cdf + x * pdf;
  }
};

// Calls fn with gelu's functor (kBackward: gelu_backward's) of the form
// `approximation` names.
template <bool kBackward, typename Fn>
void VisitGelu(GeluApproximation approximation, Fn&& fn) {
  const bool tanh_form = approximation == GeluApproximation::kTanh;
  if constexpr (kBackward) {
    tanh_form ? fn(GeluBackward<true>{}) : fn(GeluBackward<false>{});
  } else {
    tanh_form ? fn(Gelu<true>{}) : fn(Gelu<false>{});
  }
}

// x to a constant power other than 2.
struct Pow {
  double exponent;
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>(std::pow(x, static_cast<T>(exponent)));
  }
};
// x to the power 2: exactly x * x, as in PyTorch.
struct Square {
  template <typename T>
  T operator()(T x) const {
    return x * x;
  }
};

// Calls `fn(functor)` with pow's functor for `exponent` (chosen once, not per
// element).
template <typename Fn>
void VisitPow(double exponent, Fn&& fn) {
  if (exponent == 2) {
    fn(Square{});
  } else {
    fn(Pow{exponent});
  }
}

// condition ? a : b, as a bit mask rather than a branch: the same bits, and
// loops over it vectorise (a branch on a random mask, such as relu's
// gradient, mispredicts half the time).
struct Where {
  template <typename T>
  T operator()(bool condition, T a, T b) const {
    using Bits = std::conditional_t<
        sizeof(T) == 1, uint8_t,
        std::conditional_t<sizeof(T) == 2, uint16_t,
                           std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    const Bits mask = -static_cast<Bits>(condition);
    return absl::bit_cast<T>(
        static_cast<Bits>((absl::bit_cast<Bits>(a) & mask) | (absl::bit_cast<Bits>(b) & ~mask)));
  }
};

// A float cast to an integer type saturates (NaN gives 0), where C++'s
// conversion of a value out of range is undefined.
template <typename To>
struct Cast {
  template <typename From>
  To operator()(From x) const {
    if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                  !std::is_same_v<To, bool>) {
      constexpr double kLimit = -static_cast<double>(std::numeric_limits<To>::min());  // 2^(bits-1)
      if (std::isnan(x)) return To(0);
      if (x >= kLimit) return std::numeric_limits<To>::max();
      if (x < -kLimit) return std::numeric_limits<To>::min();
    }
    return static_cast<To>(x);
  }
};

namespace internal {
template <typename Fn, typename F>
bool Call(Fn& fn, F f) {
  fn(f);
  return true;
}
}  // namespace internal

// Calls `fn(functor)` with the functor of `op` and returns true when `op` is
// elementwise without attributes (each functor derives from its form);
// returns false for every other op.
template <typename Fn>
bool VisitPlainOp(OpKind op, Fn&& fn) {
  using internal::Call;
  switch (op) {
    case OpKind::kAdd:
      return Call(fn, Add{});
    case OpKind::kSub:
      return Call(fn, Sub{});
    case OpKind::kMul:
      return Call(fn, Mul{});
    case OpKind::kDiv:
      return Call(fn, Div{});
    case OpKind::kMaximum:
      return Call(fn, Maximum{});
    case OpKind::kMinimum:
      return Call(fn, Minimum{});
    case OpKind::kEq:
      return Call(fn, Eq{});
    case OpKind::kNe:
      return Call(fn, Ne{});
    case OpKind::kLt:
      return Call(fn, Lt{});
    case OpKind::kLe:
      return Call(fn, Le{});
    case OpKind::kGt:
      return Call(fn, Gt{});
    case OpKind::kGe:
      return Call(fn, Ge{});
    case OpKind::kNeg:
      return Call(fn, Neg{});
    case OpKind::kAbs:
      return Call(fn, Abs{});
    case OpKind::kSign:
      return Call(fn, Sign{});
    case OpKind::kRelu:
      return Call(fn, Relu{});
    case OpKind::kExp:
      return Call(fn, Exp{});
    case OpKind::kLog:
      return Call(fn, Log{});
    case OpKind::kLog1p:
      return Call(fn, Log1p{});
    case OpKind::kErf:
      return Call(fn, Erf{});
    case OpKind::kStopGradient:
      return Call(fn, StopGradient{});
    case OpKind::kSqrt:
      return Call(fn, Sqrt{});
    case OpKind::kRsqrt:
      return Call(fn, Rsqrt{});
    case OpKind::kSigmoid:
      return Call(fn, Sigmoid{});
    case OpKind::kTanh:
      return Call(fn, Tanh{});
    default:
      return false;
  }
}

}  // namespace tc::kernels::math

#endif  // TENSORCUT_RUNTIME_KERNELS_ELEMENTWISE_MATH_H_
