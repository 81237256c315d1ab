// Eager kernels of matmul and linear (layout family). Both are one batched
// product y = a b (+ bias) over operands seen at the output's rank, read in
// place with their own strides (a transposed view is not copied), broadcast
// batch dims being size-1 dims. f32 runs on dnnl::matmul or OpenBLAS's sgemm,
// whichever runtime/gemm.h chooses for the shape; f64 on Eigen. In f32 both
// also take post-ops (runtime/dispatch.h): activations and binary
// ops with a broadcast operand (a residual, a scale), applied by oneDNN as it
// writes y.
#include <algorithm>
#include <chrono>
#include <climits>
#include <optional>
#include <type_traits>

#include "Eigen/Core"
#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/gemm_choice.h"
#include "runtime/kernels/onednn.h"
#include "runtime/kernels/openblas.h"
#include "runtime/kernels/primitive_cache.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"
#include "runtime/threads.h"

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

// A binary post-op's operand at `rank` dims: size 1 along every dim it is
// broadcast along (missing, size 1 or stride 0), as oneDNN reads a broadcast.
Operand AlignBroadcast(const Tensor& t, int64_t rank) {
  Operand op{t, absl::InlinedVector<int64_t, 6>(rank, 1), absl::InlinedVector<int64_t, 6>(rank, 1)};
  const int64_t lead = rank - t.dim();
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (t.shape()[i] == 1 || t.strides()[i] == 0) continue;
    op.shape[lead + i] = t.shape()[i];
    op.strides[lead + i] = t.strides()[i];
  }
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (op.shape[d] == 1) op.strides[d] = d == rank - 1 ? 1 : op.strides[d + 1] * op.shape[d + 1];
  }
  return op;
}

// An operand's memory descriptor (f32, or bf16 in a mixed-precision product).
dnnl::memory::desc Desc(const Operand& op) { return PlainDesc(op.t.dtype(), op.shape, op.strides); }

// Post-ops and the operands of the binary ones, in order.
struct PostOps {
  absl::Span<const PostOp> ops;
  absl::Span<const Operand> operands;

  void AddTo(PrimitiveKey& key) const {
    for (const PostOp& p : ops)
      key.Add(static_cast<int64_t>(p.op)).Add(static_cast<int64_t>(p.attrs.approximation));
    for (const Operand& o : operands) key.Add(o.shape).Add(o.strides);
  }
};

// A plan's pointers: a, b, y, bias (slots 0-3), then the binary operands.
absl::InlinedVector<void*, 8> PlanPointers(const Operand* a, const Operand* b, const Operand& y,
                                           const Operand* bias, const PostOps& post) {
  absl::InlinedVector<void*, 8> pointers;
  for (const Operand* op : {a, b, &y, bias}) {
    pointers.push_back(op != nullptr ? op->t.raw_data() : nullptr);
  }
  for (const Operand& o : post.operands) pointers.push_back(o.t.raw_data());
  return pointers;
}

// oneDNN's algorithm for a post-op, or undef for an op it has none for.
dnnl::algorithm PostOpAlgorithm(const PostOp& p) {
  using dnnl::algorithm;
  switch (p.op) {
    case OpKind::kRelu:
      return algorithm::eltwise_relu;
    case OpKind::kGelu:
      return p.attrs.approximation == GeluApproximation::kTanh ? algorithm::eltwise_gelu_tanh
                                                               : algorithm::eltwise_gelu_erf;
    case OpKind::kTanh:
      return algorithm::eltwise_tanh;
    case OpKind::kSigmoid:
      return algorithm::eltwise_logistic;
    case OpKind::kExp:
      return algorithm::eltwise_exp;
    case OpKind::kAdd:
      return algorithm::binary_add;
    case OpKind::kSub:
      return algorithm::binary_sub;
    case OpKind::kMul:
      return algorithm::binary_mul;
    case OpKind::kDiv:
      return algorithm::binary_div;
    case OpKind::kMaximum:
      return algorithm::binary_max;
    case OpKind::kMinimum:
      return algorithm::binary_min;
    default:
      return algorithm::undef;
  }
}

// Appends the post-ops to `plan` as primitives of their own, in place on y:
// the fallback where the matmul cannot take them as attributes.
void AddPostOpPrimitives(const PostOps& post, const dnnl::memory::desc& y_md, OneDnnPlan& plan) {
  size_t next_operand = 0;
  for (const PostOp& p : post.ops) {
    const dnnl::memory y = plan.External(2, y_md);
    if (p.binary()) {
      const Operand& o = post.operands[next_operand];
      const dnnl::memory::desc o_md = Desc(o);
      const dnnl::binary::primitive_desc pd(
          dnnl::binary::desc(PostOpAlgorithm(p), y_md, o_md, y_md), Engine());
      plan.Add(dnnl::binary(pd), {{DNNL_ARG_SRC_0, y},
                                  {DNNL_ARG_SRC_1, plan.External(4 + next_operand, o_md)},
                                  {DNNL_ARG_DST, y}});
      ++next_operand;
    } else {
      const dnnl::eltwise_forward::primitive_desc pd(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, PostOpAlgorithm(p), y_md,
                                      0.f, 0.f),
          Engine());
      plan.Add(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, y}, {DNNL_ARG_DST, y}});
    }
  }
}

// A's first `rank - 2` strides, 0 along the (size-1) dims it broadcasts.
absl::InlinedVector<int64_t, 6> BatchStrides(const Operand& a) {
  absl::InlinedVector<int64_t, 6> strides(a.strides.begin(), a.strides.end() - 2);
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

// Whether to copy a (a transposed view, stored K-major: a weight gradient's
// g^T) row-major before the product. Without AVX-512, oneDNN 2.6's f32 gemm
// reads a K-major src at about half its rate: [1024,1024] x [1024,256] takes
// 14.7 ms on one core of an AVX2 machine, against 1.6 ms to reorder plus 6.9 ms
// to multiply. With AVX-512 it reads both at full rate.
bool ReorderKMajorSrc(const Operand& a) {
  static const bool avx512 = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
  const int64_t r = a.shape.size();
  constexpr int64_t kMinElements = 64 * 1024;
  return !avx512 && a.strides[r - 2] == 1 && a.shape[r - 2] > 1 && a.strides[r - 1] != 1 &&
         a.t.numel() >= kMinElements;
}

// The matmul primitive of these operands, or an empty plan when oneDNN would
// pick its reference kernel for an operand without unit strides (a slice with a
// step, a broadcast row): far slower than copying the operand first. Post-ops
// are the primitive's attributes, or primitives of their own after it where
// its implementation cannot take them.
void BuildMatmulPlan(const Operand& a, const Operand& b, const Operand* bias, const Operand& y,
                     const PostOps& post, bool pack_b, OneDnnPlan& plan) {
  const dnnl::memory::desc a_md = Desc(a), b_md = Desc(b), y_md = Desc(y);
  // A packed b is in the layout the primitive picks for it.
  const dnnl::memory::desc b_wanted =
      pack_b ? dnnl::memory::desc(b_md.dims(), b_md.data_type(), dnnl::memory::format_tag::any)
             : b_md;
  // The matmul's src: a itself, or a row-major copy the plan reorders it into.
  const dnnl::memory::desc a_dense_md =
      ReorderKMajorSrc(a) ? PlainDesc(a.t.dtype(), a.shape, ContiguousStrides(a.shape)) : a_md;
  dnnl::memory::desc bias_md;
  if (bias != nullptr) bias_md = Desc(*bias);
  const dnnl::matmul::desc desc = bias != nullptr
                                      ? dnnl::matmul::desc(a_dense_md, b_wanted, bias_md, y_md)
                                      : dnnl::matmul::desc(a_dense_md, b_wanted, y_md);
  dnnl::post_ops ops;
  for (size_t i = 0, next_operand = 0; i < post.ops.size(); ++i) {
    if (post.ops[i].binary()) {
      const Operand& o = post.operands[next_operand++];
      ops.append_binary(PostOpAlgorithm(post.ops[i]), Desc(o));
    } else {
      ops.append_eltwise(1.f, PostOpAlgorithm(post.ops[i]), 0.f, 0.f);
    }
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  std::optional<dnnl::matmul::primitive_desc> pd;
  bool post_ops_apart = false;
  try {
    pd.emplace(desc, attr, Engine());
    post_ops_apart = !post.ops.empty() && absl::StartsWith(pd->impl_info_str(), "ref");
  } catch (const dnnl::error&) {
    post_ops_apart = true;
  }
  if (post_ops_apart) pd.emplace(desc, Engine());
  if (absl::StartsWith(pd->impl_info_str(), "ref") &&
      (!IsContiguous(a.shape, a.strides) || !IsContiguous(b.shape, b.strides)))
    return;
  dnnl::memory src = plan.External(0, a_md);
  if (a_dense_md != a_md) {
    const dnnl::memory dense = plan.Internal(a_dense_md);
    plan.Add(dnnl::reorder(src, dense), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dense}});
    src = dense;
  }
  // Asked only of a packed b: an unpacked b is in its own layout.
  const dnnl::memory::desc b_layout = pack_b ? pd->weights_desc() : b_md;
  const dnnl::memory weights =
      b_layout == b_md ? plan.External(1, b_md) : plan.Packed(1, b_md, b_layout);
  std::vector<std::pair<int, dnnl::memory>> args = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, plan.External(2, y_md)}};
  if (bias != nullptr) args.emplace_back(DNNL_ARG_BIAS, plan.External(3, bias_md));
  if (!post_ops_apart) {
    for (int i = 0, next_operand = 0; i < static_cast<int>(post.ops.size()); ++i) {
      if (!post.ops[i].binary()) continue;
      const Operand& o = post.operands[next_operand];
      args.emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1,
                        plan.External(4 + next_operand, Desc(o)));
      ++next_operand;
    }
  }
  plan.Add(dnnl::matmul(*pd), std::move(args));
  if (post_ops_apart) AddPostOpPrimitives(post, y_md, plan);
}

// `op`'s last two dims as a rank-2 operand of `rows` rows.
Operand Matrices(const Operand& op, int64_t rows) {
  const int64_t r = op.shape.size();
  return Operand{op.t, {rows, op.shape[r - 1]}, {op.strides[r - 2], op.strides[r - 1]}};
}

// Whether `op`'s batch dims and rows are one run of rows, evenly strided.
bool RowsFlatten(const Operand& op) {
  for (int64_t d = 0; d + 2 < static_cast<int64_t>(op.shape.size()); ++d) {
    if (op.strides[d] != op.strides[d + 1] * op.shape[d + 1]) return false;
  }
  return true;
}

// Whether `op`, aligned to y's rank, is one value per row of y along its
// batch and row dims (all of them size 1: a row vector every row reads).
bool OneRow(const Operand& op) {
  return std::all_of(op.shape.begin(), op.shape.end() - 1, [](int64_t size) { return size == 1; });
}

// A product over a batch whose b every batch element shares (a linear layer
// over [batch, tokens, features]) as one product of batch x m rows, where
// a's and y's rows and each post-op operand's allow: oneDNN 2.6 runs the
// batched form on its older gemm, 2-3x slower than its brgemm kernels on
// the same rows (1024x256x256 in bf16 on AMX: 0.40 ms against 0.15).
struct Collapsed {
  Operand a, b, y;
  std::optional<Operand> bias;
  absl::InlinedVector<Operand, 4> operands;
};

std::optional<Collapsed> CollapseSharedB(const Operand& a, const Operand& b, const Operand* bias,
                                         const Operand& y, const PostOps& post) {
  const int64_t r = y.shape.size();
  const bool b_shared =
      std::all_of(b.shape.begin(), b.shape.end() - 2, [](int64_t size) { return size == 1; });
  if (r <= 2 || !b_shared || !RowsFlatten(a) || !RowsFlatten(y)) return std::nullopt;
  for (int64_t d = 0; d < r - 2; ++d) {
    if (a.shape[d] != y.shape[d]) return std::nullopt;  // a broadcast along the batch
  }
  const int64_t rows = y.t.numel() / y.shape[r - 1];
  Collapsed c{Matrices(a, rows), Matrices(b, b.shape[r - 2]), Matrices(y, rows), std::nullopt, {}};
  if (bias != nullptr) {
    if (!OneRow(*bias)) return std::nullopt;
    c.bias = Matrices(*bias, 1);
  }
  for (const Operand& o : post.operands) {
    if (OneRow(o)) {
      c.operands.push_back(Matrices(o, 1));
    } else if (o.shape == y.shape && RowsFlatten(o)) {
      c.operands.push_back(Matrices(o, rows));
    } else {
      return std::nullopt;
    }
  }
  return c;
}

void OneDnnMatmul(const Operand& a, const Operand& b, const Operand* bias, const Operand& y,
                  const PostOps& post) {
  PrimitiveKey key(PrimitiveKey::kMatmul);
  for (const Operand* op : {&a, &b, &y, bias}) {
    if (op == nullptr) break;
    key.Add(static_cast<int64_t>(op->t.dtype())).Add(op->shape).Add(op->strides);
  }
  post.AddTo(key);
  // A frozen weight matrix is packed once (runtime/kernels/primitive_cache.h).
  const bool pack_b = b.t.is_frozen() && b.shape.size() == 2;
  key.Add(pack_b);
  OneDnnPlan& plan =
      CachedPlan(key, [&](OneDnnPlan& p) { BuildMatmulPlan(a, b, bias, y, post, pack_b, p); });
  if (plan.empty()) {
    const int64_t rank = y.shape.size();
    OneDnnMatmul(Align(Dense(a.View()), rank), Align(Dense(b.View()), rank), bias, y, post);
    return;
  }
  plan.Run(PlanPointers(&a, &b, y, bias, post), pack_b ? b.t : Tensor());
}

// Applies `post` to y in place, on primitives of their own.
void OneDnnPostOps(const Operand& y, const PostOps& post) {
  PrimitiveKey key(PrimitiveKey::kMatmul);
  key.Add(-1).Add(y.shape).Add(y.strides);  // -1: no product, unlike every matmul key
  post.AddTo(key);
  OneDnnPlan& plan = CachedPlan(key, [&](OneDnnPlan& p) { AddPostOpPrimitives(post, Desc(y), p); });
  plan.Run(PlanPointers(nullptr, nullptr, y, nullptr, post));
}

// How OpenBLAS reads a matmul operand's matrices: stored row-major or
// transposed, and the stride between stored rows; nullopt where neither of the
// last two strides is 1 or a size exceeds sgemm's int.
struct BlasLayout {
  bool transposed;
  int64_t ld;
};

std::optional<BlasLayout> BlasLayoutOf(const Operand& op) {
  const int64_t r = op.shape.size();
  const int64_t rows = op.shape[r - 2], cols = op.shape[r - 1];
  const int64_t row_stride = op.strides[r - 2], col_stride = op.strides[r - 1];
  if (std::max({rows, cols, row_stride, col_stride}) > INT_MAX) return std::nullopt;
  if (col_stride == 1 && row_stride >= std::max<int64_t>(cols, 1))
    return BlasLayout{false, row_stride};
  if (row_stride == 1 && col_stride >= std::max<int64_t>(rows, 1))
    return BlasLayout{true, col_stride};
  return std::nullopt;
}

// y = a b (+ bias) on OpenBLAS, one sgemm per batch element; the bias is
// written into y first and the product added to it.
void OpenBlasMatmul(const OpenBlas& blas, const Operand& a, BlasLayout la, const Operand& b,
                    BlasLayout lb, const Operand* bias, const Operand& y) {
  const int64_t r = y.shape.size();
  const int64_t m = y.shape[r - 2], n = y.shape[r - 1], k = a.shape[r - 1];
  const int64_t ldy = y.strides[r - 2];
  const float* ap = a.t.data<float>();
  const float* bp = b.t.data<float>();
  float* yp = y.t.data<float>();
  ForEachOffset<3>(
      absl::MakeConstSpan(y.shape).first(r - 2),
      {BatchStrides(y), BatchStrides(a), BatchStrides(b)}, [&](int64_t yo, int64_t ao, int64_t bo) {
        float* out = yp + yo;
        if (bias != nullptr) {
          const float* bias_p = bias->t.data<float>();
          const int64_t step = bias->strides[r - 1];
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) out[i * ldy + j] = bias_p[j * step];
          }
        }
        blas.Sgemm(m, n, k, {ap + ao, la.transposed, la.ld}, {bp + bo, lb.transposed, lb.ld},
                   bias != nullptr ? 1.f : 0.f, out, ldy);
      });
}

// A dense operand of `op`'s shape, its matrices stored as `layout` says, its
// elements set: what the candidates are timed on.
Operand ScratchLike(const Operand& op, bool transposed) {
  const int64_t r = op.shape.size();
  absl::InlinedVector<int64_t, 6> stored(op.shape.begin(), op.shape.end());
  if (transposed) std::swap(stored[r - 2], stored[r - 1]);
  Tensor t = Tensor::Uninitialized(Shape(stored.begin(), stored.end()), DType::kF32);
  std::fill_n(t.data<float>(), t.numel(), 0.5f);
  const std::vector<int64_t> dense = ContiguousStrides(stored);
  Operand scratch{t, op.shape, absl::InlinedVector<int64_t, 6>(dense.begin(), dense.end())};
  if (transposed) std::swap(scratch.strides[r - 2], scratch.strides[r - 1]);
  return scratch;
}

// Runs the product on OpenBLAS and returns true where the process's
// GemmChoice gives this shape to it (timing both the first time under auto).
bool MatmulOnOpenBlas(const Operand& a, const Operand& b, const Operand* bias, const Operand& y) {
  const OpenBlas* blas = OpenBlas::Get();
  if (blas == nullptr) return false;
  const std::optional<BlasLayout> la = BlasLayoutOf(a), lb = BlasLayoutOf(b), ly = BlasLayoutOf(y);
  if (!la || !lb || !ly || ly->transposed) return false;
  const int64_t r = y.shape.size();
  int64_t batch = 1;
  for (int64_t d = 0; d < r - 2; ++d) batch *= y.shape[d];
  const GemmShape shape{batch,          y.shape[r - 2], y.shape[r - 1],  a.shape[r - 1],
                        la->transposed, lb->transposed, bias != nullptr, NumThreads()};
  const GemmImpl impl = ChooseGemm(shape, [&](GemmImpl candidate) {
    const Operand sa = ScratchLike(a, la->transposed), sb = ScratchLike(b, lb->transposed);
    const Operand sy = ScratchLike(y, false);
    const std::optional<Operand> sbias =
        bias != nullptr ? std::optional<Operand>(ScratchLike(*bias, false)) : std::nullopt;
    const auto start = std::chrono::steady_clock::now();
    if (candidate == GemmImpl::kOpenBlas) {
      OpenBlasMatmul(*blas, sa, *BlasLayoutOf(sa), sb, *BlasLayoutOf(sb), sbias ? &*sbias : nullptr,
                     sy);
    } else {
      OneDnnMatmul(sa, sb, sbias ? &*sbias : nullptr, sy, {});
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  if (impl != GemmImpl::kOpenBlas) return false;
  OpenBlasMatmul(*blas, a, *la, b, *lb, bias, y);
  return true;
}

// A product on the gemm libraries (f32, or bf16 operands): oneDNN, or
// OpenBLAS where runtime/gemm.h gives it the shape (f32 without post-ops).
// A batch over one shared b runs as one product of its rows on either.
void LibraryMatmul(const Operand& a, const Operand& b, const Operand* bias, const Operand& y,
                   const PostOps& post) {
  if (const std::optional<Collapsed> c = CollapseSharedB(a, b, bias, y, post)) {
    LibraryMatmul(c->a, c->b, c->bias ? &*c->bias : nullptr, c->y, {post.ops, c->operands});
    return;
  }
  // Post-ops are fused by oneDNN as it writes y.
  // A frozen b stays on oneDNN, which packs it.
  const bool openblas_may = a.t.dtype() == DType::kF32 && post.ops.empty() && !b.t.is_frozen();
  if (!openblas_may || !MatmulOnOpenBlas(a, b, bias, y)) OneDnnMatmul(a, b, bias, y, post);
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

// y = a b (+ bias), then `post` (f32 only), all aligned to y's rank; y is
// contiguous, its elements unspecified before the call.
void Matmul(const Operand& a, const Operand& b, const Operand* bias, const Operand& y,
            const PostOps& post = {}) {
  if (y.t.numel() == 0) return;
  if (a.shape.back() == 0) {  // an empty sum: y is zero plus bias
    ZeroDense(y.t);
    if (bias != nullptr) CopyStrided(bias->t, y.t);
    if (!post.ops.empty()) OneDnnPostOps(y, post);
    return;
  }
  if (a.t.dtype() == DType::kBF16) {  // mixed precision: oneDNN's bf16 kernels
    LibraryMatmul(a, b, bias, y, post);
    return;
  }
  VisitFloatDType(y.t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const int64_t rank = y.shape.size();
    if (std::is_same_v<T, float> && rank == 2 && y.t.numel() * a.shape[1] <= kTinyMatmul &&
        post.ops.empty()) {
      TinyMatmul<T>(a, b, bias, y);
    } else if constexpr (std::is_same_v<T, float>) {
      LibraryMatmul(a, b, bias, y, post);
    } else {
      EigenMatmul<T>(a, b, bias, y);
    }
  });
}

// The binary post-ops' operands, the inputs after the op's first `own`.
absl::InlinedVector<Operand, 4> PostOpOperands(absl::Span<const Tensor> in, size_t own,
                                               int64_t rank) {
  absl::InlinedVector<Operand, 4> operands;
  for (size_t i = own; i < in.size(); ++i) operands.push_back(AlignBroadcast(in[i], rank));
  return operands;
}

absl::Status MatmulPostOpsInto(absl::Span<const Tensor> in, const Attrs&,
                               absl::Span<const PostOp> post_ops, absl::Span<const Tensor> out) {
  TC_RETURN_IF_ERROR(CheckBf16Runs(in, "matmul"));
  const int64_t rank = out[0].dim();
  const absl::InlinedVector<Operand, 4> operands = PostOpOperands(in, 2, rank);
  Matmul(Align(in[0], rank), Align(in[1], rank), nullptr, Align(out[0], rank),
         {post_ops, operands});
  return absl::OkStatus();
}

absl::Status MatmulInto(absl::Span<const Tensor> in, const Attrs& attrs,
                        absl::Span<const Tensor> out) {
  return MatmulPostOpsInto(in, attrs, {}, out);
}

// x [.., in] w [out, in] b [out]: x w^T + b, with w^T (w read with its dims
// swapped) shared by every row of x (a broadcast batch operand).
absl::Status LinearPostOpsInto(absl::Span<const Tensor> in, const Attrs&,
                               absl::Span<const PostOp> post_ops, absl::Span<const Tensor> out) {
  TC_RETURN_IF_ERROR(CheckBf16Runs(in, "linear"));
  const Tensor &x = in[0], &w = in[1], &b = in[2];
  const int64_t rank = std::max<int64_t>(x.dim(), 2);  // x [in] is one row
  const int64_t wt_shape[] = {w.shape()[1], w.shape()[0]};
  const int64_t wt_strides[] = {w.strides()[1], w.strides()[0]};
  // oneDNN's matmul reads a bias densely, whatever its strides say.
  const Operand bias = Align(Dense(b), rank);
  const absl::InlinedVector<Operand, 4> operands = PostOpOperands(in, 3, rank);
  Matmul(Align(x, rank), Align(w, wt_shape, wt_strides, rank), &bias, Align(out[0], rank),
         {post_ops, operands});
  return absl::OkStatus();
}

absl::Status LinearInto(absl::Span<const Tensor> in, const Attrs& attrs,
                        absl::Span<const Tensor> out) {
  return LinearPostOpsInto(in, attrs, {}, out);
}

}  // namespace

void RegisterMatmulKernels(KernelTable& t) {
  BindInto<&MatmulInto>(t, OpKind::kMatmul);
  BindInto<&LinearInto>(t, OpKind::kLinear);
  BindPostOps<&MatmulPostOpsInto>(t, OpKind::kMatmul);
  BindPostOps<&LinearPostOpsInto>(t, OpKind::kLinear);
}

}  // namespace tc::kernels
