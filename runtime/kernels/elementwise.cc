// Eager kernels of the elementwise family: one templated loop over broadcast,
// strided operands (strided.h) per arity, instantiated per op with a functor.
#include <cmath>

#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"

namespace tc::kernels {
namespace {

template <typename In, typename Out, typename F>
void Map1(const Tensor& x, const Tensor& out, F f) {
  const In* xp = static_cast<const In*>(x.raw_data());
  Out* op = static_cast<Out*>(out.raw_data());
  if (x.is_contiguous()) {
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) op[i] = f(xp[i]);
    return;
  }
  ForEachOffset<2>(out.shape(), {out.strides(), x.strides()},
                   [&](int64_t o, int64_t i) { op[o] = f(xp[i]); });
}

template <typename In, typename Out, typename F>
void Map2(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const In* ap = static_cast<const In*>(a.raw_data());
  const In* bp = static_cast<const In*>(b.raw_data());
  Out* op = static_cast<Out*>(out.raw_data());
  const int64_t n = out.numel();
  if (a.is_contiguous() && b.is_contiguous() && a.shape() == out.shape()) {
    if (b.shape() == out.shape()) {
      for (int64_t i = 0; i < n; ++i) op[i] = f(ap[i], bp[i]);
      return;
    }
    if (b.numel() == 1) {
      const In bv = bp[0];
      for (int64_t i = 0; i < n; ++i) op[i] = f(ap[i], bv);
      return;
    }
  }
  ForEachOffset<3>(
      out.shape(),
      {out.strides(), BroadcastStrides(a, out.shape()), BroadcastStrides(b, out.shape())},
      [&](int64_t o, int64_t i, int64_t j) { op[o] = f(ap[i], bp[j]); });
}

// A kernel for a unary op whose output dtype equals its input's.
template <typename F>
absl::StatusOr<TensorList> Unary(absl::Span<const Tensor> in, const Attrs&,
                                 absl::Span<const TensorType> out_types) {
  Tensor out = Tensor::Empty(out_types[0].shape, out_types[0].dtype);
  VisitDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) Map1<T, T>(in[0], out, F{});
  });
  return TensorList{out};
}

template <typename F, bool kCompare = false>
absl::StatusOr<TensorList> Binary(absl::Span<const Tensor> in, const Attrs&,
                                  absl::Span<const TensorType> out_types) {
  Tensor out = Tensor::Empty(out_types[0].shape, out_types[0].dtype);
  VisitDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (kCompare) {
      Map2<T, bool>(in[0], in[1], out, F{});
    } else if constexpr (!std::is_same_v<T, bool>) {
      Map2<T, T>(in[0], in[1], out, F{});
    }
  });
  return TensorList{out};
}

struct AddF {
  template <typename T>
  T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubF {
  template <typename T>
  T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulF {
  template <typename T>
  T operator()(T a, T b) const {
    return a * b;
  }
};
struct DivF {
  template <typename T>
  T operator()(T a, T b) const {
    return a / b;
  }
};
// NaN propagates, as in PyTorch.
struct MaxF {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a > b ? a : b;
  }
};
struct MinF {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a < b ? a : b;
  }
};
struct EqF {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct NeF {
  template <typename T>
  bool operator()(T a, T b) const {
    return a != b;
  }
};
struct LtF {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LeF {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GtF {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GeF {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};

struct NegF {
  template <typename T>
  T operator()(T x) const {
    return -x;
  }
};
struct AbsF {
  template <typename T>
  T operator()(T x) const {
    return x < 0 ? -x : x;
  }
};
struct SignF {
  template <typename T>
  T operator()(T x) const {
    return T((x > 0) - (x < 0));
  }
};
struct ReluF {
  template <typename T>
  T operator()(T x) const {
    return x > 0 ? x : T(0);
  }
};
struct ExpF {
  template <typename T>
  T operator()(T x) const {
    return std::exp(x);
  }
};
struct LogF {
  template <typename T>
  T operator()(T x) const {
    return std::log(x);
  }
};
struct SqrtF {
  template <typename T>
  T operator()(T x) const {
    return std::sqrt(x);
  }
};
struct RsqrtF {
  template <typename T>
  T operator()(T x) const {
    return T(1) / std::sqrt(x);
  }
};
struct SigmoidF {
  template <typename T>
  T operator()(T x) const {
    return T(1) / (T(1) + std::exp(-x));
  }
};
struct TanhF {
  template <typename T>
  T operator()(T x) const {
    return std::tanh(x);
  }
};

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2 pi)

template <typename T>
T Gelu(T x, bool tanh_form) {
  if (tanh_form) {
    return T(0.5) * x * (T(1) + std::tanh(T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x)));
  }
  return T(0.5) * x * (T(1) + std::erf(x * T(kInvSqrt2)));
}

template <typename T>
T GeluGrad(T x, bool tanh_form) {
  if (tanh_form) {
    const T inner = T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x);
    const T t = std::tanh(inner);
    const T dinner = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * x * x);
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * dinner;
  }
  const T cdf = T(0.5) * (T(1) + std::erf(x * T(kInvSqrt2)));
  const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
  return cdf + x * pdf;
}

absl::StatusOr<TensorList> GeluKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                      absl::Span<const TensorType> out_types) {
  const bool tanh_form = attrs.Str("approximate") == "tanh";
  Tensor out = Tensor::Empty(out_types[0].shape, out_types[0].dtype);
  VisitFloatDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    Map1<T, T>(in[0], out, [&](T x) { return Gelu(x, tanh_form); });
  });
  return TensorList{out};
}

absl::StatusOr<TensorList> GeluBackwardKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                              absl::Span<const TensorType> out_types) {
  const bool tanh_form = attrs.Str("approximate") == "tanh";
  Tensor out = Tensor::Empty(out_types[0].shape, out_types[0].dtype);
  VisitFloatDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    Map2<T, T>(in[0], in[1], out, [&](T g, T x) { return g * GeluGrad(x, tanh_form); });
  });
  return TensorList{out};
}

absl::StatusOr<TensorList> PowKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                     absl::Span<const TensorType> out_types) {
  const double e = attrs.Float("exponent");
  Tensor out = Tensor::Empty(out_types[0].shape, out_types[0].dtype);
  VisitFloatDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (e == 2) {
      Map1<T, T>(in[0], out, [](T x) { return x * x; });
    } else {
      Map1<T, T>(in[0], out, [&](T x) { return static_cast<T>(std::pow(x, static_cast<T>(e))); });
    }
  });
  return TensorList{out};
}

absl::StatusOr<TensorList> CastKernel(absl::Span<const Tensor> in, const Attrs&,
                                      absl::Span<const TensorType> out_types) {
  Tensor out = Tensor::Empty(out_types[0].shape, out_types[0].dtype);
  VisitDType(in[0].dtype(), [&](auto from) {
    VisitDType(out.dtype(), [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      Map1<From, To>(in[0], out, [](From x) { return static_cast<To>(x); });
    });
  });
  return TensorList{out};
}

absl::StatusOr<TensorList> WhereKernel(absl::Span<const Tensor> in, const Attrs&,
                                       absl::Span<const TensorType> out_types) {
  Tensor out = Tensor::Empty(out_types[0].shape, out_types[0].dtype);
  const bool* cp = in[0].data<bool>();
  VisitDType(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* ap = static_cast<const T*>(in[1].raw_data());
    const T* bp = static_cast<const T*>(in[2].raw_data());
    T* op = out.data<T>();
    const Shape& s = out.shape();
    ForEachOffset<4>(
        s,
        {out.strides(), BroadcastStrides(in[0], s), BroadcastStrides(in[1], s),
         BroadcastStrides(in[2], s)},
        [&](int64_t o, int64_t c, int64_t a, int64_t b) { op[o] = cp[c] ? ap[a] : bp[b]; });
  });
  return TensorList{out};
}

}  // namespace

void RegisterElementwiseKernels(KernelTable& t) {
  auto set = [&](OpKind op, KernelFn fn) { t[static_cast<int>(op)] = fn; };
  set(OpKind::kAdd, &Binary<AddF>);
  set(OpKind::kSub, &Binary<SubF>);
  set(OpKind::kMul, &Binary<MulF>);
  set(OpKind::kDiv, &Binary<DivF>);
  set(OpKind::kMaximum, &Binary<MaxF>);
  set(OpKind::kMinimum, &Binary<MinF>);
  set(OpKind::kEq, &Binary<EqF, true>);
  set(OpKind::kNe, &Binary<NeF, true>);
  set(OpKind::kLt, &Binary<LtF, true>);
  set(OpKind::kLe, &Binary<LeF, true>);
  set(OpKind::kGt, &Binary<GtF, true>);
  set(OpKind::kGe, &Binary<GeF, true>);
  set(OpKind::kWhere, &WhereKernel);
  set(OpKind::kNeg, &Unary<NegF>);
  set(OpKind::kExp, &Unary<ExpF>);
  set(OpKind::kLog, &Unary<LogF>);
  set(OpKind::kSqrt, &Unary<SqrtF>);
  set(OpKind::kRsqrt, &Unary<RsqrtF>);
  set(OpKind::kAbs, &Unary<AbsF>);
  set(OpKind::kSign, &Unary<SignF>);
  set(OpKind::kRelu, &Unary<ReluF>);
  set(OpKind::kSigmoid, &Unary<SigmoidF>);
  set(OpKind::kTanh, &Unary<TanhF>);
  set(OpKind::kGelu, &GeluKernel);
  set(OpKind::kGeluBackward, &GeluBackwardKernel);
  set(OpKind::kPow, &PowKernel);
  set(OpKind::kCast, &CastKernel);
}

}  // namespace tc::kernels
