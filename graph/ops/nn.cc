// Neural-net primitives over NCHW tensors, and their backward ops.
#include <algorithm>
#include <initializer_list>
#include <utility>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "graph/op_attrs.h"
#include "graph/ops/families.h"
#include "graph/ops/infer_util.h"

namespace tc::ops_internal {
namespace {

// Each named attribute is a 2-element int list with entries in [its
// minimum, kMaxWindowAttr], so that the typed decoders (graph/op_attrs.h)
// may read it and window arithmetic stays far from overflow.
constexpr int64_t kMaxWindowAttr = int64_t{1} << 31;
absl::Status CheckPairs(const Attrs& attrs,
                        std::initializer_list<std::pair<absl::string_view, int64_t>> mins) {
  for (const auto& [name, min] : mins) {
    const std::vector<int64_t>& v = attrs.Ints(name);
    if (v.size() != 2 || v[0] < min || v[1] < min || v[0] > kMaxWindowAttr ||
        v[1] > kMaxWindowAttr) {
      return Invalid(name, " must be 2 values in [", min, ", 2^31], got ", ShapeToString(v));
    }
  }
  return absl::OkStatus();
}

// Output extent of a window op along one spatial dim (numbers: callers
// check for symbols first); saturating, as a kernel dim may be near 2^60.
int64_t WindowOut(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t span = DimAdd(DimMul(dilation, kernel - 1), 1);
  const int64_t padded = DimAdd(in, DimMul(2, pad));
  return padded < span ? 0 : (padded - span) / stride + 1;
}

absl::StatusOr<Shape> ConvOutShape(const TensorType& x, const TensorType& w, const Attrs& attrs) {
  TC_RETURN_IF_ERROR(RequireRank(x, 4, "input (N,C,H,W)"));
  TC_RETURN_IF_ERROR(RequireRank(w, 4, "weight (O,C/groups,KH,KW)"));
  TC_RETURN_IF_ERROR(RequireSameDType({x, w}));
  TC_RETURN_IF_ERROR(RequireFloating(x, "input"));
  TC_RETURN_IF_ERROR(CheckPairs(attrs, {{"stride", 1}, {"padding", 0}, {"dilation", 1}}));
  TC_RETURN_IF_ERROR(RequireStatic(x, 1, "input"));
  TC_RETURN_IF_ERROR(RequireStatic(w, 0, "weight"));
  const Conv2dOptions o = Conv2dOptionsOf(attrs);
  const int64_t groups = o.groups;
  if (groups < 1 || x.shape[1] % groups != 0 || w.shape[0] % groups != 0) {
    return Invalid("groups ", groups, " must divide input channels ", x.shape[1],
                   " and output channels ", w.shape[0]);
  }
  if (w.shape[1] * groups != x.shape[1]) {
    return Invalid("weight ", ShapeToString(w.shape), " expects ", w.shape[1] * groups,
                   " input channels, input ", ShapeToString(x.shape), " has ", x.shape[1]);
  }
  Shape out = {x.shape[0], w.shape[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    out[2 + i] =
        WindowOut(x.shape[2 + i], w.shape[2 + i], o.stride[i], o.padding[i], o.dilation[i]);
    if (out[2 + i] <= 0) {
      return Invalid("kernel ", ShapeToString(w.shape), " larger than padded input ",
                     ShapeToString(x.shape));
    }
  }
  return out;
}

// conv2d(x, w[, bias]): the bias is one value per output channel, shaped [O]
// or [1, O, 1, 1] (as a lowering pass folds a broadcast add into it).
absl::StatusOr<std::vector<TensorType>> InferConv(absl::Span<const TensorType> in,
                                                  const Attrs& attrs) {
  TC_ASSIGN_OR_RETURN(Shape out, ConvOutShape(in[0], in[1], attrs));
  TC_ASSIGN_OR_RETURN(const DType dtype, ProductDType(in[0].dtype, attrs));
  if (in.size() == 3) {
    // A mixed-precision convolution's bias is of its operands' dtype or its
    // result's (a bias add folded in after the autocast pass).
    const int64_t channels = in[1].shape[0];
    const Shape& b = in[2].shape;
    const DType bias = in[2].dtype;
    if ((bias != in[0].dtype && bias != dtype) ||
        (b != Shape{channels} && b != Shape{1, channels, 1, 1})) {
      return Invalid("bias must be ", DTypeName(dtype), "[", channels, "] or ", DTypeName(dtype),
                     "[1,", channels, ",1,1], got ", in[2].ToString());
    }
  }
  return One(dtype, std::move(out));
}

// conv2d_backward_data(grad, w){input_shape}: grad must be what conv2d gives.
absl::StatusOr<std::vector<TensorType>> InferConvBackwardData(absl::Span<const TensorType> in,
                                                              const Attrs& attrs) {
  const TensorType x{in[1].dtype, attrs.Ints("input_shape")};
  TC_ASSIGN_OR_RETURN(Shape out, ConvOutShape(x, in[1], attrs));
  if (out != in[0].shape || in[0].dtype != x.dtype) {
    return Invalid("grad ", in[0].ToString(), " does not match the conv output ",
                   ShapeToString(out));
  }
  TC_ASSIGN_OR_RETURN(const DType dtype, ProductDType(x.dtype, attrs));
  return One(dtype, x.shape);
}

// conv2d_backward_weight(grad, x){weight_shape}.
absl::StatusOr<std::vector<TensorType>> InferConvBackwardWeight(absl::Span<const TensorType> in,
                                                                const Attrs& attrs) {
  const TensorType w{in[1].dtype, attrs.Ints("weight_shape")};
  TC_ASSIGN_OR_RETURN(Shape out, ConvOutShape(in[1], w, attrs));
  if (out != in[0].shape || in[0].dtype != w.dtype) {
    return Invalid("grad ", in[0].ToString(), " does not match the conv output ",
                   ShapeToString(out));
  }
  TC_ASSIGN_OR_RETURN(const DType dtype, ProductDType(w.dtype, attrs));
  return One(dtype, w.shape);
}

OpCost ConvCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out,
                const Attrs& attrs) {
  // Every variant does the forward's multiply-adds: (C/groups)*KH*KW per
  // element of the forward output, which is input 0 of the backward ops.
  const bool backward = attrs.Has("input_shape") || attrs.Has("weight_shape");
  const TensorType& y = backward ? in[0] : out[0];
  const Shape& w = attrs.Has("weight_shape") ? attrs.Ints("weight_shape") : in[1].shape;
  double bytes = 0;
  for (const TensorType& t : in) bytes += t.bytes();
  for (const TensorType& t : out) bytes += t.bytes();
  return {2.0 * y.numel() * DimHint(w[1]) * DimHint(w[2]) * DimHint(w[3]), bytes};
}

absl::StatusOr<Shape> PoolOutShape(const TensorType& x, const Attrs& attrs) {
  TC_RETURN_IF_ERROR(RequireRank(x, 4, "input (N,C,H,W)"));
  TC_RETURN_IF_ERROR(RequireFloating(x, "input"));
  TC_RETURN_IF_ERROR(CheckPairs(attrs, {{"kernel", 1}, {"stride", 1}, {"padding", 0}}));
  if (attrs.Has("dilation")) TC_RETURN_IF_ERROR(CheckPairs(attrs, {{"dilation", 1}}));
  TC_RETURN_IF_ERROR(RequireStatic(x, 2, "input"));
  const Pool2dOptions o = Pool2dOptionsOf(attrs);
  Shape out = {x.shape[0], x.shape[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (2 * o.padding[i] > o.kernel[i]) {
      return Invalid("padding ", o.padding[i], " exceeds half the kernel ", o.kernel[i]);
    }
    out[2 + i] = WindowOut(x.shape[2 + i], o.kernel[i], o.stride[i], o.padding[i], o.dilation[i]);
    if (out[2 + i] <= 0) {
      return Invalid("window larger than padded input ", ShapeToString(x.shape));
    }
  }
  return out;
}

absl::StatusOr<std::vector<TensorType>> InferPool(absl::Span<const TensorType> in,
                                                  const Attrs& attrs) {
  TC_ASSIGN_OR_RETURN(Shape out, PoolOutShape(in[0], attrs));
  return One(in[0].dtype, std::move(out));
}

// max_pool2d_backward(grad, x) / avg_pool2d_backward(grad){input_shape}.
absl::StatusOr<std::vector<TensorType>> InferPoolBackward(absl::Span<const TensorType> in,
                                                          const Attrs& attrs) {
  const TensorType x = in.size() == 2 ? in[1] : TensorType{in[0].dtype, attrs.Ints("input_shape")};
  TC_ASSIGN_OR_RETURN(Shape out, PoolOutShape(x, attrs));
  if (out != in[0].shape || in[0].dtype != x.dtype) {
    return Invalid("grad ", in[0].ToString(), " does not match the pool output ",
                   ShapeToString(out));
  }
  return One(x.dtype, x.shape);
}

// Checks that each of `params` (weight, bias, stats) is `dtype[shape]`.
absl::Status RequireParams(absl::Span<const TensorType> params, DType dtype, const Shape& shape,
                           absl::string_view what) {
  for (const TensorType& p : params) {
    if (p.dtype != dtype || p.shape != shape) {
      return Invalid(what, " must be ", TensorType{dtype, shape}.ToString(), ", got ",
                     p.ToString());
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBatchNormInput(const TensorType& x) {
  if (x.rank() < 2) return Invalid("input must be (N,C,...), got ", x.ToString());
  TC_RETURN_IF_ERROR(RequireFloating(x, "input"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TensorType>> InferBatchNorm(absl::Span<const TensorType> in,
                                                       const Attrs&) {
  const TensorType& x = in[0];
  TC_RETURN_IF_ERROR(CheckBatchNormInput(x));
  const Shape c = {x.shape[1]};
  TC_RETURN_IF_ERROR(RequireParams(in.subspan(1), x.dtype, c, "weight and bias"));
  if (std::find(x.shape.begin(), x.shape.end(), 0) != x.shape.end()) {
    return Invalid("batch statistics need at least one value per channel, got ", x.ToString());
  }
  return std::vector<TensorType>{x, {x.dtype, c}, {x.dtype, c}};
}

absl::StatusOr<std::vector<TensorType>> InferBatchNormInference(absl::Span<const TensorType> in,
                                                                const Attrs&) {
  const TensorType& x = in[0];
  TC_RETURN_IF_ERROR(CheckBatchNormInput(x));
  TC_RETURN_IF_ERROR(
      RequireParams(in.subspan(1), x.dtype, {x.shape[1]}, "weight, bias and running stats"));
  return std::vector<TensorType>{x};
}

absl::StatusOr<std::vector<TensorType>> InferBatchNormBackward(absl::Span<const TensorType> in,
                                                               const Attrs&) {
  const TensorType &grad = in[0], &x = in[1];
  TC_RETURN_IF_ERROR(CheckBatchNormInput(x));
  if (grad != x) return Invalid("grad ", grad.ToString(), " must match input ", x.ToString());
  const Shape c = {x.shape[1]};
  TC_RETURN_IF_ERROR(RequireParams(in.subspan(2), x.dtype, c, "weight and stats"));
  return std::vector<TensorType>{x, {x.dtype, c}, {x.dtype, c}};
}

struct LayerNormShapes {
  Shape normalized;  // x.shape[axis:]
  Shape stats;       // x.shape[:axis]
};

absl::StatusOr<LayerNormShapes> LayerNormSplit(const TensorType& x, const Attrs& attrs) {
  TC_RETURN_IF_ERROR(RequireFloating(x, "input"));
  TC_ASSIGN_OR_RETURN(int64_t axis, WrapDim(attrs.Int("axis"), x.rank()));
  return LayerNormShapes{Shape(x.shape.begin() + axis, x.shape.end()),
                         Shape(x.shape.begin(), x.shape.begin() + axis)};
}

absl::StatusOr<std::vector<TensorType>> InferLayerNorm(absl::Span<const TensorType> in,
                                                       const Attrs& attrs) {
  const TensorType& x = in[0];
  TC_ASSIGN_OR_RETURN(LayerNormShapes s, LayerNormSplit(x, attrs));
  TC_RETURN_IF_ERROR(RequireParams(in.subspan(1), x.dtype, s.normalized, "weight and bias"));
  return std::vector<TensorType>{x, {x.dtype, s.stats}, {x.dtype, s.stats}};
}

absl::StatusOr<std::vector<TensorType>> InferLayerNormBackward(absl::Span<const TensorType> in,
                                                               const Attrs& attrs) {
  const TensorType &grad = in[0], &x = in[1];
  if (grad != x) return Invalid("grad ", grad.ToString(), " must match input ", x.ToString());
  TC_ASSIGN_OR_RETURN(LayerNormShapes s, LayerNormSplit(x, attrs));
  TC_RETURN_IF_ERROR(RequireParams(in.subspan(2, 1), x.dtype, s.normalized, "weight"));
  TC_RETURN_IF_ERROR(RequireParams(in.subspan(3), x.dtype, s.stats, "mean and var"));
  return std::vector<TensorType>{x, {x.dtype, s.normalized}, {x.dtype, s.normalized}};
}

absl::StatusOr<std::vector<TensorType>> InferEmbedding(absl::Span<const TensorType> in,
                                                       const Attrs&) {
  const TensorType &w = in[0], &idx = in[1];
  TC_RETURN_IF_ERROR(RequireRank(w, 2, "weight (num, dim)"));
  if (idx.dtype != DType::kI64) return Invalid("indices must be i64, got ", idx.ToString());
  Shape out = idx.shape;
  out.push_back(w.shape[1]);
  return One(w.dtype, std::move(out));
}

absl::StatusOr<std::vector<TensorType>> InferCheckClassIndex(absl::Span<const TensorType> in,
                                                             const Attrs& attrs) {
  if (in[0].dtype != DType::kI64) return Invalid("targets must be i64, got ", in[0].ToString());
  if (attrs.Int("classes") < 1)
    return Invalid("classes must be at least 1, got ", attrs.Int("classes"));
  return One(in[0].dtype, in[0].shape);
}

absl::StatusOr<std::vector<TensorType>> InferEmbeddingBackward(absl::Span<const TensorType> in,
                                                               const Attrs& attrs) {
  const TensorType &grad = in[0], &idx = in[1];
  if (idx.dtype != DType::kI64) return Invalid("indices must be i64, got ", idx.ToString());
  TC_RETURN_IF_ERROR(RequireFloating(grad, "grad"));
  if (grad.rank() != idx.rank() + 1 ||
      !std::equal(idx.shape.begin(), idx.shape.end(), grad.shape.begin())) {
    return Invalid("grad ", grad.ToString(), " must be indices shape ", ShapeToString(idx.shape),
                   " + [dim]");
  }
  const int64_t num = attrs.Int("num_weights");
  if (num < 0) return Invalid("num_weights must be non-negative, got ", num);
  return One(grad.dtype, {num, grad.shape.back()});
}

absl::StatusOr<std::vector<TensorType>> InferDropout(absl::Span<const TensorType> in,
                                                     const Attrs& attrs) {
  TC_RETURN_IF_ERROR(RequireFloating(in[0], "input"));
  for (int i : {1, 2}) {
    if (in[i] != TensorType{DType::kI64, {}}) {
      return Invalid(i == 1 ? "seed" : "offset", " must be an i64 scalar, got ", in[i].ToString());
    }
  }
  const double p = attrs.Float("p");
  if (!(p >= 0 && p < 1)) return Invalid("p must be in [0, 1), got ", p);
  return One(in[0].dtype, in[0].shape);
}

OpCost NormCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out, const Attrs&) {
  double bytes = 0;
  for (const TensorType& t : in) bytes += t.bytes();
  for (const TensorType& t : out) bytes += t.bytes();
  return {8.0 * in[0].numel(), bytes};
}

// Pooling visits the kernel window once per pooled element: the forward's
// output, which is the backward ops' input 0 (padding is at most half the
// kernel, so the pooled side is never the larger one).
OpCost PoolCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out,
                const Attrs& attrs) {
  double window = 1, bytes = 0;
  // Only the kernel: EstimateCost takes whatever attributes its caller has.
  for (int64_t k : attrs.Ints("kernel")) window *= k;
  for (const TensorType& t : in) bytes += t.bytes();
  for (const TensorType& t : out) bytes += t.bytes();
  return {window * std::min(in[0].numel(), out[0].numel()), bytes};
}

}  // namespace

std::vector<OpDef> NnOpDefs() {
  const std::vector<AttrSpec> conv = {{"dilation", AttrKind::kInts},
                                      {"groups", AttrKind::kInt},
                                      kOutDTypeAttr,
                                      {"padding", AttrKind::kInts},
                                      {"stride", AttrKind::kInts}};
  std::vector<AttrSpec> conv_data = conv, conv_weight = conv;
  conv_data.push_back({"input_shape", AttrKind::kInts});
  conv_weight.push_back({"weight_shape", AttrKind::kInts});
  const std::vector<AttrSpec> pool = {
      {"kernel", AttrKind::kInts}, {"padding", AttrKind::kInts}, {"stride", AttrKind::kInts}};
  std::vector<AttrSpec> max_pool = pool, pool_shape = pool;
  max_pool.push_back({"dilation", AttrKind::kInts, {}, /*optional=*/true});
  pool_shape.push_back({"input_shape", AttrKind::kInts});
  const std::vector<AttrSpec> eps = {{"eps", AttrKind::kFloat}};
  // Batch norm's kernels apply a relu to y as they write it.
  const EpilogueSpec relu = {{OpKind::kRelu}, {DType::kF32, DType::kF64}, 1};
  const std::vector<AttrSpec> ln = {{"axis", AttrKind::kInt}, {"eps", AttrKind::kFloat}};
  const uint32_t bw = kTraitBackward;
  const uint32_t nhwc = kTraitChannelsLastResult;
  return {
      {OpKind::kConv2d, "", OpFamily::kNn, 2, 3, conv, kTraitExpensive | nhwc, &InferConv,
       &ConvCost},
      {OpKind::kConv2dBackwardData, "", OpFamily::kNn, 2, 2, conv_data, kTraitExpensive | nhwc,
       &InferConvBackwardData, &ConvCost},
      {OpKind::kConv2dBackwardWeight, "", OpFamily::kNn, 2, 2, conv_weight, kTraitExpensive | bw,
       &InferConvBackwardWeight, &ConvCost},
      {OpKind::kMaxPool2d, "", OpFamily::kNn, 1, 1, max_pool, nhwc, &InferPool, &PoolCost},
      {OpKind::kMaxPool2dBackward, "", OpFamily::kNn, 2, 2, max_pool, bw | nhwc, &InferPoolBackward,
       &PoolCost},
      {OpKind::kAvgPool2d, "", OpFamily::kNn, 1, 1, pool, nhwc, &InferPool, &PoolCost},
      {OpKind::kAvgPool2dBackward, "", OpFamily::kNn, 1, 1, pool_shape, bw | nhwc,
       &InferPoolBackward, &PoolCost},
      {OpKind::kBatchNorm, "", OpFamily::kNn, 3, 3, eps, nhwc, &InferBatchNorm, &NormCost, relu},
      {OpKind::kBatchNormInference, "", OpFamily::kNn, 5, 5, eps, nhwc, &InferBatchNormInference,
       &NormCost, relu},
      {OpKind::kBatchNormBackward, "", OpFamily::kNn, 5, 5, eps, bw | nhwc, &InferBatchNormBackward,
       &NormCost},
      {OpKind::kLayerNorm, "", OpFamily::kNn, 3, 3, ln, kTraitNone, &InferLayerNorm, &NormCost},
      {OpKind::kLayerNormBackward, "", OpFamily::kNn, 5, 5, ln, bw, &InferLayerNormBackward,
       &NormCost},
      {OpKind::kEmbedding, "", OpFamily::kNn, 2, 2, {}, kTraitNone, &InferEmbedding},
      {OpKind::kCheckClassIndex,
       "",
       OpFamily::kNn,
       1,
       1,
       {{"classes", AttrKind::kInt}, {"ignore_index", AttrKind::kInt}},
       kTraitNonDifferentiable,
       &InferCheckClassIndex},
      {OpKind::kEmbeddingBackward,
       "",
       OpFamily::kNn,
       2,
       2,
       {{"num_weights", AttrKind::kInt}},
       bw,
       &InferEmbeddingBackward},
      {OpKind::kDropout,
       "",
       OpFamily::kNn,
       3,
       3,
       {{"p", AttrKind::kFloat}},
       kTraitElementwise | kTraitRandom | kTraitFusible,
       &InferDropout},
  };
}

}  // namespace tc::ops_internal
