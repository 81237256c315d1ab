// Out-variant kernels of sdpa and sdpa_backward (graph/ops/attention.cc), as
// flash attention computes them: a block of query rows is scored against a
// block of keys at a time (two small products into a per-thread scratch
// block that stays in cache), softmax runs online across the key blocks
// (each row's running max and sum rescale what was accumulated), and the
// [S, T] probabilities are never written to memory. The backward recomputes
// each block's probabilities from the forward's per-row log-sum-exp.
//
// f32 products run on oneDNN's sgemm (its JIT kernels for this CPU, one
// thread inside the parallel loops here); f64 on Eigen. The forward splits
// (batch, query block) pairs over the intra-op threads; the backward splits
// the batch, each thread owning whole dk and dv slices. Inputs may be
// strided views (the heads of a projection, [B, S, H, D] permuted to
// [B, H, S, D]) as long as their last dim is contiguous; others are copied.
// Outputs are dense. After a first call nothing is allocated in f32 (Eigen's
// f64 products may allocate their blocking space).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "Eigen/Core"
#include "absl/container/inlined_vector.h"
#include "base/check.h"
#include "oneapi/dnnl/dnnl.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"
#include "runtime/kernels/vector_math.h"

namespace tc::kernels {
namespace {

constexpr int64_t kQueryBlock = 128;
constexpr int64_t kKeyBlock = 256;
// Work (batch x S x T) below which everything runs on the calling thread.
constexpr int64_t kParallelScores = 32 * 1024;

// C [m, n] = alpha op(A) op(B) + beta C, row-major with leading dims; op
// transposes when asked. beta 0 never reads C.
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const dnnl_status_t status =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  // Fails only for arguments this file never passes.
  TC_CHECK(status == dnnl_success, "attention: dnnl_sgemm failed (", static_cast<int>(status), ")");
}

void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using In = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;
  if (m == 0 || n == 0) return;
  const In a_stored(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  const In b_stored(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  Eigen::Map<Matrix, 0, Eigen::OuterStride<>> out(c, m, n, Eigen::OuterStride<>(ldc));
  auto accumulate = [&](const auto& a_op, const auto& b_op) {
    if (beta == 0) {
      out.noalias() = alpha * a_op * b_op;
    } else {
      out *= beta;
      out.noalias() += alpha * a_op * b_op;
    }
  };
  if (ta && tb) {
    accumulate(a_stored.transpose(), b_stored.transpose());
  } else if (ta) {
    accumulate(a_stored.transpose(), b_stored);
  } else if (tb) {
    accumulate(a_stored, b_stored.transpose());
  } else {
    accumulate(a_stored, b_stored);
  }
}

float Exp(float x) { return VectorExp(x); }
double Exp(double x) { return std::exp(x); }

// This thread's scratch buffer `slot`, of at least `size` elements.
// Slots kCopy0 + i hold dense copies of input i where it needs one.
enum Slot { kScores, kGrads, kRowStats, kDelta, kCopy0, kNumSlots = kCopy0 + 6 };
template <typename T>
T* Scratch(int slot, int64_t size) {
  thread_local std::vector<T> buffers[kNumSlots];
  std::vector<T>& buffer = buffers[slot];
  if (static_cast<int64_t>(buffer.size()) < size) buffer.resize(size);
  return buffer.data();
}

// Dims and strides of a call's operands, kept inline: a compiled step's
// kernels allocate nothing.
using Dims = absl::InlinedVector<int64_t, 8>;

// The offset of batch element `b` (row-major over `shape`) by `strides`.
int64_t BatchOffset(int64_t b, const Dims& shape, const Dims& strides) {
  int64_t offset = 0;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    offset += (b % shape[d]) * strides[d];
    b /= shape[d];
  }
  return offset;
}

// One operand seen as a batch of row-major matrices: element (b, i, j) at
// data[BatchOffset(b) + i * ld + j].
template <typename T>
struct Matrices {
  const T* data;
  int64_t ld;
  Dims batch_shape, batch_strides;

  const T* at(int64_t b) const { return data + BatchOffset(b, batch_shape, batch_strides); }
};

// Input `slot`, `t`, row-major: its own data when contiguous, else a copy
// in this thread's scratch.
template <typename T>
const T* DenseData(const Tensor& t, int slot) {
  if (t.is_contiguous()) return t.data<T>();
  T* copy = Scratch<T>(kCopy0 + slot, t.numel());
  T* next = copy;
  const T* src = t.data<T>();
  ForEachOffset<1>(t.shape(), {t.strides()}, [&](int64_t offset) { *next++ = src[offset]; });
  return copy;
}

// Input `slot`, `t`, as matrices over its last two dims: its own data when
// the last dim is contiguous, else a dense copy.
template <typename T>
Matrices<T> AsMatrices(const Tensor& t, int slot) {
  const int64_t rank = t.dim();
  Matrices<T> m;
  m.batch_shape.assign(t.shape().begin(), t.shape().end() - 2);
  const int64_t rows = t.size(rank - 2), cols = t.size(rank - 1);
  // A single row's stride is never used: any leading dim at least cols does.
  const int64_t ld = rows <= 1 ? std::max<int64_t>(cols, 1) : t.strides()[rank - 2];
  if ((t.strides()[rank - 1] == 1 || cols <= 1) && ld >= std::max<int64_t>(cols, 1)) {
    m.data = t.data<T>();
    m.ld = ld;
    m.batch_strides.assign(t.strides().begin(), t.strides().end() - 2);
    return m;
  }
  m.data = DenseData<T>(t, slot);
  m.ld = std::max<int64_t>(cols, 1);
  m.batch_strides.resize(rank - 2);
  int64_t stride = rows * m.ld;
  for (int64_t d = rank - 3; d >= 0; --d) {
    m.batch_strides[d] = stride;
    stride *= t.size(d);
  }
  return m;
}

// A dense output as matrices.
template <typename T>
struct OutMatrices {
  T* data;
  int64_t rows, cols;
  T* at(int64_t b) const { return data + b * rows * cols; }
};

// The mask seen from the scores [batch..., S, T]: entry (b, i, j) at
// offset(b) + i * row + j * col, 0 strides where it broadcasts.
struct MaskView {
  const void* data = nullptr;
  bool is_bool = false;
  Dims batch_shape, batch_strides;
  int64_t row = 0, col = 0;
};

MaskView ViewMask(const Tensor& mask, const Dims& scores) {
  MaskView v;
  v.data = mask.raw_data();
  v.is_bool = mask.dtype() == DType::kBool;
  const auto strides = BroadcastStrides(mask, scores);
  const size_t rank = scores.size();
  v.batch_shape.assign(scores.begin(), scores.end() - 2);
  v.batch_strides.assign(strides.begin(), strides.end() - 2);
  v.row = strides[rank - 2];
  v.col = strides[rank - 1];
  return v;
}

// What one call computes over: sizes, scale, masks.
template <typename T>
struct Problem {
  int64_t batch, s, t, d, dv;
  T scale;
  bool causal;
  const MaskView* mask;  // null: none

  // Scores of query rows [i0, i0 + rows) against keys [j0, j0 + cols) of
  // batch b: s = scale q k^T, masked, into `out` [rows, cols].
  void Score(const Matrices<T>& q, const Matrices<T>& k, int64_t b, int64_t i0, int64_t rows,
             int64_t j0, int64_t cols, T* out) const {
    Gemm(false, true, rows, cols, d, scale, q.at(b) + i0 * q.ld, q.ld, k.at(b) + j0 * k.ld, k.ld,
         T(0), out, cols);
    constexpr T kMinusInf = -std::numeric_limits<T>::infinity();
    if (mask != nullptr) {
      const int64_t base = BatchOffset(b, mask->batch_shape, mask->batch_strides);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t row = base + (i0 + r) * mask->row + j0 * mask->col;
        T* sr = out + r * cols;
        if (mask->is_bool) {
          const bool* m = static_cast<const bool*>(mask->data) + row;
          for (int64_t c = 0; c < cols; ++c) sr[c] = m[c * mask->col] ? sr[c] : kMinusInf;
        } else {
          const T* m = static_cast<const T*>(mask->data) + row;
          for (int64_t c = 0; c < cols; ++c) sr[c] += m[c * mask->col];
        }
      }
    }
    if (causal) {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t first_future = std::max<int64_t>(i0 + r + 1 - j0, 0);
        for (int64_t c = first_future; c < cols; ++c) out[r * cols + c] = kMinusInf;
      }
    }
  }
  // Whether every key of [j0, ...) is in the future of every query of [i0, i0 + rows).
  bool AllFuture(int64_t i0, int64_t rows, int64_t j0) const {
    return causal && j0 > i0 + rows - 1;
  }
};

// Forward of query rows [i0, i0 + rows) of batch b: out rows and lse.
template <typename T>
void ForwardBlock(const Problem<T>& p, const Matrices<T>& q, const Matrices<T>& k,
                  const Matrices<T>& v, int64_t b, int64_t i0, int64_t rows,
                  const OutMatrices<T>& out, T* lse) {
  constexpr T kMinusInf = -std::numeric_limits<T>::infinity();
  const int64_t key_block = std::min(p.t, kKeyBlock);
  T* scores = Scratch<T>(kScores, rows * key_block);
  T* stats = Scratch<T>(kRowStats, 2 * rows);
  T *max = stats, *sum = stats + rows;
  std::fill(max, max + rows, kMinusInf);
  std::fill(sum, sum + rows, T(0));
  T* o = out.at(b) + i0 * p.dv;
  std::fill(o, o + rows * p.dv, T(0));
  for (int64_t j0 = 0; j0 < p.t && !p.AllFuture(i0, rows, j0); j0 += key_block) {
    const int64_t cols = std::min(key_block, p.t - j0);
    p.Score(q, k, b, i0, rows, j0, cols, scores);
    for (int64_t r = 0; r < rows; ++r) {
      T* sr = scores + r * cols;
      // Eigen's reductions and a plain loop of VectorExp: all vectorised.
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> row(sr, cols);
      const T new_max = std::max(max[r], row.maxCoeff());
      if (new_max == kMinusInf) {  // every key so far masked: nothing to add
        row.setZero();
        continue;
      }
      for (int64_t c = 0; c < cols; ++c) sr[c] = Exp(sr[c] - new_max);
      const T row_sum = row.sum();
      if (max[r] != new_max && sum[r] != 0) {
        const T rescale = Exp(max[r] - new_max);
        for (int64_t c = 0; c < p.dv; ++c) o[r * p.dv + c] *= rescale;
        sum[r] *= rescale;
      }
      sum[r] += row_sum;
      max[r] = new_max;
    }
    Gemm(false, false, rows, p.dv, cols, T(1), scores, cols, v.at(b) + j0 * v.ld, v.ld, T(1), o,
         p.dv);
  }
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (int64_t r = 0; r < rows; ++r) {
    // A row whose keys are all masked is NaN, as softmax over -inf gives.
    const T inv = sum[r] > 0 ? T(1) / sum[r] : nan;
    for (int64_t c = 0; c < p.dv; ++c) o[r * p.dv + c] *= inv;
    lse[r] = sum[r] > 0 ? max[r] + std::log(sum[r]) : nan;
  }
}

// Backward of batch b: dq, dk, dv rows of b, from grad, out and lse.
template <typename T>
void BackwardBatch(const Problem<T>& p, const Matrices<T>& g, const Matrices<T>& q,
                   const Matrices<T>& k, const Matrices<T>& v, const Matrices<T>& o, const T* lse,
                   int64_t b, const OutMatrices<T>& dq, const OutMatrices<T>& dk,
                   const OutMatrices<T>& dv) {
  const int64_t key_block = std::min(p.t, kKeyBlock);
  const int64_t query_block = std::min(p.s, kQueryBlock);
  T* probs = Scratch<T>(kScores, query_block * key_block);
  T* dprobs = Scratch<T>(kGrads, query_block * key_block);
  T* delta = Scratch<T>(kDelta, p.s);
  const T *gb = g.at(b), *ob = o.at(b), *qb = q.at(b), *kb = k.at(b), *vb = v.at(b);
  T *dqb = dq.at(b), *dkb = dk.at(b), *dvb = dv.at(b);
  std::fill(dqb, dqb + p.s * p.d, T(0));
  std::fill(dkb, dkb + p.t * p.d, T(0));
  std::fill(dvb, dvb + p.t * p.dv, T(0));
  // delta_i = sum_c grad_ic out_ic: the softmax backward's row term.
  for (int64_t i = 0; i < p.s; ++i) {
    T acc = 0;
    for (int64_t c = 0; c < p.dv; ++c) acc += gb[i * g.ld + c] * ob[i * o.ld + c];
    delta[i] = acc;
  }
  for (int64_t j0 = 0; j0 < p.t; j0 += key_block) {
    const int64_t cols = std::min(key_block, p.t - j0);
    for (int64_t i0 = 0; i0 < p.s; i0 += query_block) {
      const int64_t rows = std::min(query_block, p.s - i0);
      if (p.AllFuture(i0, rows, j0)) continue;
      p.Score(q, k, b, i0, rows, j0, cols, probs);
      for (int64_t r = 0; r < rows; ++r) {
        const T row_lse = lse[i0 + r];
        for (int64_t c = 0; c < cols; ++c) probs[r * cols + c] = Exp(probs[r * cols + c] - row_lse);
      }
      // dv_j += p^T grad_i; dp = grad_i v_j^T
      Gemm(true, false, cols, p.dv, rows, T(1), probs, cols, gb + i0 * g.ld, g.ld, T(1),
           dvb + j0 * p.dv, p.dv);
      Gemm(false, true, rows, cols, p.dv, T(1), gb + i0 * g.ld, g.ld, vb + j0 * v.ld, v.ld, T(0),
           dprobs, cols);
      // ds = p (dp - delta), into dprobs
      for (int64_t r = 0; r < rows; ++r) {
        const T dr = delta[i0 + r];
        for (int64_t c = 0; c < cols; ++c) {
          dprobs[r * cols + c] = probs[r * cols + c] * (dprobs[r * cols + c] - dr);
        }
      }
      // dq_i += scale ds k_j; dk_j += scale ds^T q_i
      Gemm(false, false, rows, p.d, cols, p.scale, dprobs, cols, kb + j0 * k.ld, k.ld, T(1),
           dqb + i0 * p.d, p.d);
      Gemm(true, false, cols, p.d, rows, p.scale, dprobs, cols, qb + i0 * q.ld, q.ld, T(1),
           dkb + j0 * p.d, p.d);
    }
  }
}

absl::Status RequireDense(absl::Span<const Tensor> out) {
  for (const Tensor& t : out) {
    if (!t.is_contiguous()) return absl::InternalError("sdpa: outputs must be dense");
  }
  return absl::OkStatus();
}

absl::Status RejectBf16(const Tensor& q, absl::string_view op) {
  if (q.dtype() != DType::kBF16) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": no bf16 kernel (attention runs in f32 or f64)"));
}

template <typename T>
Problem<T> ProblemOf(const Tensor& q, const Tensor& k, const Tensor& v, const Attrs& attrs,
                     const MaskView* mask) {
  const int64_t rank = q.dim();
  Problem<T> p;
  p.batch = NumElements(absl::MakeConstSpan(q.shape()).subspan(0, rank - 2));
  p.s = q.size(rank - 2);
  p.t = k.size(rank - 2);
  p.d = q.size(rank - 1);
  p.dv = v.size(rank - 1);
  p.scale = static_cast<T>(attrs.Float("scale"));
  p.causal = attrs.Bool("causal");
  p.mask = mask;
  return p;
}

Dims ScoresShape(const Tensor& q, const Tensor& k) {
  Dims scores(q.shape().begin(), q.shape().end());
  scores.back() = k.size(k.dim() - 2);
  return scores;
}

// q, k, v[, mask] -> out, lse
absl::Status SdpaInto(absl::Span<const Tensor> in, const Attrs& attrs,
                      absl::Span<const Tensor> out) {
  TC_RETURN_IF_ERROR(RejectBf16(in[0], "sdpa"));
  TC_RETURN_IF_ERROR(RequireDense(out));
  MaskView mask;
  if (in.size() == 4) mask = ViewMask(in[3], ScoresShape(in[0], in[1]));
  VisitFloatDType(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    const Problem<T> p = ProblemOf<T>(in[0], in[1], in[2], attrs, in.size() == 4 ? &mask : nullptr);
    const Matrices<T> q = AsMatrices<T>(in[0], 0), k = AsMatrices<T>(in[1], 1),
                      v = AsMatrices<T>(in[2], 2);
    const OutMatrices<T> o = {out[0].data<T>(), p.s, p.dv};
    T* lse = out[1].data<T>();
    const int64_t blocks = (p.s + kQueryBlock - 1) / kQueryBlock;
    const int64_t items = p.batch * blocks;
#pragma omp parallel for schedule(static) if (p.batch * p.s * p.t >= kParallelScores && items > 1)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t b = item / blocks, i0 = (item % blocks) * kQueryBlock;
      const int64_t rows = std::min(kQueryBlock, p.s - i0);
      ForwardBlock(p, q, k, v, b, i0, rows, o, lse + b * p.s + i0);
    }
  });
  return absl::OkStatus();
}

// grad, q, k, v, out, lse[, mask] -> dq, dk, dv
absl::Status SdpaBackwardInto(absl::Span<const Tensor> in, const Attrs& attrs,
                              absl::Span<const Tensor> out) {
  TC_RETURN_IF_ERROR(RejectBf16(in[1], "sdpa_backward"));
  TC_RETURN_IF_ERROR(RequireDense(out));
  MaskView mask;
  if (in.size() == 7) mask = ViewMask(in[6], ScoresShape(in[1], in[2]));
  VisitFloatDType(in[1].dtype(), [&](auto zero) {
    using T = decltype(zero);
    const Problem<T> p = ProblemOf<T>(in[1], in[2], in[3], attrs, in.size() == 7 ? &mask : nullptr);
    const Matrices<T> g = AsMatrices<T>(in[0], 0), q = AsMatrices<T>(in[1], 1),
                      k = AsMatrices<T>(in[2], 2), v = AsMatrices<T>(in[3], 3),
                      o = AsMatrices<T>(in[4], 4);
    const T* lse = DenseData<T>(in[5], 5);
    const OutMatrices<T> dq = {out[0].data<T>(), p.s, p.d}, dk = {out[1].data<T>(), p.t, p.d},
                         dv = {out[2].data<T>(), p.t, p.dv};
#pragma omp parallel for schedule(static) if (p.batch * p.s * p.t >= kParallelScores && p.batch > 1)
    for (int64_t b = 0; b < p.batch; ++b) {
      BackwardBatch(p, g, q, k, v, o, lse + b * p.s, b, dq, dk, dv);
    }
  });
  return absl::OkStatus();
}

}  // namespace

void RegisterAttentionKernels(KernelTable& t) {
  BindInto<&SdpaInto>(t, OpKind::kSdpa);
  BindInto<&SdpaBackwardInto>(t, OpKind::kSdpaBackward);
}

}  // namespace tc::kernels
