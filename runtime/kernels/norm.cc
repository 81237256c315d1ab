// Out-variant kernels: batch_norm and layer_norm, with their backwards
// (embedding and dropout, registered from here, are in embedding_dropout.cc).
//
// Normalisation sees its input as a 3-D [N, C, S] (batch norm: statistics per
// channel C over N and S = H*W*...) or a 2-D [R, D] (layer norm: statistics per
// row R over the D = prod(x.shape[axis:]) normalised elements) row-major
// array. Batch norm runs on vectorised loops here for every dtype. Layer norm
// in f32 runs on oneDNN's layer normalisation primitives, built once per shape
// (primitive_cache.h); in f64, and on tensors with no elements (where only the
// conventions for empty statistics matter), on the reference loops here.
//
// Layouts: inputs may have any strides; an output is dense, row-major or (for
// batch norm's y and dx, rank 4) channels-last. When x, that output and (for
// the backward) the grad are all channels-last, batch norm runs on the data
// as a row-major [N*H*W, C] array, vectorised across channels; otherwise
// strided inputs are copied row-major and a channels-last output is computed
// row-major, then copied out through its strides.
//
// After a first call with the same shapes nothing is allocated: outputs are
// the caller's, the copies and partial sums live in reused per-thread buffers.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <initializer_list>
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

// This thread's scratch buffers: one per input slot (0 .. kMaxInputs - 1),
// then these.
enum ScratchSlot { kOutputSlot = kMaxInputs, kPartialSlot, kChannelSlot, kNumScratchSlots };

// Scratch buffer `slot` of this thread, of at least `size` elements: grown
// when too small and reused by later calls.
template <typename T>
T* Scratch(int slot, int64_t size) {
  thread_local std::array<std::vector<T>, kNumScratchSlots> buffers;
  std::vector<T>& buffer = buffers[slot];
  if (static_cast<int64_t>(buffer.size()) < size) buffer.resize(size);
  return buffer.data();
}

// The elements of input `slot`, `t`, as a row-major array: t's own data when
// t is contiguous, else a copy in that slot's scratch buffer. Copies here
// rather than with Tensor::contiguous(), which would allocate and dispatch a
// cast op from inside a kernel, showing it to the installed hooks.
template <typename T>
T* DenseData(const Tensor& t, int slot) {
  if (t.is_contiguous()) return t.data<T>();
  T* dst = Scratch<T>(slot, t.numel());
  T* next = dst;
  const T* src = t.data<T>();
  ForEachOffset<1>(t.shape(), {t.strides()}, [&](int64_t offset) { *next++ = src[offset]; });
  return dst;
}

// Where a kernel writes output `t` as a row-major array: t's own data when t
// is contiguous, else the output scratch buffer, which CopyOut then copies
// into t.
template <typename T>
T* RowMajorOut(const Tensor& t) {
  return t.is_contiguous() ? t.data<T>() : Scratch<T>(kOutputSlot, t.numel());
}

template <typename T>
void CopyOut(const T* row_major, const Tensor& t) {
  if (t.is_contiguous()) return;
  T* dst = t.data<T>();
  ForEachOffset<1>(t.shape(), {t.strides()}, [&](int64_t offset) { dst[offset] = *row_major++; });
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

// Batch norm on row-major data runs on the loops below for every dtype: each
// (sample, channel) plane is a contiguous row of S elements, which Eigen
// reduces and maps with vector instructions. (oneDNN's batch norm for plain
// NCHW data is a scalar loop several times slower.)
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

// y = (x - mean) * invstd * w + b, as x * scale + shift; then relu(y) when
// `relu` (the relu post-op: y > 0 ? y : +0, as math::Relu).
template <typename T>
void BatchNormApply(const T* x, const T* w, const T* b, const T* mean, const T* var,
                    const BnDims& d, double eps, bool relu, T* y) {
#pragma omp parallel for if (d.parallel())
  for (int64_t ch = 0; ch < d.c; ++ch) {
    const T scale = w[ch] / std::sqrt(var[ch] + static_cast<T>(eps));
    const T shift = b[ch] - mean[ch] * scale;
    for (int64_t i = 0; i < d.n; ++i) {
      const int64_t k = d.at(i, ch, 0);
      MutableRow<T> out(y + k, d.s);
      out = Row<T>(x + k, d.s) * scale + shift;
      if (relu) out = (out > T(0)).select(out, T(0));
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

// ---- batch norm on channels-last data
//
// A channels-last [N, C, H, W] tensor is a row-major [M, C] array, M = N*H*W.
// Sums take its rows a group at a time, as one vector of group * C elements
// (long enough to vectorise well whatever C is) added into as many
// accumulators, folded per channel at the end. The rows are split into a
// fixed number of chunks, each with its own accumulators, added in chunk
// order: the same roundings on any number of threads. The loops carry
// `omp simd`: GCC vectorises them at -O2, which this library builds with,
// only when told to.

constexpr int64_t kRowChunks = 64;
constexpr int64_t kGroupElements = 256;

struct RowDims {
  int64_t m, c;
  int64_t group() const { return std::max<int64_t>(1, kGroupElements / c); }  // rows
  int64_t width() const { return group() * c; }                               // elements
  // Whole groups, so that only the last chunk ends with single rows.
  int64_t rows_per_chunk() const {
    const int64_t rows = (m + kRowChunks - 1) / kRowChunks;
    return (rows + group() - 1) / group() * group();
  }
  int64_t chunks() const { return (m + rows_per_chunk() - 1) / rows_per_chunk(); }
  bool parallel() const { return m * c >= kParallelElements; }
};

// Whether batch norm runs on the row loops: every operand channels-last, not empty.
bool AllChannelsLast(std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands) {
    if (t->numel() == 0 || !t->is_channels_last()) return false;
  }
  return true;
}

RowDims ChannelsLastRows(const Shape& x) { return {NumElements(x) / x[1], x[1]}; }

// sums[a * C + ch] = the sum over all rows of accumulator a's terms for
// channel ch, where add(r, len, acc) adds the terms of the `len` elements
// from row r on (a group of rows, or one) to acc[a * width + i], i < len.
template <typename T, typename AddRows>
void ChunkedChannelSums(const RowDims& d, int64_t accumulators, T* sums, AddRows add) {
  const int64_t width = d.width(), size = accumulators * width, rows = d.rows_per_chunk();
  T* partial = Scratch<T>(kPartialSlot, d.chunks() * size);
#pragma omp parallel for if (d.parallel())
  for (int64_t chunk = 0; chunk < d.chunks(); ++chunk) {
    T* acc = partial + chunk * size;
    std::fill(acc, acc + size, T(0));
    const int64_t end = std::min(d.m, (chunk + 1) * rows);
    int64_t r = chunk * rows;
    for (; r + d.group() <= end; r += d.group()) add(r, width, acc);
    for (; r < end; ++r) add(r, d.c, acc);
  }
  std::fill(sums, sums + accumulators * d.c, T(0));
  for (int64_t chunk = 0; chunk < d.chunks(); ++chunk) {
    for (int64_t a = 0; a < accumulators; ++a) {
      for (int64_t j = 0; j < d.group(); ++j) {
        const T* acc = partial + chunk * size + a * width + j * d.c;
        for (int64_t ch = 0; ch < d.c; ++ch) sums[a * d.c + ch] += acc[ch];
      }
    }
  }
}

// C per-channel `values` repeated over a group of rows, into `out`.
template <typename T>
void RepeatOverGroup(const T* values, const RowDims& d, T* out) {
  for (int64_t j = 0; j < d.group(); ++j) std::copy(values, values + d.c, out + j * d.c);
}

// Per channel, the mean and the (biased) variance of the rows. Each chunk
// of rows (64 KB at 32 channels, so it stays in cache) is read twice, for its
// own mean and then its squared deviations from it; the chunks are then
// merged in order with Chan et al.'s formula. x is read once from memory and
// the bits do not depend on the thread count.
template <typename T>
void BatchNormStatsRows(const T* x, const RowDims& d, T* mean, T* var) {
  const int64_t c = d.c, width = d.width(), group = d.group(), rows = d.rows_per_chunk();
  // Per chunk: `width` accumulators and the mean repeated over a group of
  // rows, then the chunk's C means and C squared-deviation sums.
  const int64_t size = 2 * width + 2 * c;
  T* partial = Scratch<T>(kPartialSlot, d.chunks() * size);
#pragma omp parallel for if (d.parallel())
  for (int64_t chunk = 0; chunk < d.chunks(); ++chunk) {
    T* acc = partial + chunk * size;
    T* mean_group = acc + width;
    T* chunk_mean = mean_group + width;
    T* chunk_m2 = chunk_mean + c;
    const int64_t first = chunk * rows, end = std::min(d.m, first + rows);
    // Sums `term` of every element of the chunk into chunk_sum, per channel.
    auto channel_sums = [&](T* chunk_sum, auto term) {
      std::fill(acc, acc + width, T(0));
      int64_t r = first;
      for (; r + group <= end; r += group) {
        const T* xr = x + r * c;
#pragma omp simd
        for (int64_t i = 0; i < width; ++i) acc[i] += term(xr[i], i);
      }
      for (; r < end; ++r) {
        const T* xr = x + r * c;
#pragma omp simd
        for (int64_t i = 0; i < c; ++i) acc[i] += term(xr[i], i);
      }
      std::fill(chunk_sum, chunk_sum + c, T(0));
      for (int64_t j = 0; j < group; ++j) {
        for (int64_t ch = 0; ch < c; ++ch) chunk_sum[ch] += acc[j * c + ch];
      }
    };
    const T count = static_cast<T>(end - first);
    channel_sums(chunk_mean, [](T v, int64_t) { return v; });
    for (int64_t ch = 0; ch < c; ++ch) chunk_mean[ch] /= count;
    RepeatOverGroup(chunk_mean, d, mean_group);
    channel_sums(chunk_m2,
                 [&](T v, int64_t i) { return (v - mean_group[i]) * (v - mean_group[i]); });
  }
  // Merge: after chunk k, mean and var hold the first k + 1 chunks' mean and
  // sum of squared deviations.
  T merged = 0;
  for (int64_t chunk = 0; chunk < d.chunks(); ++chunk) {
    const T* chunk_mean = partial + chunk * size + 2 * width;
    const T* chunk_m2 = chunk_mean + c;
    const T count = static_cast<T>(std::min(d.m, (chunk + 1) * rows) - chunk * rows);
    if (chunk == 0) {
      std::copy(chunk_mean, chunk_mean + c, mean);
      std::copy(chunk_m2, chunk_m2 + c, var);
    } else {
      const T total = merged + count;
      for (int64_t ch = 0; ch < c; ++ch) {
        const T delta = chunk_mean[ch] - mean[ch];
        mean[ch] += delta * (count / total);
        var[ch] += chunk_m2[ch] + delta * delta * (merged * count / total);
      }
    }
    merged += count;
  }
  for (int64_t ch = 0; ch < c; ++ch) var[ch] /= static_cast<T>(d.m);
}

// y = x * scale + shift per channel (then relu), as BatchNormApply.
template <typename T>
void BatchNormApplyRows(const T* x, const T* w, const T* b, const T* mean, const T* var,
                        const RowDims& d, double eps, bool relu, T* y) {
  const int64_t c = d.c;
  T* scale = Scratch<T>(kChannelSlot, 2 * c);
  T* shift = scale + c;
  for (int64_t ch = 0; ch < c; ++ch) {
    scale[ch] = w[ch] / std::sqrt(var[ch] + static_cast<T>(eps));
    shift[ch] = b[ch] - mean[ch] * scale[ch];
  }
#pragma omp parallel for if (d.parallel())
  for (int64_t r = 0; r < d.m; ++r) {
    const T* xr = x + r * c;
    T* yr = y + r * c;
    if (relu) {
#pragma omp simd
      for (int64_t ch = 0; ch < c; ++ch) {
        const T v = xr[ch] * scale[ch] + shift[ch];
        yr[ch] = v > T(0) ? v : T(0);
      }
    } else {
#pragma omp simd
      for (int64_t ch = 0; ch < c; ++ch) yr[ch] = xr[ch] * scale[ch] + shift[ch];
    }
  }
}

// The gradient of BatchNormBackward, with the same per-channel terms.
template <typename T>
void BatchNormBackwardRows(const T* g, const T* x, const T* w, const T* mean, const T* var,
                           const RowDims& d, double eps, T* dx, T* dw, T* db) {
  const int64_t c = d.c, width = d.width();
  const T m = static_cast<T>(d.m);
  // sum(g), sum(g * (x - mean)); then dx = g * g_scale - x * x_scale + shift.
  T* mean_group = Scratch<T>(kChannelSlot, width + 5 * c);
  T* sums = mean_group + width;
  T *g_scale = sums + 2 * c, *x_scale = g_scale + c, *shift = x_scale + c;
  RepeatOverGroup(mean, d, mean_group);
  ChunkedChannelSums(d, 2, sums, [&](int64_t r, int64_t len, T* acc) {
    const T *gr = g + r * c, *xr = x + r * c;
    T* acc_gx = acc + width;
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) {
      acc[i] += gr[i];
      acc_gx[i] += gr[i] * (xr[i] - mean_group[i]);
    }
  });
  for (int64_t ch = 0; ch < c; ++ch) {
    const T invstd = T(1) / std::sqrt(var[ch] + static_cast<T>(eps));
    const T sum_g = sums[ch], sum_gx = sums[c + ch] * invstd;
    db[ch] = sum_g;
    dw[ch] = sum_gx;
    g_scale[ch] = w[ch] * invstd;
    x_scale[ch] = g_scale[ch] * invstd * sum_gx / m;
    shift[ch] = x_scale[ch] * mean[ch] - g_scale[ch] * sum_g / m;
  }
#pragma omp parallel for if (d.parallel())
  for (int64_t r = 0; r < d.m; ++r) {
    const T *gr = g + r * c, *xr = x + r * c;
    T* dxr = dx + r * c;
#pragma omp simd
    for (int64_t ch = 0; ch < c; ++ch) {
      dxr[ch] = gr[ch] * g_scale[ch] - xr[ch] * x_scale[ch] + shift[ch];
    }
  }
}

// x, w, b -> y, mean, var; relu applied to y when `post_ops` is {relu}.
absl::Status BatchNormPostOpsInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                  absl::Span<const PostOp> post_ops, absl::Span<const Tensor> out) {
  const double eps = attrs.Float("eps");
  const bool relu = !post_ops.empty();
  const Tensor &x = in[0], &y = out[0];
  VisitFloatDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *w = DenseData<T>(in[1], 1), *b = DenseData<T>(in[2], 2);
    T *mean = out[1].data<T>(), *var = out[2].data<T>();
    if (AllChannelsLast({&x, &y})) {
      const RowDims d = ChannelsLastRows(x.shape());
      BatchNormStatsRows(x.data<T>(), d, mean, var);
      BatchNormApplyRows(x.data<T>(), w, b, mean, var, d, eps, relu, y.data<T>());
      return;
    }
    const BnDims d = BatchNormDims(x.shape());
    const T* xd = DenseData<T>(x, 0);
    T* yd = RowMajorOut<T>(y);
    BatchNormStats(xd, d, mean, var);
    BatchNormApply(xd, w, b, mean, var, d, eps, relu, yd);
    CopyOut(yd, y);
  });
  return absl::OkStatus();
}

absl::Status BatchNormInto(absl::Span<const Tensor> in, const Attrs& attrs,
                           absl::Span<const Tensor> out) {
  return BatchNormPostOpsInto(in, attrs, {}, out);
}

// x, w, b, mean, var -> y; relu applied to y when `post_ops` is {relu}.
absl::Status BatchNormInferencePostOpsInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                           absl::Span<const PostOp> post_ops,
                                           absl::Span<const Tensor> out) {
  const double eps = attrs.Float("eps");
  const bool relu = !post_ops.empty();
  const Tensor &x = in[0], &y = out[0];
  VisitFloatDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *w = DenseData<T>(in[1], 1), *b = DenseData<T>(in[2], 2);
    const T *mean = DenseData<T>(in[3], 3), *var = DenseData<T>(in[4], 4);
    if (AllChannelsLast({&x, &y})) {
      BatchNormApplyRows(x.data<T>(), w, b, mean, var, ChannelsLastRows(x.shape()), eps, relu,
                         y.data<T>());
      return;
    }
    T* yd = RowMajorOut<T>(y);
    BatchNormApply(DenseData<T>(x, 0), w, b, mean, var, BatchNormDims(x.shape()), eps, relu, yd);
    CopyOut(yd, y);
  });
  return absl::OkStatus();
}

absl::Status BatchNormInferenceInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                    absl::Span<const Tensor> out) {
  return BatchNormInferencePostOpsInto(in, attrs, {}, out);
}

// grad, x, w, mean, var -> dx, dw, db
absl::Status BatchNormBackwardInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                   absl::Span<const Tensor> out) {
  const double eps = attrs.Float("eps");
  const Tensor &g = in[0], &x = in[1], &dx = out[0];
  VisitFloatDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *w = DenseData<T>(in[2], 2), *mean = DenseData<T>(in[3], 3),
            *var = DenseData<T>(in[4], 4);
    T *dw = out[1].data<T>(), *db = out[2].data<T>();
    if (AllChannelsLast({&g, &x, &dx})) {
      BatchNormBackwardRows(g.data<T>(), x.data<T>(), w, mean, var, ChannelsLastRows(x.shape()),
                            eps, dx.data<T>(), dw, db);
      return;
    }
    T* dxd = RowMajorOut<T>(dx);
    BatchNormBackward(DenseData<T>(g, 0), DenseData<T>(x, 1), w, mean, var,
                      BatchNormDims(x.shape()), eps, dxd, dw, db);
    CopyOut(dxd, dx);
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
    ZeroDense(out[1]);  // dw and db accumulate over the rows
    ZeroDense(out[2]);
    LayerNormBackwardRef(arg[0], arg[1], arg[2], arg[3], arg[4], ln, eps, out[0].data<T>(),
                         out[1].data<T>(), out[2].data<T>());
  });
  return absl::OkStatus();
}

}  // namespace

void RegisterNormKernels(KernelTable& t) {
  BindInto<&BatchNormInto>(t, OpKind::kBatchNorm);
  BindInto<&BatchNormInferenceInto>(t, OpKind::kBatchNormInference);
  BindPostOps<&BatchNormPostOpsInto>(t, OpKind::kBatchNorm);
  BindPostOps<&BatchNormInferencePostOpsInto>(t, OpKind::kBatchNormInference);
  BindInto<&BatchNormBackwardInto>(t, OpKind::kBatchNormBackward);
  BindInto<&LayerNormInto>(t, OpKind::kLayerNorm);
  BindInto<&LayerNormBackwardInto>(t, OpKind::kLayerNormBackward);
  RegisterEmbeddingDropoutKernels(t);
}

}  // namespace tc::kernels
