// Eager kernels: batch_norm and layer_norm, with their backwards (embedding and
// dropout, registered from here, are in embedding_dropout.cc).
//
// Normalisation sees its input as a 3-D [N, C, S] (batch norm: statistics per
// channel C over N and S = H*W*...) or a 2-D [R, D] (layer norm: statistics per
// row R over the D = prod(x.shape[axis:]) normalised elements) contiguous
// array. Batch norm runs on vectorised loops here for every dtype. Layer norm
// in f32 runs on oneDNN's layer normalisation primitives; in f64, and on
// tensors with no elements (where only the conventions for empty statistics
// matter), on the reference loops here.
#include <cmath>
#include <unordered_map>

#include "Eigen/Core"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/onednn.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"

namespace tc::kernels {
namespace {

// Weight and bias as separate scale and shift arrays, each [C] or [D].
dnnl::normalization_flags ScaleShift() {
  return dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
}

// `t` itself when contiguous, else a contiguous copy. Copies with CopyStrided
// rather than Tensor::contiguous(), which would dispatch a cast op from inside
// a kernel and show it to the installed hooks (tape, tracer).
Tensor Dense(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::Uninitialized(t.shape(), t.dtype());
  CopyStrided(t, out);
  return out;
}

TensorList EmptyOutputs(absl::Span<const TensorType> out_types) {
  TensorList out;
  for (const TensorType& t : out_types) out.push_back(Tensor::Empty(t.shape, t.dtype));
  return out;
}

// For kernels that write every output element.
TensorList UninitializedOutputs(absl::Span<const TensorType> out_types) {
  TensorList out;
  for (const TensorType& t : out_types) out.push_back(Tensor::Uninitialized(t.shape, t.dtype));
  return out;
}

bool UseOneDnn(const Tensor& x) { return OneDnnSupports(x.dtype()) && x.numel() > 0; }

// A dense f32 descriptor of `dims`, for contiguous tensors seen with other dims.
dnnl::memory::desc DenseDesc(const dnnl::memory::dims& dims) {
  return PlainDesc(DType::kF32, dims, ContiguousStrides(dims));
}

void Execute(const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
  p.execute(Stream(), args);
  Stream().wait();
}

// ---- batch norm

struct BnDims {
  int64_t n, c, s;
  int64_t count() const { return n * s; }  // values per channel
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

absl::StatusOr<TensorList> BatchNormKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                           absl::Span<const TensorType> out_types) {
  const double eps = attrs.Float("eps");
  const Tensor x = Dense(in[0]), w = Dense(in[1]), b = Dense(in[2]);
  TensorList out = UninitializedOutputs(out_types);  // y, mean, var
  const BnDims d = BatchNormDims(x.shape());
  VisitFloatDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* mean = out[1].data<T>();
    T* var = out[2].data<T>();
    BatchNormStats(x.data<T>(), d, mean, var);
    BatchNormApply(x.data<T>(), w.data<T>(), b.data<T>(), mean, var, d, eps, out[0].data<T>());
  });
  return out;
}

absl::StatusOr<TensorList> BatchNormInferenceKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                                    absl::Span<const TensorType> out_types) {
  const double eps = attrs.Float("eps");
  const Tensor x = Dense(in[0]), w = Dense(in[1]), b = Dense(in[2]), mean = Dense(in[3]),
               var = Dense(in[4]);
  TensorList out = UninitializedOutputs(out_types);
  const BnDims d = BatchNormDims(x.shape());
  VisitFloatDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    BatchNormApply(x.data<T>(), w.data<T>(), b.data<T>(), mean.data<T>(), var.data<T>(), d, eps,
                   out[0].data<T>());
  });
  return out;
}

// Runs oneDNN's layer normalisation backward on prepared descriptors:
// inputs grad, x, w, mean, var; outputs dx, dw, db.
template <typename Backward>
void NormBackwardOneDnn(const typename Backward::primitive_desc& pd, const dnnl::memory::desc& data,
                        const dnnl::memory::desc& param, const dnnl::memory::desc& stat,
                        absl::Span<const Tensor> in, const TensorList& out) {
  // oneDNN 2.6 demands the shift as an input though no gradient depends on it.
  const Tensor shift = Tensor::Empty(out[2].shape(), DType::kF32);
  Execute(Backward(pd), {{DNNL_ARG_DIFF_DST, Memory(data, in[0])},
                         {DNNL_ARG_SRC, Memory(data, in[1])},
                         {DNNL_ARG_SCALE, Memory(param, in[2])},
                         {DNNL_ARG_SHIFT, Memory(param, shift)},
                         {DNNL_ARG_MEAN, Memory(stat, in[3])},
                         {DNNL_ARG_VARIANCE, Memory(stat, in[4])},
                         {DNNL_ARG_DIFF_SRC, Memory(data, out[0])},
                         {DNNL_ARG_DIFF_SCALE, Memory(param, out[1])},
                         {DNNL_ARG_DIFF_SHIFT, Memory(param, out[2])}});
}

std::vector<Tensor> DenseAll(absl::Span<const Tensor> in) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) out.push_back(Dense(t));
  return out;
}

absl::StatusOr<TensorList> BatchNormBackwardKernel(absl::Span<const Tensor> inputs,
                                                   const Attrs& attrs,
                                                   absl::Span<const TensorType> out_types) {
  const double eps = attrs.Float("eps");
  const std::vector<Tensor> in = DenseAll(inputs);   // grad, x, w, mean, var
  TensorList out = UninitializedOutputs(out_types);  // dx, dw, db
  const BnDims d = BatchNormDims(in[1].shape());
  VisitFloatDType(in[1].dtype(), [&](auto zero) {
    using T = decltype(zero);
    BatchNormBackward(in[0].data<T>(), in[1].data<T>(), in[2].data<T>(), in[3].data<T>(),
                      in[4].data<T>(), d, eps, out[0].data<T>(), out[1].data<T>(),
                      out[2].data<T>());
  });
  return out;
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

absl::StatusOr<TensorList> LayerNormKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                           absl::Span<const TensorType> out_types) {
  const double eps = attrs.Float("eps");
  const Tensor x = Dense(in[0]), w = Dense(in[1]), b = Dense(in[2]);
  TensorList out = UninitializedOutputs(out_types);  // y, mean, var
  const LnDims ln = LayerNormDims(x.shape(), attrs.Int("axis"));
  if (UseOneDnn(x)) {
    const dnnl::memory::desc data = DenseDesc({ln.r, ln.d}), param = DenseDesc({ln.d}),
                             stat = DenseDesc({ln.r});
    dnnl::layer_normalization_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_training, data, stat, static_cast<float>(eps), ScaleShift()},
        Engine());
    Execute(dnnl::layer_normalization_forward(pd), {{DNNL_ARG_SRC, Memory(data, x)},
                                                    {DNNL_ARG_SCALE, Memory(param, w)},
                                                    {DNNL_ARG_SHIFT, Memory(param, b)},
                                                    {DNNL_ARG_DST, Memory(data, out[0])},
                                                    {DNNL_ARG_MEAN, Memory(stat, out[1])},
                                                    {DNNL_ARG_VARIANCE, Memory(stat, out[2])}});
    return out;
  }
  VisitFloatDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    LayerNormRef(x.data<T>(), w.data<T>(), b.data<T>(), ln, eps, out[0].data<T>(), out[1].data<T>(),
                 out[2].data<T>());
  });
  return out;
}

absl::StatusOr<TensorList> LayerNormBackwardKernel(absl::Span<const Tensor> inputs,
                                                   const Attrs& attrs,
                                                   absl::Span<const TensorType> out_types) {
  const double eps = attrs.Float("eps");
  const std::vector<Tensor> in = DenseAll(inputs);  // grad, x, w, mean, var
  TensorList out = EmptyOutputs(out_types);         // dx, dw, db
  const LnDims ln = LayerNormDims(in[1].shape(), attrs.Int("axis"));
  if (UseOneDnn(in[1])) {
    const dnnl::memory::desc data = DenseDesc({ln.r, ln.d}), param = DenseDesc({ln.d}),
                             stat = DenseDesc({ln.r});
    const float feps = static_cast<float>(eps);
    dnnl::layer_normalization_forward::primitive_desc hint(
        {dnnl::prop_kind::forward_training, data, stat, feps, ScaleShift()}, Engine());
    dnnl::layer_normalization_backward::primitive_desc pd(
        {dnnl::prop_kind::backward, data, data, stat, feps, ScaleShift()}, Engine(), hint);
    NormBackwardOneDnn<dnnl::layer_normalization_backward>(pd, data, param, stat, in, out);
    return out;
  }
  VisitFloatDType(in[1].dtype(), [&](auto zero) {
    using T = decltype(zero);
    LayerNormBackwardRef(in[0].data<T>(), in[1].data<T>(), in[2].data<T>(), in[3].data<T>(),
                         in[4].data<T>(), ln, eps, out[0].data<T>(), out[1].data<T>(),
                         out[2].data<T>());
  });
  return out;
}

}  // namespace

void RegisterNormKernels(KernelTable& t) {
  auto set = [&](OpKind op, KernelFn fn) { t.eager[static_cast<int>(op)] = fn; };
  set(OpKind::kBatchNorm, &BatchNormKernel);
  set(OpKind::kBatchNormInference, &BatchNormInferenceKernel);
  set(OpKind::kBatchNormBackward, &BatchNormBackwardKernel);
  set(OpKind::kLayerNorm, &LayerNormKernel);
  set(OpKind::kLayerNormBackward, &LayerNormBackwardKernel);
  RegisterEmbeddingDropoutKernels(t);
}

}  // namespace tc::kernels
