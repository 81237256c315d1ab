// Eager kernels of the reduction family. f32 sum/mean/max/min run on oneDNN's
// reduction primitive and f32 softmax/log_softmax on its softmax primitives;
// f64 and i64 run on reference loops. var and argmax have no oneDNN primitive
// and use reference loops for every dtype (var accumulates in f64).
//
// The reference reductions share one trick: over the input's index space, the
// output is addressed with strides that are 0 along reduced dims, so every
// input element is folded into the output slot it belongs to.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/onednn.h"
#include "runtime/kernels/primitive_cache.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"
#include "runtime/threads.h"

namespace tc::kernels {
namespace {

// A reduction over a set of dims of `x`, with the result seen as `kept`: x's
// shape with every reduced dim set to 1 (the output's layout with or without
// keepdim, since the output is contiguous).
// Inline vectors: describing a reduction allocates nothing up to rank 8.
using Dims = absl::InlinedVector<int64_t, 8>;
struct Reduction {
  absl::InlinedVector<bool, 8> reduced;  // per dim of x
  Dims kept;
  Dims fold_strides;  // output strides over x's shape, 0 where reduced
  int64_t count = 1;  // elements folded into each output slot
};

Dims DenseStrides(absl::Span<const int64_t> shape) {
  Dims strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * shape[d + 1];
  }
  return strides;
}

Reduction MakeReduction(const Tensor& x, const Attrs& attrs) {
  const std::vector<int64_t>& dims = attrs.Ints("dims");
  Reduction r;
  r.reduced.assign(x.dim(), dims.empty());  // [] reduces every dim
  for (int64_t d : dims) r.reduced[*WrapDim(d, x.dim())] = true;
  r.kept.assign(x.shape().begin(), x.shape().end());
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!r.reduced[d]) continue;
    r.count *= x.shape()[d];
    r.kept[d] = 1;
  }
  r.fold_strides = DenseStrides(r.kept);
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (r.reduced[d]) r.fold_strides[d] = 0;
  }
  return r;
}

// acc[o] = f(acc[o], x[i]) for every element x[i] folded into output slot o.
template <typename T, typename Acc, typename F>
void Fold(const Tensor& x, const Reduction& r, Acc* acc, F f) {
  const T* xp = static_cast<const T*>(x.raw_data());
  ForEachOffset<2>(x.shape(), {r.fold_strides, x.strides()},
                   [&](int64_t o, int64_t i) { acc[o] = f(acc[o], xp[i]); });
}

// x's dims and strides with its folded dims first (`folded_first`) or last.
struct FoldedLayout {
  Dims shape, strides;

  bool dense() const { return IsContiguous(shape, strides); }
};

FoldedLayout Folded(const Tensor& x, const Reduction& r, bool folded_first) {
  FoldedLayout l;
  for (bool folded : {folded_first, !folded_first}) {
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (r.reduced[d] != folded) continue;
      l.shape.push_back(x.shape()[d]);
      l.strides.push_back(x.strides()[d]);
    }
  }
  return l;
}

// f32 sum or mean of x read as dense rows [folded elements, kept elements]
// (a bias gradient: the sum over a batch), added row by row with vector adds
// rather than transposed for oneDNN. False when x is not dense that way, or
// already dense as oneDNN reads it (one kept element: a full sum).
bool ReduceDenseRows(dnnl::algorithm alg, const Tensor& x, const Reduction& r, const Tensor& out) {
  if (!Folded(x, r, /*folded_first=*/true).dense() ||
      Folded(x, r, /*folded_first=*/false).dense()) {
    return false;
  }
  const int64_t m = out.numel(), k = r.count;
  const float* xp = static_cast<const float*>(x.raw_data());
  float* op = out.data<float>();
  const bool mean = alg == dnnl::algorithm::reduction_mean;
  // Threads take column ranges: each column adds its rows in the same order
  // whatever the thread count, so the bits do not depend on it.
  const int64_t chunks = x.numel() < kParallelElements ? 1 : std::min<int64_t>(NumThreads(), m);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = m * c / chunks, end = m * (c + 1) / chunks;
    std::copy(xp + begin, xp + end, op + begin);
    for (int64_t i = 1; i < k; ++i) {
      const float* row = xp + i * m;
      for (int64_t j = begin; j < end; ++j) op[j] += row[j];
    }
    if (mean) {
      for (int64_t j = begin; j < end; ++j) op[j] /= static_cast<float>(k);
    }
  }
  return true;
}

// oneDNN's vectorised reduction wants the folded elements innermost and dense;
// other layouts fall to its slow reference loop. So x is seen as a 2-D
// [kept elements, folded elements] matrix, reordered into a dense buffer the
// plan owns when not dense that way, unless a sum or mean can add dense rows
// instead.
void OneDnnReduce(dnnl::algorithm alg, const Tensor& x, const Reduction& r, const Tensor& out) {
  if (r.count == 1) {  // only size-1 dims reduced: a copy, which oneDNN rejects
    const float* xp = x.data<float>();
    float* op = out.data<float>();
    ForEachOffset<2>(x.shape(), {r.fold_strides, x.strides()},
                     [&](int64_t o, int64_t i) { op[o] = xp[i]; });
    return;
  }
  const bool adds = alg == dnnl::algorithm::reduction_sum || alg == dnnl::algorithm::reduction_mean;
  if (adds && ReduceDenseRows(alg, x, r, out)) return;
  PrimitiveKey key(PrimitiveKey::kReduction);
  key.Add(static_cast<int64_t>(alg)).Add(x).Add(r.fold_strides);
  OneDnnPlan& plan = CachedPlan(key, [&](OneDnnPlan& p) {
    const FoldedLayout folded = Folded(x, r, /*folded_first=*/false);
    const int64_t m = out.numel(), k = r.count;
    const dnnl::memory::desc matrix = PlainDesc(x.dtype(), {m, k}, {k, 1});
    dnnl::memory src;
    if (folded.dense()) {
      src = p.External(0, matrix);
    } else {
      const dnnl::memory::desc strided = PlainDesc(x.dtype(), folded.shape, folded.strides);
      const dnnl::memory::desc dense =
          PlainDesc(x.dtype(), folded.shape, DenseStrides(folded.shape));
      const dnnl::memory from = p.External(0, strided);
      const dnnl::memory to = p.Internal(dense);
      p.Add(dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
      src = dnnl::memory(matrix, Engine(), to.get_data_handle());  // the same buffer, as [m, k]
    }
    const dnnl::memory::desc dst = PlainDesc(out.dtype(), {m, 1}, {1, 1});
    const dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(alg, matrix, dst, 0.f, 0.f),
                                             Engine());
    p.Add(dnnl::reduction(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, p.External(1, dst)}});
  });
  plan.Run({x.raw_data(), out.raw_data()});
}

template <typename T>
void Fill(const Tensor& out, T value) {
  std::fill_n(out.data<T>(), out.numel(), value);
}

// NaN wins over every number, so a NaN anywhere in a slot propagates.
template <typename T>
bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}
struct MaxF {
  template <typename T>
  T operator()(T acc, T v) const {
    return IsNan(acc) || !(IsNan(v) || v > acc) ? acc : v;
  }
};
struct MinF {
  template <typename T>
  T operator()(T acc, T v) const {
    return IsNan(acc) || !(IsNan(v) || v < acc) ? acc : v;
  }
};

// The identity of max (kMax) or min: infinities for floats, limits for ints.
template <typename T, bool kMax>
T ExtremumIdentity() {
  if constexpr (std::numeric_limits<T>::has_infinity) {
    return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  }
  return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

absl::Status SumInto(absl::Span<const Tensor> in, const Attrs& attrs,
                     absl::Span<const Tensor> outs) {
  const Tensor &x = in[0], &out = outs[0];
  const Reduction r = MakeReduction(x, attrs);
  if (OneDnnSupports(x.dtype()) && x.numel() > 0) {
    OneDnnReduce(dnnl::algorithm::reduction_sum, x, r, out);
    return absl::OkStatus();
  }
  ZeroDense(out);  // an empty sum is 0
  VisitDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) Fold<T>(x, r, out.data<T>(), std::plus<T>());
  });
  return absl::OkStatus();
}

absl::Status MeanInto(absl::Span<const Tensor> in, const Attrs& attrs,
                      absl::Span<const Tensor> outs) {
  const Tensor &x = in[0], &out = outs[0];
  const Reduction r = MakeReduction(x, attrs);
  if (OneDnnSupports(x.dtype())) {
    if (x.numel() > 0) {
      OneDnnReduce(dnnl::algorithm::reduction_mean, x, r, out);
    } else {
      Fill(out, std::numeric_limits<float>::quiet_NaN());  // the mean of nothing
    }
    return absl::OkStatus();
  }
  ZeroDense(out);
  VisitFloatDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* op = out.data<T>();
    Fold<T>(x, r, op, std::plus<T>());
    for (int64_t o = 0; o < out.numel(); ++o) op[o] /= static_cast<T>(r.count);  // 0/0 is NaN
  });
  return absl::OkStatus();
}

// max (kMax) or min. Shape inference rejects reducing an empty dim, so every
// output slot folds at least one element.
template <bool kMax>
absl::Status ExtremumInto(absl::Span<const Tensor> in, const Attrs& attrs,
                          absl::Span<const Tensor> outs) {
  const Tensor &x = in[0], &out = outs[0];
  const Reduction r = MakeReduction(x, attrs);
  if (OneDnnSupports(x.dtype())) {
    if (x.numel() > 0) {
      OneDnnReduce(kMax ? dnnl::algorithm::reduction_max : dnnl::algorithm::reduction_min, x, r,
                   out);
      // oneDNN's max/min may drop a NaN; a second pass puts it back.
      Fold<float>(x, r, out.data<float>(), [](float acc, float v) { return IsNan(v) ? v : acc; });
    }
    return absl::OkStatus();
  }
  VisitDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) {
      Fill(out, ExtremumIdentity<T, kMax>());
      if constexpr (kMax) {
        Fold<T>(x, r, out.data<T>(), MaxF());
      } else {
        Fold<T>(x, r, out.data<T>(), MinF());
      }
    }
  });
  return absl::OkStatus();
}

// Two passes (mean, then squared deviations) in f64: stable, and exact enough
// for f32 inputs without a oneDNN primitive for variance.
template <typename T>
void VarInto(const Tensor& x, const Reduction& r, int64_t correction, const Tensor& out) {
  const int64_t n = out.numel();
  std::vector<double> mean(n, 0.0), m2(n, 0.0);
  Fold<T>(x, r, mean.data(), [](double acc, T v) { return acc + v; });
  for (double& m : mean) m /= static_cast<double>(r.count);
  const T* xp = static_cast<const T*>(x.raw_data());
  ForEachOffset<2>(x.shape(), {r.fold_strides, x.strides()}, [&](int64_t o, int64_t i) {
    const double d = xp[i] - mean[o];
    m2[o] += d * d;
  });
  // As PyTorch: a divisor of 0 (N <= correction) gives inf, or NaN for 0 / 0.
  const double divisor = static_cast<double>(std::max<int64_t>(r.count - correction, 0));
  T* op = out.data<T>();
  for (int64_t o = 0; o < n; ++o) op[o] = static_cast<T>(m2[o] / divisor);
}

absl::Status VarKernelInto(absl::Span<const Tensor> in, const Attrs& attrs,
                           absl::Span<const Tensor> outs) {
  const Tensor& x = in[0];
  VisitFloatDType(x.dtype(), [&](auto zero) {
    VarInto<decltype(zero)>(x, MakeReduction(x, attrs), attrs.Int("correction"), outs[0]);
  });
  return absl::OkStatus();
}

// Calls fn(x_offset, out_offset) at the first element of every line of `x`
// along `dim`; `out_strides` address the output over x's shape with `dim` at 1.
template <typename Fn>
void ForEachLine(const Tensor& x, int64_t dim, absl::Span<const int64_t> out_strides, Fn&& fn) {
  Dims outer(x.shape().begin(), x.shape().end());
  outer[dim] = 1;
  ForEachOffset<2>(outer, {x.strides(), out_strides}, fn);
}

// Whether v replaces best as the running argmax: strictly greater, or the
// first NaN (which counts as the maximum, as in PyTorch).
template <typename T>
bool BeatsMax(T v, T best) {
  if (IsNan(best)) return false;
  return IsNan(v) || v > best;
}

absl::Status ArgmaxInto(absl::Span<const Tensor> in, const Attrs& attrs,
                        absl::Span<const Tensor> outs) {
  const Tensor& x = in[0];
  const int64_t dim = *WrapDim(attrs.Int("dim"), x.dim());
  int64_t* op = outs[0].data<int64_t>();
  Dims kept(x.shape().begin(), x.shape().end());
  kept[dim] = 1;
  const int64_t n = x.shape()[dim], step = x.strides()[dim];
  VisitDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* xp = static_cast<const T*>(x.raw_data());
    ForEachLine(x, dim, DenseStrides(kept), [&](int64_t i, int64_t o) {
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k) {
        if (BeatsMax(xp[i + k * step], xp[i + best * step])) best = k;
      }
      op[o] = best;
    });
  });
  return absl::OkStatus();
}

// Numerically stable: exponents are taken of x - max(x), all <= 0.
template <typename T>
void SoftmaxInto(const Tensor& x, int64_t dim, bool log, const Tensor& out) {
  const T* xp = static_cast<const T*>(x.raw_data());
  T* op = out.data<T>();
  const int64_t n = x.shape()[dim], xs = x.strides()[dim], os = out.strides()[dim];
  ForEachLine(x, dim, out.strides(), [&](int64_t i, int64_t o) {
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t k = 0; k < n; ++k) max = std::max(max, xp[i + k * xs]);
    T sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const T e = std::exp(xp[i + k * xs] - max);
      sum += e;
      if (!log) op[o + k * os] = e;
    }
    const T log_sum = std::log(sum);
    for (int64_t k = 0; k < n; ++k) {
      if (log) {
        op[o + k * os] = xp[i + k * xs] - max - log_sum;
      } else {
        op[o + k * os] /= sum;
      }
    }
  });
}

// One descriptor serves src and dst: a strided x is first reordered into a
// dense buffer the plan owns.
template <typename Primitive>
void OneDnnSoftmax(const Tensor& x, int64_t dim, const Tensor& out) {
  PrimitiveKey key(std::is_same_v<Primitive, dnnl::softmax_forward> ? PrimitiveKey::kSoftmax
                                                                    : PrimitiveKey::kLogSoftmax);
  key.Add(x).Add(dim);
  OneDnnPlan& plan = CachedPlan(key, [&](OneDnnPlan& p) {
    const dnnl::memory::desc desc = PlainDesc(out);
    dnnl::memory src;
    if (x.is_contiguous()) {
      src = p.External(0, desc);
    } else {
      const dnnl::memory from = p.External(0, PlainDesc(x));
      src = p.Internal(desc);
      p.Add(dnnl::reorder(from, src), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, src}});
    }
    const typename Primitive::primitive_desc pd(
        typename Primitive::desc(dnnl::prop_kind::forward_inference, desc, static_cast<int>(dim)),
        Engine());
    p.Add(Primitive(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, p.External(1, desc)}});
  });
  plan.Run({x.raw_data(), out.raw_data()});
}

template <bool kLog>
absl::Status SoftmaxKernelInto(absl::Span<const Tensor> in, const Attrs& attrs,
                               absl::Span<const Tensor> outs) {
  const Tensor &x = in[0], &out = outs[0];
  const int64_t dim = *WrapDim(attrs.Int("dim"), x.dim());
  if (x.numel() == 0) return absl::OkStatus();
  if (OneDnnSupports(x.dtype())) {
    if constexpr (kLog) {
      OneDnnSoftmax<dnnl::logsoftmax_forward>(x, dim, out);
    } else {
      OneDnnSoftmax<dnnl::softmax_forward>(x, dim, out);
    }
    return absl::OkStatus();
  }
  VisitFloatDType(x.dtype(), [&](auto zero) { SoftmaxInto<decltype(zero)>(x, dim, kLog, out); });
  return absl::OkStatus();
}

}  // namespace

void RegisterReductionKernels(KernelTable& t) {
  BindInto<&SumInto>(t, OpKind::kSum);
  BindInto<&MeanInto>(t, OpKind::kMean);
  BindInto<&ExtremumInto<true>>(t, OpKind::kMax);
  BindInto<&ExtremumInto<false>>(t, OpKind::kMin);
  BindInto<&VarKernelInto>(t, OpKind::kVar);
  BindInto<&ArgmaxInto>(t, OpKind::kArgmax);
  BindInto<&SoftmaxKernelInto<false>>(t, OpKind::kSoftmax);
  BindInto<&SoftmaxKernelInto<true>>(t, OpKind::kLogSoftmax);
}

}  // namespace tc::kernels
