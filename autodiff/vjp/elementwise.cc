// VJP rules of the elementwise family. Broadcast inputs get their gradient
// summed back to their own shape.
#include "autodiff/vjp.h"

namespace tc::vjp_internal {
namespace {

const Tensor& X(const VjpContext& c) { return c.inputs[0]; }
const Tensor& Y(const VjpContext& c) { return c.outputs[0]; }
const Tensor& G(const VjpContext& c) { return c.grads[0]; }
Tensor Zero(const Tensor& like) { return scalar(0, like.dtype()); }
// `grad` summed to the shape of input i.
Tensor To(const VjpContext& c, int i, const Tensor& grad) {
  return SumToShape(grad, c.inputs[i].shape());
}

TensorList Add(const VjpContext& c) { return {To(c, 0, G(c)), To(c, 1, G(c))}; }
TensorList Sub(const VjpContext& c) { return {To(c, 0, G(c)), To(c, 1, -G(c))}; }
TensorList Mul(const VjpContext& c) {
  return {To(c, 0, G(c) * c.inputs[1]), To(c, 1, G(c) * c.inputs[0])};
}
TensorList Div(const VjpContext& c) {
  const Tensor& b = c.inputs[1];
  return {To(c, 0, G(c) / b), To(c, 1, -G(c) * Y(c) / b)};
}

// maximum/minimum: the selected input takes the gradient; on a tie each input
// takes half (so the sum of both is the full gradient, as in PyTorch).
TensorList Extremum(const VjpContext& c, Tensor (*wins)(const Tensor&, const Tensor&)) {
  const Tensor &a = c.inputs[0], &b = c.inputs[1];
  const Tensor tie = eq(a, b);
  const Tensor half = G(c) * 0.5;
  const Tensor ga = where(tie, half, where(wins(a, b), G(c), Zero(a)));
  const Tensor gb = where(tie, half, where(wins(b, a), G(c), Zero(a)));
  return {To(c, 0, ga), To(c, 1, gb)};
}
TensorList Maximum(const VjpContext& c) { return Extremum(c, gt); }
TensorList Minimum(const VjpContext& c) { return Extremum(c, lt); }

TensorList Where(const VjpContext& c) {
  const Tensor& cond = c.inputs[0];
  const Tensor zero = Zero(G(c));
  return {Tensor(), To(c, 1, where(cond, G(c), zero)), To(c, 2, where(cond, zero, G(c)))};
}

TensorList Neg(const VjpContext& c) { return {-G(c)}; }
TensorList Exp(const VjpContext& c) { return {G(c) * Y(c)}; }
TensorList Log(const VjpContext& c) { return {G(c) / X(c)}; }
TensorList Log1p(const VjpContext& c) { return {G(c) / (X(c) + 1.0)}; }
// d erf(x) / dx = 2 / sqrt(pi) exp(-x^2).
TensorList Erf(const VjpContext& c) { return {G(c) * exp(-X(c) * X(c)) * 1.1283791670955126}; }
TensorList Sqrt(const VjpContext& c) { return {G(c) * 0.5 / Y(c)}; }
TensorList Rsqrt(const VjpContext& c) { return {G(c) * -0.5 * Y(c) / X(c)}; }
// abs: the subgradient 0 at 0, as PyTorch.
TensorList Abs(const VjpContext& c) { return {G(c) * sign(X(c))}; }
// relu: gradient 0 at 0. The mask reads the result (y > 0 exactly where
// x > 0), so that the backward needs only y, which the next layer saves
// anyway, and the input need not be kept (nor be written at all, where relu
// runs as its producer's post-op).
TensorList Relu(const VjpContext& c) { return {where(gt(Y(c), Zero(Y(c))), G(c), Zero(Y(c)))}; }
TensorList Sigmoid(const VjpContext& c) { return {G(c) * Y(c) * (1.0 - Y(c))}; }
TensorList Tanh(const VjpContext& c) { return {G(c) * (1.0 - Y(c) * Y(c))}; }
TensorList Gelu(const VjpContext& c) {
  return {gelu_backward(G(c), X(c), c.attrs.Str("approximate"))};
}
TensorList Pow(const VjpContext& c) {
  const double e = c.attrs.Float("exponent");
  return {G(c) * e * pow(X(c), e - 1)};
}
TensorList Cast(const VjpContext& c) {
  if (!IsFloating(X(c).dtype())) return {Tensor()};
  return {cast(G(c), X(c).dtype())};
}

}  // namespace

void RegisterElementwiseVjps(VjpTable& t) {
  auto set = [&](OpKind op, VjpFn fn) { t[static_cast<int>(op)] = fn; };
  set(OpKind::kAdd, &Add);
  set(OpKind::kSub, &Sub);
  set(OpKind::kMul, &Mul);
  set(OpKind::kDiv, &Div);
  set(OpKind::kMaximum, &Maximum);
  set(OpKind::kMinimum, &Minimum);
  set(OpKind::kWhere, &Where);
  set(OpKind::kNeg, &Neg);
  set(OpKind::kExp, &Exp);
  set(OpKind::kLog, &Log);
  set(OpKind::kLog1p, &Log1p);
  set(OpKind::kErf, &Erf);
  set(OpKind::kSqrt, &Sqrt);
  set(OpKind::kRsqrt, &Rsqrt);
  set(OpKind::kAbs, &Abs);
  set(OpKind::kRelu, &Relu);
  set(OpKind::kSigmoid, &Sigmoid);
  set(OpKind::kTanh, &Tanh);
  set(OpKind::kGelu, &Gelu);
  set(OpKind::kPow, &Pow);
  set(OpKind::kCast, &Cast);
}

}  // namespace tc::vjp_internal
