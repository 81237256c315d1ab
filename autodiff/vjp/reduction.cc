// VJP rules of the reduction family.
#include "autodiff/vjp.h"

namespace tc::vjp_internal {
namespace {

// The reduced dims of a reduction call, sorted and wrapped.
std::vector<int64_t> ReducedDims(const VjpContext& c) {
  return ValueOrThrow(NormalizeDims(c.attrs.Ints("dims"), c.inputs[0].dim()));
}

// `t` (a reduction's output or gradient) with the reduced dims restored as
// size 1, then expanded to the input's shape.
Tensor Unreduce(const VjpContext& c, const Tensor& t) {
  Shape kept = c.inputs[0].shape();
  for (int64_t d : ReducedDims(c)) kept[d] = 1;
  return expand(reshape(t, kept), c.inputs[0].shape());
}

int64_t ReducedCount(const VjpContext& c) {
  int64_t n = 1;
  for (int64_t d : ReducedDims(c)) n = DimMul(n, c.inputs[0].shape()[d]);
  return n;
}

TensorList Sum(const VjpContext& c) { return {Unreduce(c, c.grads[0])}; }

TensorList Mean(const VjpContext& c) {
  const Tensor& g = c.grads[0];
  return {Unreduce(c, g) / size_scalar(ReducedCount(c), g.dtype())};
}

// max/min: the gradient is shared evenly among the elements equal to the
// extremum (ties split it), as PyTorch's amax/amin.
TensorList Extremum(const VjpContext& c) {
  const Tensor& x = c.inputs[0];
  const Tensor hit = eq(x, Unreduce(c, c.outputs[0]));
  const Tensor mask = cast(hit, x.dtype());
  const Tensor count = sum(mask, ReducedDims(c), /*keepdim=*/true);
  return {mask * Unreduce(c, c.grads[0]) / count};
}

TensorList Var(const VjpContext& c) {
  const Tensor& x = c.inputs[0];
  const std::vector<int64_t> dims = ReducedDims(c);
  const int64_t divisor = DimSub(ReducedCount(c), c.attrs.Int("correction"));
  const Tensor centered = x - mean(x, dims, /*keepdim=*/true);
  if (!IsSymbolic(divisor)) {
    return {Unreduce(c, c.grads[0]) * centered * (2.0 / static_cast<double>(divisor))};
  }
  return {Unreduce(c, c.grads[0]) * centered * 2.0 / size_scalar(divisor, x.dtype())};
}

TensorList Softmax(const VjpContext& c) {
  const Tensor &y = c.outputs[0], &g = c.grads[0];
  const int64_t dim = c.attrs.Int("dim");
  return {y * (g - sum(g * y, {dim}, /*keepdim=*/true))};
}

TensorList LogSoftmax(const VjpContext& c) {
  const Tensor &y = c.outputs[0], &g = c.grads[0];
  const int64_t dim = c.attrs.Int("dim");
  return {g - exp(y) * sum(g, {dim}, /*keepdim=*/true)};
}

}  // namespace

void RegisterReductionVjps(VjpTable& t) {
  t[static_cast<int>(OpKind::kSum)] = &Sum;
  t[static_cast<int>(OpKind::kMean)] = &Mean;
  t[static_cast<int>(OpKind::kMax)] = &Extremum;
  t[static_cast<int>(OpKind::kMin)] = &Extremum;
  t[static_cast<int>(OpKind::kVar)] = &Var;
  t[static_cast<int>(OpKind::kSoftmax)] = &Softmax;
  t[static_cast<int>(OpKind::kLogSoftmax)] = &LogSoftmax;
}

}  // namespace tc::vjp_internal
