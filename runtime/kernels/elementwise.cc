// Eager kernels of the elementwise family: one templated loop over broadcast,
// strided operands (strided.h) per arity, instantiated per op with its functor
// from elementwise_math.h.
#include <optional>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "runtime/bf16.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/elementwise_math.h"
#include "runtime/kernels/onednn.h"
#include "runtime/kernels/primitive_cache.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"
#include "runtime/threads.h"

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

// An integer division by zero is an error, as in PyTorch, where the CPU
// would trap (SIGFPE).
absl::Status CheckIntegerDivisor(const Tensor& divisor) {
  if (!IsInteger(divisor.dtype())) return absl::OkStatus();
  bool zero = false;
  VisitDType(divisor.dtype(), [&](auto type) {
    const auto* d = divisor.data<decltype(type)>();
    ForEachOffset<1>(divisor.shape(), {divisor.strides()}, [&](int64_t o) { zero |= d[o] == 0; });
  });
  if (!zero) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("integer division by zero: the divisor ",
                                                 divisor.type().ToString(), " holds a 0"));
}

// The kernel of an op without attributes (math::VisitPlainOp): comparisons
// give bool, the others keep their operands' dtype (never bool: type
// inference rejects arithmetic on bool).
template <typename F>
absl::Status PlainInto(absl::Span<const Tensor> in, const Attrs&, absl::Span<const Tensor> outs) {
  if constexpr (std::is_same_v<F, math::Div>) TC_RETURN_IF_ERROR(CheckIntegerDivisor(in[1]));
  const Tensor& out = outs[0];
  VisitDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_base_of_v<math::Comparison, F>) {
      Map2<T, bool>(in[0], in[1], out, F{});
    } else if constexpr (!std::is_same_v<T, bool>) {
      if constexpr (std::is_base_of_v<math::UnaryFormula, F>) {
        Map1<T, T>(in[0], out, F{});
      } else {
        Map2<T, T>(in[0], in[1], out, F{});
      }
    }
  });
  return absl::OkStatus();
}

// A kernel for an op on floats whose functor depends on an attribute: gelu's
// form or pow's exponent.
template <int kArity, typename F>
void FloatMap(absl::Span<const Tensor> in, const Tensor& out, F f) {
  VisitFloatDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (kArity == 1) {
      Map1<T, T>(in[0], out, f);
    } else {
      Map2<T, T>(in[0], in[1], out, f);
    }
  });
}

absl::Status GeluInto(absl::Span<const Tensor> in, const Attrs& attrs,
                      absl::Span<const Tensor> outs) {
  math::VisitGelu<false>(GeluApproximationOf(attrs), [&](auto f) { FloatMap<1>(in, outs[0], f); });
  return absl::OkStatus();
}

absl::Status GeluBackwardInto(absl::Span<const Tensor> in, const Attrs& attrs,
                              absl::Span<const Tensor> outs) {
  math::VisitGelu<true>(GeluApproximationOf(attrs), [&](auto f) { FloatMap<2>(in, outs[0], f); });
  return absl::OkStatus();
}

absl::Status PowInto(absl::Span<const Tensor> in, const Attrs& attrs,
                     absl::Span<const Tensor> outs) {
  math::VisitPow(ElementwiseAttrsOf(OpKind::kPow, attrs).exponent,
                 [&](auto f) { FloatMap<1>(in, outs[0], f); });
  return absl::OkStatus();
}

// A cast between f32 and bf16 as a oneDNN reorder, which converts with the
// CPU's bf16 instructions where it has them; false where oneDNN has no bf16
// kernels or cannot describe the operands (a broadcast, many dims).
bool ReorderBf16(const Tensor& x, const Tensor& out) {
  const bool f32_bf16 = (x.dtype() == DType::kF32 && out.dtype() == DType::kBF16) ||
                        (x.dtype() == DType::kBF16 && out.dtype() == DType::kF32);
  constexpr int64_t kMaxDims = 6;
  if (!f32_bf16 || !OneDnnRunsBf16() || x.numel() == 0 || x.dim() > kMaxDims) return false;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (x.strides()[d] == 0 && x.shape()[d] > 1) return false;
  }
  PrimitiveKey key(PrimitiveKey::kReorder);
  key.Add(x).Add(out);
  OneDnnPlan& plan = CachedPlan(key, [&](OneDnnPlan& p) {
    const dnnl::memory from = p.External(0, PlainDesc(x)), to = p.External(1, PlainDesc(out));
    p.Add(dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  });
  std::optional<SingleThreaded> one_thread;
  if (x.bytes() + out.bytes() < kParallelCopyBytes) one_thread.emplace();
  plan.Run({x.raw_data(), out.raw_data()});
  return true;
}

// bf16 holds no C++ arithmetic type: a cast to or from it goes through f32
// (ToBf16, FromBf16), element by element over the raw 16-bit values, where
// oneDNN's reorder does not take it.
void CastBf16(const Tensor& x, const Tensor& out) {
  if (ReorderBf16(x, out)) return;
  if (x.dtype() == DType::kBF16 && out.dtype() == DType::kBF16) {
    CopyStrided(x, out);
  } else if (out.dtype() == DType::kBF16) {
    VisitDType(x.dtype(), [&](auto from) {
      Map1<decltype(from), uint16_t>(
          x, out, [](decltype(from) v) { return ToBf16(static_cast<float>(v)); });
    });
  } else {
    VisitDType(out.dtype(), [&](auto to) {
      using To = decltype(to);
      Map1<uint16_t, To>(x, out, [](uint16_t h) { return math::Cast<To>{}(FromBf16(h)); });
    });
  }
}

absl::Status CastInto(absl::Span<const Tensor> in, const Attrs&, absl::Span<const Tensor> outs) {
  const Tensor& out = outs[0];
  if (in[0].dtype() == DType::kBF16 || out.dtype() == DType::kBF16) {
    CastBf16(in[0], out);
    return absl::OkStatus();
  }
  VisitDType(in[0].dtype(), [&](auto from) {
    VisitDType(out.dtype(), [&](auto to) {
      Map1<decltype(from), decltype(to)>(in[0], out, math::Cast<decltype(to)>{});
    });
  });
  return absl::OkStatus();
}

absl::Status WhereInto(absl::Span<const Tensor> in, const Attrs&, absl::Span<const Tensor> outs) {
  const Tensor& out = outs[0];
  const bool* cp = in[0].data<bool>();
  VisitDType(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* ap = static_cast<const T*>(in[1].raw_data());
    const T* bp = static_cast<const T*>(in[2].raw_data());
    T* op = out.data<T>();
    const Shape& s = out.shape();
    ForEachOffset<4>(s,
                     {out.strides(), BroadcastStrides(in[0], s), BroadcastStrides(in[1], s),
                      BroadcastStrides(in[2], s)},
                     [&](int64_t o, int64_t c, int64_t a, int64_t b) {
                       op[o] = math::Where{}(cp[c], ap[a], bp[b]);
                     });
  });
  return absl::OkStatus();
}

}  // namespace

void RegisterElementwiseKernels(KernelTable& t) {
  for (int op = 0; op < kNumOps; ++op) {
    math::VisitPlainOp(OpKind(op),
                       [&](auto f) { BindInto<&PlainInto<decltype(f)>>(t, OpKind(op)); });
  }
  BindInto<&WhereInto>(t, OpKind::kWhere);
  BindInto<&GeluInto>(t, OpKind::kGelu);
  BindInto<&GeluBackwardInto>(t, OpKind::kGeluBackward);
  BindInto<&PowInto>(t, OpKind::kPow);
  BindInto<&CastInto>(t, OpKind::kCast);
}

}  // namespace tc::kernels
