// Eager kernels of the layout family. permute, expand, slice and (when the
// strides allow) reshape return views sharing input 0's storage; slice_backward,
// concat and pad are out-variants copying each input into a strided region of
// their output, for every dtype and any input strides. matmul and
// linear live in matmul.cc.
#include <algorithm>
#include <optional>

#include "absl/container/inlined_vector.h"
#include "graph/ops/infer_util.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"

namespace tc::kernels {
namespace {

// A view over `base`'s storage; `offset` is absolute, in elements.
Tensor ViewOf(const Tensor& base, Shape shape, std::vector<int64_t> strides, int64_t offset) {
  return Tensor::View(base.storage(), base.dtype(), std::move(shape), std::move(strides), offset);
}

// `base` sliced by the attributes {dim, start, end, step}, which passed shape
// inference, so the bounds are the ones inference computed.
Tensor SliceView(const Tensor& base, const Attrs& attrs) {
  const int64_t dim = *WrapDim(attrs.Int("dim"), base.dim());
  const ops_internal::SliceBounds b = *ops_internal::NormalizeSlice(
      base.shape()[dim], attrs.Int("start"), attrs.Int("end"), attrs.Int("step"));
  Shape shape = base.shape();
  std::vector<int64_t> strides = base.strides();
  shape[dim] = b.length;
  strides[dim] *= b.step;
  return ViewOf(base, std::move(shape), std::move(strides),
                base.offset() + b.start * base.strides()[dim]);
}

// Strides under which data laid out as (old_shape, old_strides) reads as
// `shape` in row-major order, or nullopt when no strides do and a copy is
// needed. Old dims split into runs that are contiguous with one another; each
// run may be merged and re-split freely, but new dims may not straddle runs
// (the rule of PyTorch's computeStride).
std::optional<std::vector<int64_t>> ViewStrides(const Shape& old_shape,
                                                const std::vector<int64_t>& old_strides,
                                                const Shape& shape) {
  if (old_shape.empty() || NumElements(shape) == 0) return ContiguousStrides(shape);
  std::vector<int64_t> strides(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t run_stride = old_strides.back();  // stride of the current run's innermost dim
  int64_t run_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    run_numel *= old_shape[d];
    const bool run_ends =
        d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != run_numel * run_stride);
    if (!run_ends) continue;
    while (view_d >= 0 && (view_numel < run_numel || shape[view_d] == 1)) {
      strides[view_d] = view_numel * run_stride;
      view_numel *= shape[view_d];
      --view_d;
    }
    if (view_numel != run_numel) return std::nullopt;
    if (d > 0) {
      run_stride = old_strides[d - 1];
      run_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

absl::StatusOr<TensorList> PermuteKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                         absl::Span<const TensorType> out_types) {
  const Tensor& x = in[0];
  std::vector<int64_t> strides;
  for (int64_t d : attrs.Ints("dims")) strides.push_back(x.strides()[*WrapDim(d, x.dim())]);
  return TensorList{ViewOf(x, out_types[0].shape, std::move(strides), x.offset())};
}

absl::StatusOr<TensorList> ReshapeKernel(absl::Span<const Tensor> in, const Attrs&,
                                         absl::Span<const TensorType> out_types) {
  const Tensor& x = in[0];
  const Shape& shape = out_types[0].shape;
  if (std::optional<std::vector<int64_t>> strides = ViewStrides(x.shape(), x.strides(), shape)) {
    return TensorList{ViewOf(x, shape, *std::move(strides), x.offset())};
  }
  // Copied here rather than with x.contiguous(), which would dispatch a cast
  // through the hooks (tape, tracer) in the middle of this kernel.
  Tensor copy = Tensor::Uninitialized(x.shape(), x.dtype());
  CopyStrided(x, copy);
  return TensorList{ViewOf(copy, shape, ContiguousStrides(shape), 0)};
}

absl::StatusOr<TensorList> ExpandKernel(absl::Span<const Tensor> in, const Attrs&,
                                        absl::Span<const TensorType> out_types) {
  const Tensor& x = in[0];
  const Shape& shape = out_types[0].shape;
  const int64_t lead = static_cast<int64_t>(shape.size()) - x.dim();
  // New leading dims and broadcast size-1 dims read the same element: stride 0.
  std::vector<int64_t> strides(shape.size(), 0);
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (x.shape()[i] == shape[lead + i]) strides[lead + i] = x.strides()[i];
  }
  return TensorList{ViewOf(x, shape, std::move(strides), x.offset())};
}

absl::StatusOr<TensorList> SliceKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                       absl::Span<const TensorType>) {
  return TensorList{SliceView(in[0], attrs)};
}

// Copies `src` into `out`'s elements at `offset` read with `strides` (a
// region of out), without making a view of it.
void CopyToRegion(const Tensor& src, const Tensor& out, absl::Span<const int64_t> strides,
                  int64_t offset) {
  if (src.numel() == 0) return;  // an empty tensor's data may be null: no offset from it
  VisitDType(src.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* sp = src.data<T>();
    T* op = out.data<T>() + offset;
    ForEachOffset<2>(src.shape(), {strides, src.strides()},
                     [&](int64_t o, int64_t i) { op[o] = sp[i]; });
  });
}

template <typename T>
void Fill(const Tensor& out, double value) {
  std::fill_n(out.data<T>(), out.numel(), static_cast<T>(value));
}

absl::Status SliceBackwardInto(absl::Span<const Tensor> in, const Attrs& attrs,
                               absl::Span<const Tensor> outs) {
  const Tensor& out = outs[0];
  ZeroDense(out);
  const int64_t dim = *WrapDim(attrs.Int("dim"), out.dim());
  const ops_internal::SliceBounds b = *ops_internal::NormalizeSlice(
      out.shape()[dim], attrs.Int("start"), attrs.Int("end"), attrs.Int("step"));
  absl::InlinedVector<int64_t, 8> strides(out.strides().begin(), out.strides().end());
  strides[dim] *= b.step;
  CopyToRegion(in[0], out, strides, b.start * out.strides()[dim]);
  return absl::OkStatus();
}

absl::Status ConcatInto(absl::Span<const Tensor> in, const Attrs& attrs,
                        absl::Span<const Tensor> outs) {
  const Tensor& out = outs[0];  // the inputs tile it
  const int64_t dim = *WrapDim(attrs.Int("dim"), out.dim());
  int64_t at = 0;  // where the next input starts along `dim`
  for (const Tensor& x : in) {
    CopyToRegion(x, out, out.strides(), at * out.strides()[dim]);
    at += x.shape()[dim];
  }
  return absl::OkStatus();
}

absl::Status PadInto(absl::Span<const Tensor> in, const Attrs& attrs,
                     absl::Span<const Tensor> outs) {
  const Tensor& out = outs[0];
  VisitDType(out.dtype(), [&](auto zero) { Fill<decltype(zero)>(out, attrs.Float("value")); });
  const std::vector<int64_t>& pads = attrs.Ints("pads");
  int64_t offset = 0;  // of the interior, where x goes
  for (int64_t d = 0; d < out.dim(); ++d) offset += pads[2 * d] * out.strides()[d];
  CopyToRegion(in[0], out, out.strides(), offset);
  return absl::OkStatus();
}

}  // namespace

void RegisterLayoutKernels(KernelTable& t) {
  auto set = [&](OpKind op, KernelFn fn) { t.eager[static_cast<int>(op)] = fn; };
  set(OpKind::kPermute, &PermuteKernel);
  set(OpKind::kReshape, &ReshapeKernel);
  set(OpKind::kExpand, &ExpandKernel);
  set(OpKind::kSlice, &SliceKernel);
  BindInto<&SliceBackwardInto>(t, OpKind::kSliceBackward);
  BindInto<&ConcatInto>(t, OpKind::kConcat);
  BindInto<&PadInto>(t, OpKind::kPad);
  RegisterMatmulKernels(t);  // the family's matmul and linear, in matmul.cc
}

}  // namespace tc::kernels
