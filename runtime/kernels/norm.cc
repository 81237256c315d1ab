// Out-variant kernels: batch_norm and layer_norm, with their backwards
// (embedding and dropout, registered from here, are in embedding_dropout.cc).
//
// Normalisation sees its input as a 3-D [N, C, S] (batch norm: statistics per
// channel C over N and S = H*W*...) or a 2-D [R, D] (layer norm: statistics per
// row R over the D = prod(x.shape[axis:]) normalised elements) contiguous
// array. Batch norm runs on vectorised loops here for every dtype. Layer norm
// in f32 runs on oneDNN's layer normalisation primitives, built once per shape
// (primitive_cache.h); in f64, and on tensors with no elements (where only the
// conventions for empty statistics matter), on the reference loops here.
// After a first call with the same shapes nothing is allocated: outputs are
// the caller's, strided inputs are copied into reused per-thread buffers.
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "Eigen/Core"
#include "absl/base/casts.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/onednn.h"
#include "runtime/kernels/primitive_cache.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"
#include "runtime/threads.h"

namespace tc::kernels {
namespace {

// Weight and bias as separate scale and shift arrays, each [C] or [D].
dnnl::normalization_flags ScaleShift() {
  return dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
}

// At most this many inputs per kernel (grad, x, w, mean, var).
constexpr int kMaxInputs = 5;

// The elements of input `slot`, `t`, as a contiguous array: t's own data when
// t is contiguous, else a row-major copy in this thread's scratch buffer for
// that slot, grown when too small and reused by later calls. Copies here
// rather than with Tensor::contiguous(), which would allocate and dispatch a
// cast op from inside a kernel, showing it to the installed hooks.
template <typename T>
T* DenseData(const Tensor& t, int slot) {
  if (t.is_contiguous()) return t.data<T>();
  thread_local std::array<std::vector<T>, kMaxInputs> scratch;
  std::vector<T>& buffer = scratch[slot];
  if (static_cast<int64_t>(buffer.size()) < t.numel()) buffer.resize(t.numel());
  const T* src = t.data<T>();
  T* dst = buffer.data();
  ForEachOffset<1>(t.shape(), {t.strides()}, [&](int64_t offset) { *dst++ = src[offset]; });
  return buffer.data();
}

void FillZero(const Tensor& t) {
  if (t.bytes() > 0) std::memset(t.raw_data(), 0, t.bytes());
}

bool UseOneDnn(const Tensor& x) { return OneDnnSupports(x.dtype()) && x.numel() > 0; }

// A dense f32 descriptor of `dims`, for contiguous tensors seen with other dims.
dnnl::memory::desc DenseDesc(const dnnl::memory::dims& dims) {
  return PlainDesc(DType::kF32, dims, ContiguousStrides(dims));
}

// ---- batch norm

struct BnDims {
  int64_t n, c, s;
  int64_t count() const { return n * s; }  // values per channel
  // Channels are independent: large inputs split them over the intra-op
  // threads (each channel on one thread, so results do not depend on them).
  bool parallel() const { return n * c * s >= kParallelElements; }
  int64_t at(int64_t i, int64_t ch, int64_t j) const { return (i * c + ch) * s + j; }
};

BnDims BatchNormDims(const Shape& x) {
  return {x[0], x[1], NumElements(absl::MakeConstSpan(x).subspan(2))};
}

// Batch norm runs on the loops below for every dtype: each (sample, channel)
// plane is a contiguous row of S elements, which Eigen reduces and maps with
// vector instructions. (oneDNN's batch norm for plain NCHW data, the only
// layout tensors have here, is a scalar loop several times slower.)
template <typename T>
using Row = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using MutableRow = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

template <typename T>
void BatchNormStats(const T* x, const BnDims& d, T* mean, T* var) {
#pragma omp parallel for if (d.parallel())
  for (int64_t ch = 0; ch < d.c; ++ch) {
    T sum = 0, sq = 0;
    for (int64_t i = 0; i < d.n; ++i) sum += Row<T>(x + d.at(i, ch, 0), d.s).sum();
    mean[ch] = sum / static_cast<T>(d.count());
    for (int64_t i = 0; i < d.n; ++i) {
      sq += (Row<T>(x + d.at(i, ch, 0), d.s) - mean[ch]).square().sum();
    }
    var[ch] = sq / static_cast<T>(d.count());
  }
}

// y = (x - mean) * invstd * w + b, as x * scale + shift.
template <typename T>
void BatchNormApply(const T* x, const T* w, const T* b, const T* mean, const T* var,
                    const BnDims& d, double eps, T* y) {
#pragma omp parallel for if (d.parallel())
  for (int64_t ch = 0; ch < d.c; ++ch) {
    const T scale = w[ch] / std::sqrt(var[ch] + static_cast<T>(eps));
    const T shift = b[ch] - mean[ch] * scale;
    for (int64_t i = 0; i < d.n; ++i) {
      const int64_t k = d.at(i, ch, 0);
      MutableRow<T>(y + k, d.s) = Row<T>(x + k, d.s) * scale + shift;
    }
  }
}

// The training-mode gradient, through the batch statistics:
//   dx = w * invstd / M * (M * g - sum(g) - xhat * sum(g * xhat)),
// computed as dx = a * g - c * x + (c * mean - a * sum(g) / M), with
// a = w * invstd and c = a * invstd * sum(g * xhat) / M.
template <typename T>
void BatchNormBackward(const T* g, const T* x, const T* w, const T* mean, const T* var,
                       const BnDims& d, double eps, T* dx, T* dw, T* db) {
  const T m = static_cast<T>(d.count());
#pragma omp parallel for if (d.parallel())
  for (int64_t ch = 0; ch < d.c; ++ch) {
    const T invstd = T(1) / std::sqrt(var[ch] + static_cast<T>(eps));
    T sum_g = 0, sum_gxm = 0;  // sum(g), sum(g * (x - mean))
    for (int64_t i = 0; i < d.n; ++i) {
      const int64_t k = d.at(i, ch, 0);
      sum_g += Row<T>(g + k, d.s).sum();
      sum_gxm += (Row<T>(g + k, d.s) * (Row<T>(x + k, d.s) - mean[ch])).sum();
    }
    const T sum_gx = sum_gxm * invstd;
    db[ch] = sum_g;
    dw[ch] = sum_gx;
    const T a = w[ch] * invstd, c = a * invstd * sum_gx / m;
    const T shift = c * mean[ch] - a * sum_g / m;
    for (int64_t i = 0; i < d.n; ++i) {
      const int64_t k = d.at(i, ch, 0);
      MutableRow<T>(dx + k, d.s) = Row<T>(g + k, d.s) * a - Row<T>(x + k, d.s) * c + shift;
    }
  }
}

absl::Status BatchNormInto(absl::Span<const Tensor> in, const Attrs& attrs,
                           absl::Span<const Tensor> out) {  // x, w, b -> y, mean, var
  const double eps = attrs.Float("eps");
  const BnDims d = BatchNormDims(in[0].shape());
  VisitFloatDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = DenseData<T>(in[0], 0);
    T* mean = out[1].data<T>();
    T* var = out[2].data<T>();
    BatchNormStats(x, d, mean, var);
    BatchNormApply(x, DenseData<T>(in[1], 1), DenseData<T>(in[2], 2), mean, var, d, eps,
                   out[0].data<T>());
  });
  return absl::OkStatus();
}

absl::Status BatchNormInferenceInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                    absl::Span<const Tensor> out) {  // x, w, b, mean, var -> y
  const double eps = attrs.Float("eps");
  const BnDims d = BatchNormDims(in[0].shape());
  VisitFloatDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    BatchNormApply(DenseData<T>(in[0], 0), DenseData<T>(in[1], 1), DenseData<T>(in[2], 2),
                   DenseData<T>(in[3], 3), DenseData<T>(in[4], 4), d, eps, out[0].data<T>());
  });
  return absl::OkStatus();
}

// grad, x, w, mean, var -> dx, dw, db
absl::Status BatchNormBackwardInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                   absl::Span<const Tensor> out) {
  const double eps = attrs.Float("eps");
  const BnDims d = BatchNormDims(in[1].shape());
  VisitFloatDType(in[1].dtype(), [&](auto zero) {
    using T = decltype(zero);
    BatchNormBackward(DenseData<T>(in[0], 0), DenseData<T>(in[1], 1), DenseData<T>(in[2], 2),
                      DenseData<T>(in[3], 3), DenseData<T>(in[4], 4), d, eps, out[0].data<T>(),
                      out[1].data<T>(), out[2].data<T>());
  });
  return absl::OkStatus();
}

// ---- layer norm

struct LnDims {
  int64_t r, d;
};

LnDims LayerNormDims(const Shape& x, int64_t axis) {
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  const absl::Span<const int64_t> s(x);
  return {NumElements(s.subspan(0, axis)), NumElements(s.subspan(axis))};
}

template <typename T>
void LayerNormRef(const T* x, const T* w, const T* b, const LnDims& ln, double eps, T* y, T* mean,
                  T* var) {
  for (int64_t r = 0; r < ln.r; ++r) {
    const T* xr = x + r * ln.d;
    T sum = 0, sq = 0;
    for (int64_t j = 0; j < ln.d; ++j) sum += xr[j];
    mean[r] = sum / static_cast<T>(ln.d);
    for (int64_t j = 0; j < ln.d; ++j) sq += (xr[j] - mean[r]) * (xr[j] - mean[r]);
    var[r] = sq / static_cast<T>(ln.d);
    const T invstd = T(1) / std::sqrt(var[r] + static_cast<T>(eps));
    for (int64_t j = 0; j < ln.d; ++j) y[r * ln.d + j] = (xr[j] - mean[r]) * invstd * w[j] + b[j];
  }
}

// Per row, with gw = g * w: dx = invstd / D * (D * gw - sum(gw) - xhat * sum(gw * xhat));
// dw and db sum g * xhat and g over the rows.
template <typename T>
void LayerNormBackwardRef(const T* g, const T* x, const T* w, const T* mean, const T* var,
                          const LnDims& ln, double eps, T* dx, T* dw, T* db) {
  const T d = static_cast<T>(ln.d);
  for (int64_t r = 0; r < ln.r; ++r) {
    const T invstd = T(1) / std::sqrt(var[r] + static_cast<T>(eps));
    const T* gr = g + r * ln.d;
    const T* xr = x + r * ln.d;
    T sum_gw = 0, sum_gwx = 0;
    for (int64_t j = 0; j < ln.d; ++j) {
      const T xhat = (xr[j] - mean[r]) * invstd;
      sum_gw += gr[j] * w[j];
      sum_gwx += gr[j] * w[j] * xhat;
      dw[j] += gr[j] * xhat;
      db[j] += gr[j];
    }
    for (int64_t j = 0; j < ln.d; ++j) {
      const T xhat = (xr[j] - mean[r]) * invstd;
      dx[r * ln.d + j] = invstd / d * (d * gr[j] * w[j] - sum_gw - xhat * sum_gwx);
    }
  }
}

// eps's bits, for a plan key.
int64_t EpsKey(double eps) { return absl::bit_cast<int64_t>(eps); }

// oneDNN's layer normalisation forward over [R, D]: x, w, b -> y, mean, var.
OneDnnPlan& LayerNormPlan(const LnDims& ln, double eps) {
  PrimitiveKey key(PrimitiveKey::kLayerNorm);
  key.Add(ln.r).Add(ln.d).Add(EpsKey(eps));
  return CachedPlan(key, [&](OneDnnPlan& p) {
    const dnnl::memory::desc data = DenseDesc({ln.r, ln.d}), param = DenseDesc({ln.d}),
                             stat = DenseDesc({ln.r});
    const dnnl::layer_normalization_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_training, data, stat, static_cast<float>(eps), ScaleShift()},
        Engine());
    p.Add(dnnl::layer_normalization_forward(pd), {{DNNL_ARG_SRC, p.External(0, data)},
                                                  {DNNL_ARG_SCALE, p.External(1, param)},
                                                  {DNNL_ARG_SHIFT, p.External(2, param)},
                                                  {DNNL_ARG_DST, p.External(3, data)},
                                                  {DNNL_ARG_MEAN, p.External(4, stat)},
                                                  {DNNL_ARG_VARIANCE, p.External(5, stat)}});
  });
}

// The backward: grad, x, w, mean, var -> dx, dw, db.
OneDnnPlan& LayerNormBackwardPlan(const LnDims& ln, double eps) {
  PrimitiveKey key(PrimitiveKey::kLayerNormBackward);
  key.Add(ln.r).Add(ln.d).Add(EpsKey(eps));
  return CachedPlan(key, [&](OneDnnPlan& p) {
    const dnnl::memory::desc data = DenseDesc({ln.r, ln.d}), param = DenseDesc({ln.d}),
                             stat = DenseDesc({ln.r});
    const float feps = static_cast<float>(eps);
    const dnnl::layer_normalization_forward::primitive_desc hint(
        {dnnl::prop_kind::forward_training, data, stat, feps, ScaleShift()}, Engine());
    const dnnl::layer_normalization_backward::primitive_desc pd(
        {dnnl::prop_kind::backward, data, data, stat, feps, ScaleShift()}, Engine(), hint);
    // oneDNN 2.6 demands the shift as an input though no gradient depends on it.
    const dnnl::memory shift = p.Internal(param);
    std::memset(shift.get_data_handle(), 0, param.get_size());
    p.Add(dnnl::layer_normalization_backward(pd), {{DNNL_ARG_DIFF_DST, p.External(0, data)},
                                                   {DNNL_ARG_SRC, p.External(1, data)},
                                                   {DNNL_ARG_SCALE, p.External(2, param)},
                                                   {DNNL_ARG_SHIFT, shift},
                                                   {DNNL_ARG_MEAN, p.External(3, stat)},
                                                   {DNNL_ARG_VARIANCE, p.External(4, stat)},
                                                   {DNNL_ARG_DIFF_SRC, p.External(5, data)},
                                                   {DNNL_ARG_DIFF_SCALE, p.External(6, param)},
                                                   {DNNL_ARG_DIFF_SHIFT, p.External(7, param)}});
  });
}

absl::Status LayerNormInto(absl::Span<const Tensor> in, const Attrs& attrs,
                           absl::Span<const Tensor> out) {  // x, w, b -> y, mean, var
  const double eps = attrs.Float("eps");
  const LnDims ln = LayerNormDims(in[0].shape(), attrs.Int("axis"));
  VisitFloatDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    T *x = DenseData<T>(in[0], 0), *w = DenseData<T>(in[1], 1), *b = DenseData<T>(in[2], 2);
    if (UseOneDnn(in[0])) {
      LayerNormPlan(ln, eps).Run(
          {x, w, b, out[0].raw_data(), out[1].raw_data(), out[2].raw_data()});
    } else {
      LayerNormRef(x, w, b, ln, eps, out[0].data<T>(), out[1].data<T>(), out[2].data<T>());
    }
  });
  return absl::OkStatus();
}

// grad, x, w, mean, var -> dx, dw, db
absl::Status LayerNormBackwardInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                   absl::Span<const Tensor> out) {
  const double eps = attrs.Float("eps");
  const LnDims ln = LayerNormDims(in[1].shape(), attrs.Int("axis"));
  VisitFloatDType(in[1].dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* arg[kMaxInputs];
    for (int i = 0; i < kMaxInputs; ++i) arg[i] = DenseData<T>(in[i], i);
    if (UseOneDnn(in[1])) {
      LayerNormBackwardPlan(ln, eps).Run({arg[0], arg[1], arg[2], arg[3], arg[4], out[0].raw_data(),
                                          out[1].raw_data(), out[2].raw_data()});
      return;
    }
    FillZero(out[1]);  // dw and db accumulate over the rows
    FillZero(out[2]);
    LayerNormBackwardRef(arg[0], arg[1], arg[2], arg[3], arg[4], ln, eps, out[0].data<T>(),
                         out[1].data<T>(), out[2].data<T>());
  });
  return absl::OkStatus();
}

}  // namespace

void RegisterNormKernels(KernelTable& t) {
  BindInto<&BatchNormInto>(t, OpKind::kBatchNorm);
  BindInto<&BatchNormInferenceInto>(t, OpKind::kBatchNormInference);
  BindInto<&BatchNormBackwardInto>(t, OpKind::kBatchNormBackward);
  BindInto<&LayerNormInto>(t, OpKind::kLayerNorm);
  BindInto<&LayerNormBackwardInto>(t, OpKind::kLayerNormBackward);
  RegisterEmbeddingDropoutKernels(t);
}

}  // namespace tc::kernels
