// Out-variant kernels: embedding, embedding_backward and dropout. All read
// their inputs through strides (no contiguous copies, nothing allocated) and
// visit elements in the logical row-major order, which is what dropout's mask
// is defined over.

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"
#include "runtime/random.h"

namespace tc::kernels {
namespace {

// Visits `indices` (i64, any strides) in row-major order, calling
// fn(index, row) where `row` is the offset of that position in `rows`, a
// tensor of shape indices.shape + [dim]. Stops at the first index outside
// [0, num) with an OutOfRange error; the caller's output is then discarded.
template <typename Fn>
absl::Status VisitIndices(const Tensor& indices, const Tensor& rows, int64_t num, Fn fn) {
  const int64_t* idx = static_cast<const int64_t*>(indices.raw_data());
  const absl::InlinedVector<int64_t, 8> row_strides(rows.strides().begin(),
                                                    rows.strides().end() - 1);
  absl::Status status;
  ForEachOffset<2>(indices.shape(), {indices.strides(), row_strides}, [&](int64_t i, int64_t row) {
    if (!status.ok()) return;
    if (idx[i] < 0 || idx[i] >= num) {
      status =
          absl::OutOfRangeError(absl::StrCat("index ", idx[i], " out of range [0, ", num, ")"));
      return;
    }
    fn(idx[i], row);
  });
  return status;
}

// out[..., j] = weight[indices[...], j]; weight may hold any dtype.
absl::Status EmbeddingInto(absl::Span<const Tensor> in, const Attrs&,
                           absl::Span<const Tensor> outputs) {
  const Tensor &weight = in[0], &indices = in[1], &out = outputs[0];
  const int64_t dim = weight.size(1), w_row = weight.strides()[0], w_col = weight.strides()[1];
  absl::Status status = VisitDType(weight.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* w = static_cast<const T*>(weight.raw_data());
    T* o = static_cast<T*>(out.raw_data());
    return VisitIndices(indices, out, weight.size(0), [&](int64_t index, int64_t row) {
      for (int64_t j = 0; j < dim; ++j) o[row + j] = w[index * w_row + j * w_col];
    });
  });
  return status;
}

// Scatter-add of grad's rows into [num_weights, dim]; repeated indices accumulate.
absl::Status EmbeddingBackwardInto(absl::Span<const Tensor> in, const Attrs&,
                                   absl::Span<const Tensor> outputs) {
  const Tensor &grad = in[0], &indices = in[1], &out = outputs[0];
  ZeroDense(out);  // rows accumulate
  const int64_t num = out.size(0), dim = out.size(1);
  const int64_t g_col = grad.strides().back();
  absl::Status status = VisitFloatDType(grad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* g = static_cast<const T*>(grad.raw_data());
    T* o = static_cast<T*>(out.raw_data());
    return VisitIndices(indices, grad, num, [&](int64_t index, int64_t row) {
      for (int64_t j = 0; j < dim; ++j) o[index * dim + j] += g[row + j * g_col];
    });
  });
  return status;
}

// x, seed, offset -> y. Keeps element i (row-major in the logical tensor,
// whatever x's strides) iff RandomUniform(seed, offset + i) >= p: a pure
// function of (seed, offset, i), so recomputing the forward reproduces its
// mask. Kept values are scaled by 1 / (1 - p); p = 0 keeps everything
// unscaled.
absl::Status DropoutInto(absl::Span<const Tensor> in, const Attrs& attrs,
                         absl::Span<const Tensor> outputs) {
  const Tensor &x = in[0], &out = outputs[0];
  const double p = attrs.Float("p");
  const uint64_t seed = static_cast<uint64_t>(*in[1].data<int64_t>());
  const uint64_t offset = static_cast<uint64_t>(*in[2].data<int64_t>());
  VisitFloatDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T scale = static_cast<T>(1.0 / (1.0 - p));
    const T* xp = static_cast<const T*>(x.raw_data());
    T* o = static_cast<T*>(out.raw_data());
    uint64_t i = 0;
    ForEachOffset<1>(x.shape(), {x.strides()}, [&](int64_t xo) {
      o[i] = RandomUniform(seed, offset + i) >= p ? xp[xo] * scale : T(0);
      ++i;
    });
  });
  return absl::OkStatus();
}

}  // namespace

// targets -> the same values, each checked: a class in [0, classes) or
// ignore_index.
absl::Status CheckClassIndexInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                 absl::Span<const Tensor> out) {
  const int64_t classes = attrs.Int("classes"), ignore = attrs.Int("ignore_index");
  const int64_t* targets = in[0].data<int64_t>();
  int64_t* copy = out[0].data<int64_t>();
  int64_t sample = 0, bad = -1, bad_target = 0;
  ForEachOffset<2>(in[0].shape(), {out[0].strides(), in[0].strides()}, [&](int64_t o, int64_t i) {
    const int64_t t = targets[i];
    if (bad < 0 && t != ignore && (t < 0 || t >= classes)) {
      bad = sample;
      bad_target = t;
    }
    copy[o] = t;
    ++sample;
  });
  if (bad < 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("target ", bad_target, " of sample ", bad,
                                                 " is not a class in [0, ", classes,
                                                 ") nor the ignore_index ", ignore));
}

void RegisterEmbeddingDropoutKernels(KernelTable& t) {
  BindInto<&EmbeddingInto>(t, OpKind::kEmbedding);
  BindInto<&EmbeddingBackwardInto>(t, OpKind::kEmbeddingBackward);
  BindInto<&DropoutInto>(t, OpKind::kDropout);
  BindInto<&CheckClassIndexInto>(t, OpKind::kCheckClassIndex);
}

}  // namespace tc::kernels
