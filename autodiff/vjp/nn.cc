// VJP rules of the neural-net primitives: each forward op's gradient is its
// backward op from the table, plus, for the normalisations, the gradient that
// flows through their mean and var outputs when someone uses them.
#include <limits>

#include "autodiff/vjp.h"
#include "graph/op_attrs.h"

namespace tc::vjp_internal {
namespace {

const Tensor& G(const VjpContext& c) { return c.grads[0]; }

TensorList Conv2d(const VjpContext& c) {
  const Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Conv2dOptions o = Conv2dOptionsOf(c.attrs);
  TensorList grads = {conv2d_backward_data(G(c), w, x.shape(), o),
                      conv2d_backward_weight(G(c), x, w.shape(), o)};
  if (c.inputs.size() == 3) {  // the bias: the gradient summed per channel
    grads.push_back(reshape(sum(G(c), {0, 2, 3}), c.inputs[2].shape()));
  }
  return grads;
}

// y = conv2d_backward_data(g, w) is linear in g and in w, the adjoint of
// x -> conv2d(x, w): so dg = conv2d(G, w), and dw is the weight gradient of
// that convolution with G as its input and g as its output gradient. This
// makes the op usable in forward graphs (ConvTranspose2d).
TensorList Conv2dBackwardData(const VjpContext& c) {
  const Tensor &g = c.inputs[0], &w = c.inputs[1];
  const Conv2dOptions o = Conv2dOptionsOf(c.attrs);
  return {conv2d(G(c), w, o), conv2d_backward_weight(g, G(c), w.shape(), o)};
}

TensorList MaxPool2d(const VjpContext& c) {
  return {max_pool2d_backward(G(c), c.inputs[0], Pool2dOptionsOf(c.attrs))};
}

TensorList AvgPool2d(const VjpContext& c) {
  return {avg_pool2d_backward(G(c), c.inputs[0].shape(), Pool2dOptionsOf(c.attrs))};
}

// Statistics over `reduce` dims: reshaped so they broadcast against x.
Tensor Broadcastable(const Tensor& stat, const Tensor& x, const std::vector<int64_t>& reduce) {
  Shape shape = x.shape();
  for (int64_t d : reduce) shape[d] = 1;
  return reshape(stat, shape);
}

// The gradient reaching x through a normalisation's mean and (biased) var
// outputs, whose statistics run over `reduce` dims of `count` elements each.
Tensor StatsGrad(const VjpContext& c, const std::vector<int64_t>& reduce, int64_t count) {
  const Tensor& x = c.inputs[0];
  const Tensor &g_mean = c.grads[1], &g_var = c.grads[2];
  Tensor gx;
  if (g_mean.defined()) gx = Broadcastable(g_mean, x, reduce) / size_scalar(count, x.dtype());
  if (g_var.defined()) {
    const Tensor centered = x - Broadcastable(c.outputs[1], x, reduce);
    const Tensor g = Broadcastable(g_var, x, reduce) * centered;
    const Tensor term = IsSymbolic(count) ? g * 2.0 / size_scalar(count, x.dtype())
                                          : g * (2.0 / static_cast<double>(count));
    gx = gx.defined() ? gx + term : term;
  }
  return gx;
}

std::vector<int64_t> AllBut(int64_t rank, int64_t keep) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != keep) dims.push_back(d);
  }
  return dims;
}

// Adds the stats gradient (if any) to the normalisation's dx.
TensorList WithStats(const VjpContext& c, NormGrads grads, const std::vector<int64_t>& reduce,
                     int64_t count) {
  const Tensor stats = StatsGrad(c, reduce, count);
  Tensor gx = grads.x;
  if (stats.defined()) gx = gx.defined() ? gx + stats : stats;
  return {gx, grads.weight, grads.bias};
}

TensorList BatchNorm(const VjpContext& c) {
  const Tensor& x = c.inputs[0];
  const std::vector<int64_t> reduce = AllBut(x.dim(), 1);
  NormGrads grads;
  if (G(c).defined()) {
    grads =
        batch_norm_backward(G(c), x, c.inputs[1], c.outputs[1], c.outputs[2], c.attrs.Float("eps"));
  }
  return WithStats(c, grads, reduce, *DimDivide(x.numel(), x.size(1)));
}

TensorList BatchNormInference(const VjpContext& c) {
  const Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Tensor &mean = c.inputs[3], &var = c.inputs[4];
  const std::vector<int64_t> reduce = AllBut(x.dim(), 1);
  const Tensor invstd = rsqrt(var + c.attrs.Float("eps"));
  const Tensor scale = w * invstd;  // [C]
  const Tensor centered = x - Broadcastable(mean, x, reduce);
  const Tensor g_sum = sum(G(c), reduce);
  const Tensor g_centered = sum(G(c) * centered, reduce);
  return {G(c) * Broadcastable(scale, x, reduce), g_centered * invstd, g_sum, -g_sum * scale,
          g_centered * w * -0.5 * invstd * invstd * invstd};
}

TensorList LayerNorm(const VjpContext& c) {
  const Tensor& x = c.inputs[0];
  const int64_t axis = ValueOrThrow(WrapDim(c.attrs.Int("axis"), x.dim()));
  std::vector<int64_t> reduce;
  int64_t count = 1;
  for (int64_t d = axis; d < x.dim(); ++d) {
    reduce.push_back(d);
    count = DimMul(count, x.size(d));
  }
  NormGrads grads;
  if (G(c).defined()) {
    grads = layer_norm_backward(G(c), x, c.inputs[1], c.outputs[1], c.outputs[2], axis,
                                c.attrs.Float("eps"));
  }
  return WithStats(c, grads, reduce, count);
}

TensorList Embedding(const VjpContext& c) {
  return {embedding_backward(G(c), c.inputs[1], c.inputs[0].size(0)), Tensor()};
}

// y = x * mask / (1 - p), so dx = g * mask / (1 - p): dropout of g with the
// same seed and offset draws the same mask.
TensorList Dropout(const VjpContext& c) {
  return {dropout(G(c), c.attrs.Float("p"), c.inputs[1], c.inputs[2]), Tensor(), Tensor()};
}

// Attention's probabilities written out, exp(scores - lse), for the
// gradients the fused backward does not give: a floating mask's and lse's.
Tensor AttentionProbabilities(const VjpContext& c) {
  const Tensor &q = c.inputs[0], &k = c.inputs[1];
  const int64_t rank = q.dim();
  Tensor scores = matmul(q, transpose(k, rank - 2, rank - 1)) * c.attrs.Float("scale");
  const Tensor minus_inf = scalar(-std::numeric_limits<double>::infinity(), q.dtype());
  if (c.inputs.size() == 4) {
    const Tensor& mask = c.inputs[3];
    scores = mask.dtype() == DType::kBool ? where(mask, scores, minus_inf) : scores + mask;
  }
  if (c.attrs.Bool("causal")) {
    const int64_t s = q.size(rank - 2), t = k.size(rank - 2);
    const Tensor future = gt(reshape(arange(t), {1, t}), reshape(arange(s), {s, 1}));
    scores = where(future, minus_inf, scores);
  }
  Shape lse_shape = c.outputs[1].shape();
  lse_shape.push_back(1);
  return exp(scores - reshape(cast(c.outputs[1], q.dtype()), lse_shape));
}

// dq, dk, dv from the fused backward. The scores' gradient ds is written out
// only where something needs it: a floating mask (its gradient is ds summed
// to its shape; nothing reads it when the mask is not learned, and the joint
// graph drops it) or a gradient reaching lse (d lse / d scores = the
// probabilities).
TensorList Sdpa(const VjpContext& c) {
  const Tensor &q = c.inputs[0], &k = c.inputs[1], &v = c.inputs[2];
  const int64_t rank = q.dim();
  const bool has_mask = c.inputs.size() == 4;
  const Tensor mask = has_mask ? c.inputs[3] : Tensor();
  const bool causal = c.attrs.Bool("causal");
  const double scale = c.attrs.Float("scale");
  AttentionGrads grads{zeros(q.shape(), q.dtype()), zeros(k.shape(), k.dtype()),
                       zeros(v.shape(), v.dtype())};
  if (G(c).defined()) {
    grads = sdpa_backward(G(c), q, k, v, c.outputs[0], c.outputs[1], mask, causal, scale);
  }
  const Tensor& g_lse = c.grads[1];
  const bool floating_mask = has_mask && mask.dtype() != DType::kBool;
  if (!g_lse.defined() && !floating_mask) return {grads.q, grads.k, grads.v};
  const Tensor probs = AttentionProbabilities(c);
  Tensor ds = zeros(probs.shape(), probs.dtype());
  if (G(c).defined()) {
    const Tensor delta = sum(G(c) * c.outputs[0], {rank - 1}, /*keepdim=*/true);
    ds = probs * (matmul(G(c), transpose(v, rank - 2, rank - 1)) - delta);
  }
  if (g_lse.defined()) {
    Shape column = g_lse.shape();
    column.push_back(1);
    const Tensor ds_lse = probs * reshape(cast(g_lse, q.dtype()), column);
    grads.q = grads.q + matmul(ds_lse, k) * scale;
    grads.k = grads.k + matmul(transpose(ds_lse, rank - 2, rank - 1), q) * scale;
    ds = ds + ds_lse;
  }
  TensorList out = {grads.q, grads.k, grads.v};
  if (has_mask) out.push_back(floating_mask ? SumToShape(ds, mask.shape()) : Tensor());
  return out;
}

}  // namespace

void RegisterNnVjps(VjpTable& t) {
  t[static_cast<int>(OpKind::kConv2d)] = &Conv2d;
  t[static_cast<int>(OpKind::kConv2dBackwardData)] = &Conv2dBackwardData;
  t[static_cast<int>(OpKind::kMaxPool2d)] = &MaxPool2d;
  t[static_cast<int>(OpKind::kAvgPool2d)] = &AvgPool2d;
  t[static_cast<int>(OpKind::kBatchNorm)] = &BatchNorm;
  t[static_cast<int>(OpKind::kBatchNormInference)] = &BatchNormInference;
  t[static_cast<int>(OpKind::kLayerNorm)] = &LayerNorm;
  t[static_cast<int>(OpKind::kEmbedding)] = &Embedding;
  t[static_cast<int>(OpKind::kDropout)] = &Dropout;
  t[static_cast<int>(OpKind::kSdpa)] = &Sdpa;
}

}  // namespace tc::vjp_internal
