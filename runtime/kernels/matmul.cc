// Eager kernels of matmul and linear (layout family). Both are one batched
// product y = a b (+ bias) over operands seen at the output's rank, read in
// place with their own strides (a transposed view is not copied), broadcast
// batch dims being size-1 dims. f32 runs on dnnl::matmul, f64 on Eigen.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "Eigen/Core"
#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/onednn.h"
#include "runtime/kernels/primitive_cache.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"

namespace tc::kernels {
namespace {

// A tensor's data seen with another shape and strides of the same elements.
// Inline vectors: aligning operands allocates nothing up to rank 6.
struct Operand {
  Tensor t;
  absl::InlinedVector<int64_t, 6> shape;
  absl::InlinedVector<int64_t, 6> strides;

  // The operand as a tensor view of its data (allocates a handle).
  Tensor View() const {
    return Tensor::View(t.storage(), t.dtype(), Shape(shape.begin(), shape.end()),
                        std::vector<int64_t>(strides.begin(), strides.end()), t.offset());
  }
};

// `t` (or its data seen with `shape` and `strides`) at `rank` dims, as a
// matmul operand: new leading dims of size 1, and batch dims (all but the last
// two) broadcast by a zero stride shrunk to size 1, which is how oneDNN and the
// batch loop below read a broadcast dim. Size-1 dims get the stride a dense
// layout would give them: oneDNN's fast paths recognise plain layouts by their
// strides.
Operand Align(const Tensor& t, absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
              int64_t rank) {
  const int64_t dim = shape.size();
  Operand op{t, absl::InlinedVector<int64_t, 6>(rank, 1), absl::InlinedVector<int64_t, 6>(rank, 1)};
  const int64_t lead = rank - dim;
  for (int64_t i = 0; i < dim; ++i) {
    const bool broadcast = i < dim - 2 && strides[i] == 0;
    op.shape[lead + i] = broadcast ? 1 : shape[i];
    op.strides[lead + i] = strides[i];
  }
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (op.shape[d] == 1) op.strides[d] = d == rank - 1 ? 1 : op.strides[d + 1] * op.shape[d + 1];
  }
  return op;
}

Operand Align(const Tensor& t, int64_t rank) { return Align(t, t.shape(), t.strides(), rank); }

// A's first `rank - 2` strides, 0 along the (size-1) dims it broadcasts.
std::vector<int64_t> BatchStrides(const Operand& a) {
  std::vector<int64_t> strides(a.strides.begin(), a.strides.end() - 2);
  for (size_t d = 0; d < strides.size(); ++d) {
    if (a.shape[d] == 1) strides[d] = 0;
  }
  return strides;
}

// A contiguous copy of `t` (or `t`), made here rather than with
// t.contiguous(), which would dispatch a cast through the hooks (tape, tracer)
// in the middle of a kernel.
Tensor Dense(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor copy = Tensor::Uninitialized(t.shape(), t.dtype());
  CopyStrided(t, copy);
  return copy;
}

// The matmul primitive of these operands, or an empty plan when oneDNN would
// pick its reference kernel for an operand without unit strides (a slice with a
// step, a broadcast row): far slower than copying the operand first.
void BuildMatmulPlan(const Operand& a, const Operand& b, const Operand* bias, const Operand& y,
                     OneDnnPlan& plan) {
  const dnnl::memory::desc a_md = PlainDesc(DType::kF32, a.shape, a.strides);
  const dnnl::memory::desc b_md = PlainDesc(DType::kF32, b.shape, b.strides);
  const dnnl::memory::desc y_md = PlainDesc(DType::kF32, y.shape, y.strides);
  dnnl::memory::desc bias_md;
  if (bias != nullptr) bias_md = PlainDesc(DType::kF32, bias->shape, bias->strides);
  const dnnl::matmul::primitive_desc pd(bias != nullptr
                                            ? dnnl::matmul::desc(a_md, b_md, bias_md, y_md)
                                            : dnnl::matmul::desc(a_md, b_md, y_md),
                                        Engine());
  if (absl::StartsWith(pd.impl_info_str(), "ref") &&
      (!IsContiguous(a.shape, a.strides) || !IsContiguous(b.shape, b.strides)))
    return;
  std::vector<std::pair<int, dnnl::memory>> args = {{DNNL_ARG_SRC, plan.External(0, a_md)},
                                                    {DNNL_ARG_WEIGHTS, plan.External(1, b_md)},
                                                    {DNNL_ARG_DST, plan.External(2, y_md)}};
  if (bias != nullptr) args.emplace_back(DNNL_ARG_BIAS, plan.External(3, bias_md));
  plan.Add(dnnl::matmul(pd), std::move(args));
}

void OneDnnMatmul(const Operand& a, const Operand& b, const Operand* bias, const Operand& y) {
  PrimitiveKey key(PrimitiveKey::kMatmul);
  for (const Operand* op : {&a, &b, &y, bias}) {
    if (op == nullptr) break;
    key.Add(op->shape).Add(op->strides);
  }
  OneDnnPlan& plan = CachedPlan(key, [&](OneDnnPlan& p) { BuildMatmulPlan(a, b, bias, y, p); });
  if (plan.empty()) {
    const int64_t rank = y.shape.size();
    OneDnnMatmul(Align(Dense(a.View()), rank), Align(Dense(b.View()), rank), bias, y);
    return;
  }
  plan.Run({a.t.raw_data(), b.t.raw_data(), y.t.raw_data(),
            bias != nullptr ? bias->t.raw_data() : nullptr});
}

template <typename T>
void EigenMatmul(const Operand& a, const Operand& b, const Operand* bias, const Operand& y) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using RowVector = Eigen::Matrix<T, 1, Eigen::Dynamic>;
  using Strides = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
  const int64_t r = y.shape.size();
  const int64_t m = y.shape[r - 2], n = y.shape[r - 1], k = a.shape[r - 1];
  auto map = [&](const Operand& op, int64_t offset, int64_t rows, int64_t cols) {
    return Eigen::Map<Matrix, 0, Strides>(op.t.data<T>() + offset, rows, cols,
                                          Strides(op.strides[r - 2], op.strides[r - 1]));
  };
  const Shape batch(y.shape.begin(), y.shape.end() - 2);
  ForEachOffset<3>(batch, {BatchStrides(y), BatchStrides(a), BatchStrides(b)},
                   [&](int64_t yo, int64_t ao, int64_t bo) {
                     auto out = map(y, yo, m, n);
                     out.noalias() = map(a, ao, m, k) * map(b, bo, k, n);
                     if (bias != nullptr) {
                       out.rowwise() += Eigen::Map<const RowVector, 0, Eigen::InnerStride<>>(
                           bias->t.data<T>(), n, Eigen::InnerStride<>(bias->strides[r - 1]));
                     }
                   });
}

// A 2-D product of at most kTinyMatmul multiply-adds (the seed's linear layer,
// a bias-sized gradient): direct loops over the operands' strides, where a
// oneDNN call costs more in dispatch than the work.
constexpr int64_t kTinyMatmul = 4096;

template <typename T>
void TinyMatmul(const Operand& a, const Operand& b, const Operand* bias, const Operand& y) {
  const int64_t m = y.shape[0], n = y.shape[1], k = a.shape[1];
  const T* ap = a.t.data<T>();
  const T* bp = b.t.data<T>();
  T* yp = y.t.data<T>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum += ap[i * a.strides[0] + p * a.strides[1]] * bp[p * b.strides[0] + j * b.strides[1]];
      }
      // The bias last, so that linear equals its decomposition (matmul, then
      // add) bit for bit.
      if (bias != nullptr) sum += bias->t.data<T>()[j * bias->strides[1]];
      yp[i * y.strides[0] + j * y.strides[1]] = sum;
    }
  }
}

// y = a b (+ bias), all four aligned to y's rank; y is contiguous, its elements
// unspecified before the call.
void Matmul(const Operand& a, const Operand& b, const Operand* bias, const Operand& y) {
  if (y.t.numel() == 0) return;
  if (a.shape.back() == 0) {  // an empty sum: y is zero plus bias
    std::memset(y.t.raw_data(), 0, y.t.bytes());
    if (bias != nullptr) CopyStrided(bias->t, y.t);
    return;
  }
  VisitFloatDType(y.t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const int64_t rank = y.shape.size();
    if (std::is_same_v<T, float> && rank == 2 && y.t.numel() * a.shape[1] <= kTinyMatmul) {
      TinyMatmul<T>(a, b, bias, y);
    } else if constexpr (std::is_same_v<T, float>) {
      OneDnnMatmul(a, b, bias, y);
    } else {
      EigenMatmul<T>(a, b, bias, y);
    }
  });
}

absl::Status MatmulInto(absl::Span<const Tensor> in, const Attrs&, absl::Span<const Tensor> out) {
  const int64_t rank = out[0].dim();
  Matmul(Align(in[0], rank), Align(in[1], rank), nullptr, Align(out[0], rank));
  return absl::OkStatus();
}

// x [.., in] w [out, in] b [out]: x w^T + b, with w^T (w read with its dims
// swapped) shared by every row of x (a broadcast batch operand).
absl::Status LinearInto(absl::Span<const Tensor> in, const Attrs&, absl::Span<const Tensor> out) {
  const Tensor &x = in[0], &w = in[1], &b = in[2];
  const int64_t rank = std::max<int64_t>(x.dim(), 2);  // x [in] is one row
  const int64_t wt_shape[] = {w.shape()[1], w.shape()[0]};
  const int64_t wt_strides[] = {w.strides()[1], w.strides()[0]};
  // oneDNN's matmul reads a bias densely, whatever its strides say.
  const Operand bias = Align(Dense(b), rank);
  Matmul(Align(x, rank), Align(w, wt_shape, wt_strides, rank), &bias, Align(out[0], rank));
  return absl::OkStatus();
}

}  // namespace

void RegisterMatmulKernels(KernelTable& t) {
  BindInto<&MatmulInto>(t, OpKind::kMatmul);
  BindInto<&LinearInto>(t, OpKind::kLinear);
}

}  // namespace tc::kernels
