// Linear algebra and layout: matmul (batched, batch dims broadcast), linear,
// and the view-like ops that rearrange elements without computing new ones.
#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "graph/ops/families.h"
#include "graph/ops/infer_util.h"

namespace tc::ops_internal {
namespace {

absl::StatusOr<std::vector<TensorType>> InferMatmul(absl::Span<const TensorType> in,
                                                    const Attrs& attrs) {
  const TensorType &a = in[0], &b = in[1];
  TC_RETURN_IF_ERROR(RequireSameDType(in));
  TC_RETURN_IF_ERROR(RequireFloating(a, "operands"));
  if (a.rank() < 2 || b.rank() < 2) {
    return Invalid("operands must have rank >= 2, got ", a.ToString(), " x ", b.ToString());
  }
  if (a.shape[a.rank() - 1] != b.shape[b.rank() - 2]) {
    return Invalid("inner dims differ: ", ShapeToString(a.shape), " x ", ShapeToString(b.shape));
  }
  absl::StatusOr<Shape> batch =
      BroadcastShapes(absl::MakeConstSpan(a.shape).subspan(0, a.rank() - 2),
                      absl::MakeConstSpan(b.shape).subspan(0, b.rank() - 2));
  if (!batch.ok()) return Invalid("batch dims: ", batch.status().message());
  Shape out = *std::move(batch);
  out.push_back(a.shape[a.rank() - 2]);
  out.push_back(b.shape[b.rank() - 1]);
  TC_ASSIGN_OR_RETURN(const DType dtype, ProductDType(a.dtype, attrs));
  return One(dtype, std::move(out));
}

OpCost MatmulCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out, const Attrs&) {
  const int64_t k = DimHint(in[0].shape.back());
  return {2.0 * out[0].numel() * k,
          static_cast<double>(in[0].bytes() + in[1].bytes() + out[0].bytes())};
}

absl::StatusOr<std::vector<TensorType>> InferLinear(absl::Span<const TensorType> in,
                                                    const Attrs& attrs) {
  const TensorType &x = in[0], &w = in[1], &b = in[2];
  TC_RETURN_IF_ERROR(RequireSameDType(in));
  TC_RETURN_IF_ERROR(RequireFloating(x, "input"));
  if (x.rank() < 1 || w.rank() != 2 || b.rank() != 1) {
    return Invalid("expected input [..,in], weight [out,in], bias [out], got ", x.ToString(), ", ",
                   w.ToString(), ", ", b.ToString());
  }
  if (x.shape.back() != w.shape[1] || b.shape[0] != w.shape[0]) {
    return Invalid("input ", ShapeToString(x.shape), " does not fit weight ",
                   ShapeToString(w.shape), " and bias ", ShapeToString(b.shape));
  }
  Shape out = x.shape;
  out.back() = w.shape[0];
  TC_ASSIGN_OR_RETURN(const DType dtype, ProductDType(x.dtype, attrs));
  return One(dtype, std::move(out));
}

OpCost LinearCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out, const Attrs&) {
  return {2.0 * out[0].numel() * DimHint(in[1].shape[1]) + out[0].numel(),
          static_cast<double>(in[0].bytes() + in[1].bytes() + in[2].bytes() + out[0].bytes())};
}

absl::StatusOr<std::vector<TensorType>> InferPermute(absl::Span<const TensorType> in,
                                                     const Attrs& attrs) {
  const std::vector<int64_t>& dims = attrs.Ints("dims");
  if (static_cast<int64_t>(dims.size()) != in[0].rank()) {
    return Invalid("dims ", ShapeToString(dims), " do not match rank ", in[0].rank());
  }
  TC_RETURN_IF_ERROR(NormalizeDims(dims, in[0].rank()).status());
  Shape out;
  for (int64_t d : dims) out.push_back(in[0].shape[*WrapDim(d, in[0].rank())]);
  return One(in[0].dtype, std::move(out));
}

absl::StatusOr<std::vector<TensorType>> InferReshape(absl::Span<const TensorType> in,
                                                     const Attrs& attrs) {
  const std::vector<int64_t>& shape = attrs.Ints("shape");
  if (!CheckShapeSize(shape).ok()) {
    return Invalid("cannot reshape ", in[0].ToString(), " to ", ShapeToString(shape));
  }
  if (NumElements(shape) != NumElements(in[0].shape)) {
    return Invalid("cannot reshape ", in[0].ToString(), " (", DimToString(NumElements(in[0].shape)),
                   " elements) to ", ShapeToString(shape));
  }
  return One(in[0].dtype, shape);
}

absl::StatusOr<std::vector<TensorType>> InferExpand(absl::Span<const TensorType> in,
                                                    const Attrs& attrs) {
  const std::vector<int64_t>& target = attrs.Ints("shape");
  const TensorType& x = in[0];
  if (static_cast<int64_t>(target.size()) < x.rank()) {
    return Invalid("cannot expand ", x.ToString(), " to fewer dims ", ShapeToString(target));
  }
  Shape out(target.begin(), target.end());
  const int64_t lead = out.size() - x.rank();
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    const int64_t have = i < lead ? 1 : x.shape[i - lead];
    if (out[i] == -1 && i >= lead) out[i] = have;
    if ((out[i] < 0 && !IsSymbolic(out[i])) || (have != 1 && have != out[i])) {
      return Invalid("cannot expand ", x.ToString(), " to ", ShapeToString(target));
    }
  }
  TC_RETURN_IF_ERROR(CheckShapeSize(out));
  return One(x.dtype, std::move(out));
}

absl::StatusOr<std::vector<TensorType>> InferSlice(absl::Span<const TensorType> in,
                                                   const Attrs& attrs) {
  TC_ASSIGN_OR_RETURN(int64_t dim, WrapDim(attrs.Int("dim"), in[0].rank()));
  TC_ASSIGN_OR_RETURN(SliceBounds b, NormalizeSlice(in[0].shape[dim], attrs.Int("start"),
                                                    attrs.Int("end"), attrs.Int("step")));
  Shape out = in[0].shape;
  out[dim] = b.length;
  return One(in[0].dtype, std::move(out));
}

absl::StatusOr<std::vector<TensorType>> InferSliceBackward(absl::Span<const TensorType> in,
                                                           const Attrs& attrs) {
  const std::vector<int64_t>& input_shape = attrs.Ints("input_shape");
  for (int64_t d : input_shape) {
    if (d < 0 && !IsSymbolic(d)) {
      return Invalid("negative dimension in input_shape ", ShapeToString(input_shape));
    }
  }
  TC_ASSIGN_OR_RETURN(std::vector<TensorType> sliced,
                      InferSlice({TensorType{in[0].dtype, input_shape}}, attrs));
  if (sliced[0].shape != in[0].shape) {
    return Invalid("grad ", in[0].ToString(), " does not match the slice of ",
                   ShapeToString(input_shape), " (", sliced[0].ToString(), ")");
  }
  return One(in[0].dtype, input_shape);
}

absl::StatusOr<std::vector<TensorType>> InferConcat(absl::Span<const TensorType> in,
                                                    const Attrs& attrs) {
  TC_RETURN_IF_ERROR(RequireSameDType(in));
  TC_ASSIGN_OR_RETURN(int64_t dim, WrapDim(attrs.Int("dim"), in[0].rank()));
  Shape out = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    bool fits = in[i].rank() == in[0].rank();
    for (int64_t d = 0; fits && d < in[0].rank(); ++d) {
      fits = d == dim || in[i].shape[d] == in[0].shape[d];
    }
    if (!fits) {
      return Invalid("input ", i, " ", in[i].ToString(), " does not fit input 0 ", in[0].ToString(),
                     " along dim ", dim);
    }
    out[dim] = DimAdd(out[dim], in[i].shape[dim]);
  }
  return One(in[0].dtype, std::move(out));
}

absl::StatusOr<std::vector<TensorType>> InferPad(absl::Span<const TensorType> in,
                                                 const Attrs& attrs) {
  const std::vector<int64_t>& pads = attrs.Ints("pads");
  if (static_cast<int64_t>(pads.size()) != 2 * in[0].rank()) {
    return Invalid("pads ", ShapeToString(pads), " must have 2 entries per dim of ",
                   in[0].ToString());
  }
  Shape out = in[0].shape;
  for (int64_t d = 0; d < in[0].rank(); ++d) {
    if (pads[2 * d] < 0 || pads[2 * d + 1] < 0) {
      return Invalid("pads must be non-negative, got ", ShapeToString(pads));
    }
    out[d] = DimAdd(out[d], pads[2 * d] + pads[2 * d + 1]);
  }
  return One(in[0].dtype, std::move(out));
}

OpCost ViewCost(absl::Span<const TensorType>, absl::Span<const TensorType>, const Attrs&) {
  return {0, 0};
}

// What oneDNN's matmul applies as post-ops: eltwise and binary algorithms,
// on f32 results (f64 runs on Eigen, which takes none).
EpilogueSpec OneDnnPostOps() {
  return {
      {OpKind::kRelu, OpKind::kGelu, OpKind::kTanh, OpKind::kSigmoid, OpKind::kExp, OpKind::kAdd,
       OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kMaximum, OpKind::kMinimum},
      {DType::kF32}};
}

}  // namespace

std::vector<OpDef> LayoutOpDefs() {
  const std::vector<AttrSpec> slice = {{"dim", AttrKind::kInt},
                                       {"end", AttrKind::kInt},
                                       {"start", AttrKind::kInt},
                                       {"step", AttrKind::kInt}};
  std::vector<AttrSpec> slice_backward = slice;
  slice_backward.push_back({"input_shape", AttrKind::kInts});
  return {
      {OpKind::kMatmul,
       "",
       OpFamily::kLayout,
       2,
       2,
       {kOutDTypeAttr},
       kTraitExpensive,
       &InferMatmul,
       &MatmulCost,
       OneDnnPostOps()},
      {OpKind::kLinear,
       "",
       OpFamily::kLayout,
       3,
       3,
       {kOutDTypeAttr},
       kTraitExpensive,
       &InferLinear,
       &LinearCost,
       OneDnnPostOps()},
      {OpKind::kPermute,
       "",
       OpFamily::kLayout,
       1,
       1,
       {{"dims", AttrKind::kInts}},
       kTraitView,
       &InferPermute,
       &ViewCost},
      {OpKind::kReshape,
       "",
       OpFamily::kLayout,
       1,
       1,
       {{"shape", AttrKind::kInts}},
       kTraitView,
       &InferReshape,
       &ViewCost},
      {OpKind::kExpand,
       "",
       OpFamily::kLayout,
       1,
       1,
       {{"shape", AttrKind::kInts}},
       kTraitView,
       &InferExpand,
       &ViewCost},
      {OpKind::kSlice, "", OpFamily::kLayout, 1, 1, slice, kTraitView, &InferSlice, &ViewCost},
      {OpKind::kSliceBackward, "", OpFamily::kLayout, 1, 1, slice_backward, kTraitBackward,
       &InferSliceBackward},
      {OpKind::kConcat,
       "",
       OpFamily::kLayout,
       1,
       -1,
       {{"dim", AttrKind::kInt}},
       kTraitNone,
       &InferConcat},
      {OpKind::kPad,
       "",
       OpFamily::kLayout,
       1,
       1,
       {{"pads", AttrKind::kInts}, {"value", AttrKind::kFloat}},
       kTraitNone,
       &InferPad},
  };
}

}  // namespace tc::ops_internal
