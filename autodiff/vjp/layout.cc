// VJP rules of linear algebra and layout ops.
#include "autodiff/vjp.h"
#include "graph/ops/infer_util.h"

namespace tc::vjp_internal {
namespace {

const Tensor& G(const VjpContext& c) { return c.grads[0]; }

Tensor SwapLast(const Tensor& t) { return transpose(t, -1, -2); }

TensorList Matmul(const VjpContext& c) {
  const Tensor &a = c.inputs[0], &b = c.inputs[1];
  return {SumToShape(matmul(G(c), SwapLast(b)), a.shape()),
          SumToShape(matmul(SwapLast(a), G(c)), b.shape())};
}

// linear: rows of x and g flattened to 2-D, so dw is one matmul.
TensorList Linear(const VjpContext& c) {
  const Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Tensor g2 = reshape(G(c), {-1, w.size(0)});
  const Tensor x2 = reshape(x, {-1, w.size(1)});
  return {reshape(matmul(g2, w), x.shape()), matmul(SwapLast(g2), x2), sum(g2, {0})};
}

TensorList Permute(const VjpContext& c) {
  const std::vector<int64_t>& dims = c.attrs.Ints("dims");
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> inverse(rank);
  for (int64_t i = 0; i < rank; ++i) inverse[*WrapDim(dims[i], rank)] = i;
  return {permute(G(c), inverse)};
}

TensorList Reshape(const VjpContext& c) { return {reshape(G(c), c.inputs[0].shape())}; }

TensorList Expand(const VjpContext& c) { return {SumToShape(G(c), c.inputs[0].shape())}; }

TensorList Slice(const VjpContext& c) {
  const Attrs& a = c.attrs;
  return {slice_backward(G(c), c.inputs[0].shape(), a.Int("dim"), a.Int("start"), a.Int("end"),
                         a.Int("step"))};
}

TensorList Concat(const VjpContext& c) {
  const int64_t dim = ValueOrThrow(WrapDim(c.attrs.Int("dim"), G(c).dim()));
  TensorList grads;
  int64_t start = 0;  // dims, symbolic when concatenated along a symbolic dim
  for (const Tensor& in : c.inputs) {
    const int64_t end = DimAdd(start, in.size(dim));
    grads.push_back(slice(G(c), dim, start, end));
    start = end;
  }
  return grads;
}

TensorList Pad(const VjpContext& c) {
  const std::vector<int64_t>& pads = c.attrs.Ints("pads");
  Tensor g = G(c);
  for (int64_t d = 0; d < g.dim(); ++d) {
    if (pads[2 * d] != 0 || pads[2 * d + 1] != 0) {
      g = slice(g, d, pads[2 * d], DimAdd(pads[2 * d], c.inputs[0].size(d)));
    }
  }
  return {g};
}

}  // namespace

void RegisterLayoutVjps(VjpTable& t) {
  t[static_cast<int>(OpKind::kMatmul)] = &Matmul;
  t[static_cast<int>(OpKind::kLinear)] = &Linear;
  t[static_cast<int>(OpKind::kPermute)] = &Permute;
  t[static_cast<int>(OpKind::kReshape)] = &Reshape;
  t[static_cast<int>(OpKind::kExpand)] = &Expand;
  t[static_cast<int>(OpKind::kSlice)] = &Slice;
  t[static_cast<int>(OpKind::kConcat)] = &Concat;
  t[static_cast<int>(OpKind::kPad)] = &Pad;
}

}  // namespace tc::vjp_internal
