#include "runtime/ops.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "graph/symbolic.h"

namespace tc {
namespace {

std::vector<int64_t> Vec(absl::Span<const int64_t> s) { return {s.begin(), s.end()}; }

Tensor Unary(OpKind op, const Tensor& x) { return Call1(op, {x}); }
Tensor Binary(OpKind op, const Tensor& a, const Tensor& b) { return Call1(op, {a, b}); }

[[noreturn]] void Invalid(const std::string& message) {
  throw Error(absl::InvalidArgumentError(message));
}

// Nonzero as true: a bool tensor as it is, any other compared with zero.
Tensor Truth(const Tensor& x) {
  return x.dtype() == DType::kBool ? x : ne(x, scalar(0, x.dtype()));
}

Attrs ReduceAttrs(std::vector<int64_t> dims, bool keepdim) {
  return {{"dims", std::move(dims)}, {"keepdim", keepdim}};
}

}  // namespace

Tensor Call1(OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs) {
  return ValueOrThrow(Call(op, inputs, attrs))[0];
}

TensorList CallN(OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs) {
  return ValueOrThrow(Call(op, inputs, attrs));
}

// ---- creation

Tensor empty(absl::Span<const int64_t> shape, DType dtype) { return Tensor::Empty(shape, dtype); }

Tensor full(absl::Span<const int64_t> shape, double value, DType dtype) {
  return Call1(OpKind::kFull, {}, {{"shape", Vec(shape)}, {"value", value}, {"dtype", dtype}});
}
Tensor zeros(absl::Span<const int64_t> shape, DType dtype) { return full(shape, 0, dtype); }
Tensor ones(absl::Span<const int64_t> shape, DType dtype) { return full(shape, 1, dtype); }
Tensor scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor arange(double start, double end, double step, DType dtype) {
  return Call1(OpKind::kArange, {},
               {{"start", start}, {"end", end}, {"step", step}, {"dtype", dtype}});
}
Tensor arange(int64_t end, DType dtype) {
  if (IsSymbolic(end)) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("arange: end ", DimToString(end), " is symbolic; arange takes numbers")));
  }
  return arange(0, static_cast<double>(end), 1, dtype);
}
Tensor size_scalar(int64_t size, DType dtype) {
  if (!IsSymbolic(size)) return scalar(static_cast<double>(size), dtype);
  return Call1(OpKind::kSizeScalar, {}, {{"size", size}, {"dtype", dtype}});
}

namespace {

template <typename Draw>
Tensor Random(absl::Span<const int64_t> shape, DType dtype, Generator* gen, Draw draw) {
  if (!IsFloating(dtype) || dtype == DType::kBF16) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("random tensors must be f32 or f64, got ", DTypeName(dtype))));
  }
  Generator& g = gen != nullptr ? *gen : DefaultGenerator();
  Tensor t = Tensor::Empty(shape, dtype);
  const int64_t n = t.numel();
  const uint64_t first = g.Advance(n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = draw(g.seed(), first + i);
    if (dtype == DType::kF32) {
      t.data<float>()[i] = static_cast<float>(v);
    } else {
      t.data<double>()[i] = v;
    }
  }
  return t;
}

}  // namespace

Tensor randn(absl::Span<const int64_t> shape, DType dtype, Generator* gen) {
  return Random(shape, dtype, gen, RandomNormal);
}

Tensor rand(absl::Span<const int64_t> shape, DType dtype, Generator* gen, double low, double high) {
  return Random(shape, dtype, gen, [&](uint64_t seed, uint64_t counter) {
    return low + (high - low) * RandomUniform(seed, counter);
  });
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, absl::Span<const int64_t> shape) {
  if (static_cast<int64_t>(values.size()) != NumElements(shape)) {
    throw Error(absl::InvalidArgumentError(absl::StrCat(
        "from_vector: ", values.size(), " values do not fill shape ", ShapeToString(shape))));
  }
  Tensor t = Tensor::Empty(shape, DTypeOf<T>());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}
template Tensor from_vector<float>(const std::vector<float>&, absl::Span<const int64_t>);
template Tensor from_vector<double>(const std::vector<double>&, absl::Span<const int64_t>);
template Tensor from_vector<int64_t>(const std::vector<int64_t>&, absl::Span<const int64_t>);
template Tensor from_vector<int32_t>(const std::vector<int32_t>&, absl::Span<const int64_t>);
template Tensor from_vector<bool>(const std::vector<bool>&, absl::Span<const int64_t>);

// ---- elementwise

Tensor add(const Tensor& a, const Tensor& b) { return Binary(OpKind::kAdd, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return Binary(OpKind::kSub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return Binary(OpKind::kMul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return Binary(OpKind::kDiv, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return Binary(OpKind::kMaximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return Binary(OpKind::kMinimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return Binary(OpKind::kEq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return Binary(OpKind::kNe, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return Binary(OpKind::kLt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return Binary(OpKind::kLe, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return Binary(OpKind::kGt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return Binary(OpKind::kGe, a, b); }
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return Call1(OpKind::kWhere, {cond, a, b});
}
Tensor logical_not(const Tensor& x) { return eq(Truth(x), scalar(0, DType::kBool)); }
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return where(Truth(a), Truth(b), scalar(0, DType::kBool));
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return where(Truth(a), scalar(1, DType::kBool), Truth(b));
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  if (mask.dtype() != DType::kBool) {
    Invalid(absl::StrCat("masked_fill: mask must be bool, got ", mask.type().ToString()));
  }
  // The mask broadcasts to x's shape, never x to the mask's.
  const Shape& xs = x.shape();
  const Shape& ms = mask.shape();
  bool fits = ms.size() <= xs.size();
  for (size_t i = 1; fits && i <= ms.size(); ++i) {
    fits = ms[ms.size() - i] == 1 || ms[ms.size() - i] == xs[xs.size() - i];
  }
  if (!fits) {
    Invalid(absl::StrCat("masked_fill: mask ", mask.type().ToString(),
                         " does not broadcast to the input ", x.type().ToString()));
  }
  return where(mask, scalar(value, x.dtype()), x);
}
Tensor neg(const Tensor& x) { return Unary(OpKind::kNeg, x); }
Tensor exp(const Tensor& x) { return Unary(OpKind::kExp, x); }
Tensor log(const Tensor& x) { return Unary(OpKind::kLog, x); }
Tensor log1p(const Tensor& x) { return Unary(OpKind::kLog1p, x); }
Tensor erf(const Tensor& x) { return Unary(OpKind::kErf, x); }
Tensor sqrt(const Tensor& x) { return Unary(OpKind::kSqrt, x); }
Tensor rsqrt(const Tensor& x) { return Unary(OpKind::kRsqrt, x); }
Tensor abs(const Tensor& x) { return Unary(OpKind::kAbs, x); }
Tensor sign(const Tensor& x) { return Unary(OpKind::kSign, x); }
Tensor relu(const Tensor& x) { return Unary(OpKind::kRelu, x); }
Tensor sigmoid(const Tensor& x) { return Unary(OpKind::kSigmoid, x); }
Tensor tanh(const Tensor& x) { return Unary(OpKind::kTanh, x); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  return Call1(OpKind::kGelu, {x}, {{"approximate", approximate}});
}
Tensor gelu_backward(const Tensor& grad, const Tensor& x, const std::string& approximate) {
  return Call1(OpKind::kGeluBackward, {grad, x}, {{"approximate", approximate}});
}
Tensor pow(const Tensor& x, double exponent) {
  return Call1(OpKind::kPow, {x}, {{"exponent", exponent}});
}
Tensor cast(const Tensor& x, DType dtype) { return Call1(OpKind::kCast, {x}, {{"dtype", dtype}}); }
Tensor stop_gradient(const Tensor& x) { return Unary(OpKind::kStopGradient, x); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar(b, a.dtype())); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar(b, a.dtype())); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar(b, a.dtype())); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar(b, a.dtype())); }
Tensor operator+(double a, const Tensor& b) { return add(scalar(a, b.dtype()), b); }
Tensor operator-(double a, const Tensor& b) { return sub(scalar(a, b.dtype()), b); }
Tensor operator*(double a, const Tensor& b) { return mul(scalar(a, b.dtype()), b); }
Tensor operator/(double a, const Tensor& b) { return div(scalar(a, b.dtype()), b); }

// ---- reductions

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  // As PyTorch: bools count, and i32 sums in i64.
  const bool widen = x.dtype() == DType::kBool || x.dtype() == DType::kI32;
  const Tensor& counted = widen ? cast(x, DType::kI64) : x;
  return Call1(OpKind::kSum, {counted}, ReduceAttrs(std::move(dims), keepdim));
}
Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return Call1(OpKind::kMean, {x}, ReduceAttrs(std::move(dims), keepdim));
}
Tensor max(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return Call1(OpKind::kMax, {x}, ReduceAttrs(std::move(dims), keepdim));
}
Tensor min(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return Call1(OpKind::kMin, {x}, ReduceAttrs(std::move(dims), keepdim));
}
Tensor var(const Tensor& x, std::vector<int64_t> dims, bool keepdim, int64_t correction) {
  Attrs attrs = ReduceAttrs(std::move(dims), keepdim);
  attrs.Set("correction", correction);
  return Call1(OpKind::kVar, {x}, attrs);
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return Call1(OpKind::kArgmax, {x}, {{"dim", dim}, {"keepdim", keepdim}});
}
Tensor softmax(const Tensor& x, int64_t dim) {
  return Call1(OpKind::kSoftmax, {x}, {{"dim", dim}});
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  return Call1(OpKind::kLogSoftmax, {x}, {{"dim", dim}});
}

// ---- linear algebra and layout

Tensor matmul(const Tensor& a, const Tensor& b) { return Binary(OpKind::kMatmul, a, b); }
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (b.defined()) return Call1(OpKind::kLinear, {x, w, b});
  // matmul wants rank >= 2: fold the leading dims into one and restore them.
  if (x.dim() == 0) Invalid("linear: input must have rank >= 1, got a scalar");
  if (w.dim() != 2)
    Invalid(absl::StrCat("linear: weight must be [out, in], got ", w.type().ToString()));
  std::vector<int64_t> out_shape = Vec(x.shape());
  out_shape.back() = w.size(0);
  return reshape(matmul(reshape(x, {-1, x.size(-1)}), transpose(w, 0, 1)), std::move(out_shape));
}
Tensor permute(const Tensor& x, std::vector<int64_t> dims) {
  return Call1(OpKind::kPermute, {x}, {{"dims", std::move(dims)}});
}
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  const int64_t rank = x.dim();
  const int64_t d0 = ValueOrThrow(WrapDim(dim0, rank)), d1 = ValueOrThrow(WrapDim(dim1, rank));
  std::vector<int64_t> dims(rank);
  for (int64_t i = 0; i < rank; ++i) dims[i] = i;
  std::swap(dims[d0], dims[d1]);
  return permute(x, std::move(dims));
}
Tensor reshape(const Tensor& x, std::vector<int64_t> shape) {
  // Resolve a single -1 here so that graphs always carry the full shape.
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) {
        throw Error(absl::InvalidArgumentError(
            absl::StrCat("reshape: more than one -1 in ", ShapeToString(shape))));
      }
      inferred = static_cast<int64_t>(i);
    } else {
      known = DimMul(known, shape[i]);
    }
  }
  if (inferred >= 0 && known != 0) {
    // Over symbols too: [s0,28,28] to [-1,784] is [s0,784].
    const std::optional<int64_t> rest = DimDivide(x.numel(), known);
    if (rest) shape[inferred] = *rest;
  }
  if (x.defined() && shape == x.shape()) return x;  // no node for a no-op, eager or traced
  return Call1(OpKind::kReshape, {x}, {{"shape", std::move(shape)}});
}
Tensor expand(const Tensor& x, std::vector<int64_t> shape) {
  return Call1(OpKind::kExpand, {x}, {{"shape", std::move(shape)}});
}
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return Call1(OpKind::kSlice, {x}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}});
}
Tensor slice_backward(const Tensor& grad, std::vector<int64_t> input_shape, int64_t dim,
                      int64_t start, int64_t end, int64_t step) {
  return Call1(OpKind::kSliceBackward, {grad},
               {{"input_shape", std::move(input_shape)},
                {"dim", dim},
                {"start", start},
                {"end", end},
                {"step", step}});
}
Tensor concat(absl::Span<const Tensor> xs, int64_t dim) {
  return Call1(OpKind::kConcat, xs, {{"dim", dim}});
}
Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  const int64_t d = ValueOrThrow(WrapDim(dim, x.dim()));
  const int64_t size = x.size(d);
  const bool known = !IsSymbolic(size);
  if (known ? index < -size || index >= size : index < 0) {
    Invalid(absl::StrCat("select: index ", index, " is out of range for dim ", dim, " of ",
                         x.type().ToString()));
  }
  const int64_t start = index < 0 ? index + size : index;
  std::vector<int64_t> shape = Vec(x.shape());
  shape.erase(shape.begin() + d);
  return reshape(slice(x, d, start, start + 1), std::move(shape));
}
Tensor unsqueeze(const Tensor& x, int64_t dim) {
  const int64_t d = ValueOrThrow(WrapDim(dim, x.dim() + 1));
  std::vector<int64_t> shape = Vec(x.shape());
  shape.insert(shape.begin() + d, 1);
  return reshape(x, std::move(shape));
}
Tensor squeeze(const Tensor& x, int64_t dim) {
  const int64_t d = ValueOrThrow(WrapDim(dim, std::max<int64_t>(x.dim(), 1)));
  if (x.dim() == 0 || x.size(d) != 1) return x;
  std::vector<int64_t> shape = Vec(x.shape());
  shape.erase(shape.begin() + d);
  return reshape(x, std::move(shape));
}
Tensor squeeze(const Tensor& x) {
  std::vector<int64_t> shape;
  for (int64_t size : x.shape()) {
    if (size != 1) shape.push_back(size);
  }
  return shape.size() == x.shape().size() ? x : reshape(x, std::move(shape));
}
Tensor stack(absl::Span<const Tensor> xs, int64_t dim) {
  if (xs.empty()) Invalid("stack: expects a non-empty list of tensors");
  const int64_t d = ValueOrThrow(WrapDim(dim, xs[0].dim() + 1));
  std::vector<Tensor> parts;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].type() != xs[0].type()) {
      Invalid(absl::StrCat("stack: every tensor must be ", xs[0].type().ToString(), ", tensor ", i,
                           " is ", xs[i].type().ToString()));
    }
    parts.push_back(unsqueeze(xs[i], d));
  }
  return concat(parts, d);
}
Tensor pad(const Tensor& x, std::vector<int64_t> pads, double value) {
  return Call1(OpKind::kPad, {x}, {{"pads", std::move(pads)}, {"value", value}});
}

// ---- neural-net primitives

Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dOptions& options) {
  return Call1(OpKind::kConv2d, {x, w}, ToAttrs(options));
}
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& options) {
  return Call1(OpKind::kConv2d, {x, w, bias}, ToAttrs(options));
}
Tensor conv2d_backward_data(const Tensor& grad, const Tensor& w, std::vector<int64_t> input_shape,
                            const Conv2dOptions& options) {
  Attrs attrs = ToAttrs(options);
  attrs.Set("input_shape", std::move(input_shape));
  return Call1(OpKind::kConv2dBackwardData, {grad, w}, attrs);
}
Tensor conv2d_backward_weight(const Tensor& grad, const Tensor& x,
                              std::vector<int64_t> weight_shape, const Conv2dOptions& options) {
  Attrs attrs = ToAttrs(options);
  attrs.Set("weight_shape", std::move(weight_shape));
  return Call1(OpKind::kConv2dBackwardWeight, {grad, x}, attrs);
}

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options) {
  return Call1(OpKind::kMaxPool2d, {x}, ToAttrs(options));
}
Tensor max_pool2d_backward(const Tensor& grad, const Tensor& x, const Pool2dOptions& options) {
  return Call1(OpKind::kMaxPool2dBackward, {grad, x}, ToAttrs(options));
}
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options) {
  return Call1(OpKind::kAvgPool2d, {x}, ToAttrs(options));
}
Tensor avg_pool2d_backward(const Tensor& grad, std::vector<int64_t> input_shape,
                           const Pool2dOptions& options) {
  Attrs attrs = ToAttrs(options);
  attrs.Set("input_shape", std::move(input_shape));
  return Call1(OpKind::kAvgPool2dBackward, {grad}, attrs);
}

NormResult batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  TensorList out = CallN(OpKind::kBatchNorm, {x, weight, bias}, {{"eps", eps}});
  return {out[0], out[1], out[2]};
}
Tensor batch_norm_inference(const Tensor& x, const Tensor& weight, const Tensor& bias,
                            const Tensor& running_mean, const Tensor& running_var, double eps) {
  return Call1(OpKind::kBatchNormInference, {x, weight, bias, running_mean, running_var},
               {{"eps", eps}});
}
NormGrads batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                              const Tensor& mean, const Tensor& var, double eps) {
  TensorList out = CallN(OpKind::kBatchNormBackward, {grad, x, weight, mean, var}, {{"eps", eps}});
  return {out[0], out[1], out[2]};
}
NormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t axis,
                      double eps) {
  TensorList out = CallN(OpKind::kLayerNorm, {x, weight, bias}, {{"axis", axis}, {"eps", eps}});
  return {out[0], out[1], out[2]};
}
NormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                              const Tensor& mean, const Tensor& var, int64_t axis, double eps) {
  TensorList out = CallN(OpKind::kLayerNormBackward, {grad, x, weight, mean, var},
                         {{"axis", axis}, {"eps", eps}});
  return {out[0], out[1], out[2]};
}
Tensor check_class_index(const Tensor& targets, int64_t classes, int64_t ignore_index) {
  return Call1(OpKind::kCheckClassIndex, {targets},
               {{"classes", classes}, {"ignore_index", ignore_index}});
}
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& mask, bool causal, std::optional<double> scale) {
  const double head_dim = q.defined() && q.dim() > 0 ? static_cast<double>(q.size(q.dim() - 1)) : 0;
  return sdpa(q, k, v, mask, causal, scale.value_or(1.0 / std::sqrt(head_dim))).out;
}
AttentionResult sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                     bool causal, double scale) {
  TensorList in = {q, k, v};
  if (mask.defined()) in.push_back(mask);
  TensorList out = CallN(OpKind::kSdpa, in, {{"causal", causal}, {"scale", scale}});
  return {out[0], out[1]};
}
AttentionGrads sdpa_backward(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& out, const Tensor& lse, const Tensor& mask, bool causal,
                             double scale) {
  TensorList in = {grad, q, k, v, out, lse};
  if (mask.defined()) in.push_back(mask);
  TensorList grads = CallN(OpKind::kSdpaBackward, in, {{"causal", causal}, {"scale", scale}});
  return {grads[0], grads[1], grads[2]};
}
Tensor embedding(const Tensor& weight, const Tensor& indices) {
  return Call1(OpKind::kEmbedding, {weight, indices});
}
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights) {
  return Call1(OpKind::kEmbeddingBackward, {grad, indices}, {{"num_weights", num_weights}});
}
Tensor dropout(const Tensor& x, double p, const Tensor& seed, const Tensor& offset) {
  return Call1(OpKind::kDropout, {x, seed, offset}, {{"p", p}});
}
Tensor dropout(const Tensor& x, double p, uint64_t seed, uint64_t offset) {
  return dropout(x, p, from_vector<int64_t>({static_cast<int64_t>(seed)}, {}),
                 from_vector<int64_t>({static_cast<int64_t>(offset)}, {}));
}
Tensor dropout(const Tensor& x, double p, Generator* gen) {
  const RandomState state = DrawRandomState(gen != nullptr ? *gen : DefaultGenerator(), x.numel());
  return dropout(x, p, state.seed, state.offset);
}

Tensor all_reduce_start(absl::Span<const Tensor> tensors, const Tensor& weight,
                        const std::string& group) {
  std::vector<Tensor> operands(tensors.begin(), tensors.end());
  operands.push_back(weight);
  return Call1(OpKind::kAllReduceStart, operands, {{"group", group}});
}
Tensor all_reduce_wait(const Tensor& bucket, const std::string& group) {
  return Call1(OpKind::kAllReduceWait, {bucket}, {{"group", group}});
}
TensorList all_reduce_sum(absl::Span<const Tensor> tensors, const std::string& group) {
  return unpack_bucket(
      all_reduce_wait(all_reduce_start(tensors, scalar(1.0, DType::kF64), group), group), tensors);
}
TensorList unpack_bucket(const Tensor& bucket, absl::Span<const Tensor> tensors) {
  TensorList out;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    const int64_t n = t.numel();
    out.push_back(reshape(slice(bucket, 0, offset, offset + n), t.shape()));
    offset += n;
  }
  return out;
}

}  // namespace tc
