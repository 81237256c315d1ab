// Reductions over a set of dims (all dims when empty), with keepdim; argmax
// over one dim; softmax and log_softmax along one dim (shape unchanged).
#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "graph/ops/families.h"
#include "graph/ops/infer_util.h"

namespace tc::ops_internal {
namespace {

Shape ReducedShape(const Shape& shape, absl::Span<const int64_t> dims, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced) {
      out.push_back(shape[d]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

absl::StatusOr<std::vector<TensorType>> InferReduce(absl::Span<const TensorType> in,
                                                    const Attrs& attrs) {
  if (in[0].dtype == DType::kBool) return Invalid("input must be numeric, got ", in[0].ToString());
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NormalizeDims(attrs.Ints("dims"), in[0].rank()));
  return One(in[0].dtype, ReducedShape(in[0].shape, dims, attrs.Bool("keepdim")));
}

// sum: i32 would overflow where PyTorch counts in i64; tc::sum casts first.
absl::StatusOr<std::vector<TensorType>> InferSum(absl::Span<const TensorType> in,
                                                 const Attrs& attrs) {
  if (in[0].dtype == DType::kI32) {
    return Invalid("input i32 is summed as i64: cast it first (as tc::sum does), got ",
                   in[0].ToString());
  }
  return InferReduce(in, attrs);
}

absl::StatusOr<std::vector<TensorType>> InferFloatReduce(absl::Span<const TensorType> in,
                                                         const Attrs& attrs) {
  TC_RETURN_IF_ERROR(RequireFloating(in[0], "input"));
  return InferReduce(in, attrs);
}

// max/min: an empty reduction has no identity.
absl::StatusOr<std::vector<TensorType>> InferExtremum(absl::Span<const TensorType> in,
                                                      const Attrs& attrs) {
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NormalizeDims(attrs.Ints("dims"), in[0].rank()));
  for (int64_t d : dims) {
    if (in[0].shape[d] == 0)
      return Invalid("reduction over empty dim ", d, " of ", in[0].ToString());
  }
  return InferReduce(in, attrs);
}

absl::StatusOr<std::vector<TensorType>> InferArgmax(absl::Span<const TensorType> in,
                                                    const Attrs& attrs) {
  if (in[0].dtype == DType::kBool) return Invalid("input must be numeric, got ", in[0].ToString());
  TC_ASSIGN_OR_RETURN(const int64_t dim, WrapDim(attrs.Int("dim"), in[0].rank()));
  if (in[0].shape[dim] == 0) return Invalid("argmax over empty dim ", dim);
  return One(DType::kI64,
             ReducedShape(in[0].shape, absl::MakeConstSpan(&dim, 1), attrs.Bool("keepdim")));
}

absl::StatusOr<std::vector<TensorType>> InferSoftmax(absl::Span<const TensorType> in,
                                                     const Attrs& attrs) {
  TC_RETURN_IF_ERROR(RequireFloating(in[0], "input"));
  TC_RETURN_IF_ERROR(WrapDim(attrs.Int("dim"), in[0].rank()).status());
  return One(in[0].dtype, in[0].shape);
}

// A reduction reads every input element once (var twice: mean, then the
// squared deviations).
OpCost ReduceCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out, const Attrs&) {
  return {static_cast<double>(in[0].numel()), static_cast<double>(in[0].bytes() + out[0].bytes())};
}

OpCost VarCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out,
               const Attrs& attrs) {
  OpCost cost = ReduceCost(in, out, attrs);
  cost.flops *= 3;
  cost.bytes += in[0].bytes();
  return cost;
}

OpCost SoftmaxCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out,
                   const Attrs&) {
  return {5.0 * in[0].numel(), static_cast<double>(in[0].bytes() + out[0].bytes())};
}

}  // namespace

std::vector<OpDef> ReductionOpDefs() {
  const std::vector<AttrSpec> reduce = {{"dims", AttrKind::kInts}, {"keepdim", AttrKind::kBool}};
  const std::vector<AttrSpec> var = {
      {"correction", AttrKind::kInt}, {"dims", AttrKind::kInts}, {"keepdim", AttrKind::kBool}};
  const std::vector<AttrSpec> one_dim = {{"dim", AttrKind::kInt}};
  return {
      {OpKind::kSum, "", OpFamily::kReduction, 1, 1, reduce, kTraitReduction, &InferSum,
       &ReduceCost},
      {OpKind::kMean, "", OpFamily::kReduction, 1, 1, reduce, kTraitReduction, &InferFloatReduce,
       &ReduceCost},
      {OpKind::kMax, "", OpFamily::kReduction, 1, 1, reduce, kTraitReduction, &InferExtremum,
       &ReduceCost},
      {OpKind::kMin, "", OpFamily::kReduction, 1, 1, reduce, kTraitReduction, &InferExtremum,
       &ReduceCost},
      {OpKind::kVar, "", OpFamily::kReduction, 1, 1, var, kTraitReduction, &InferFloatReduce,
       &VarCost},
      {OpKind::kArgmax,
       "",
       OpFamily::kReduction,
       1,
       1,
       {{"dim", AttrKind::kInt}, {"keepdim", AttrKind::kBool}},
       kTraitReduction | kTraitNonDifferentiable,
       &InferArgmax,
       &ReduceCost},
      {OpKind::kSoftmax, "", OpFamily::kReduction, 1, 1, one_dim, kTraitNone, &InferSoftmax,
       &SoftmaxCost},
      {OpKind::kLogSoftmax, "", OpFamily::kReduction, 1, 1, one_dim, kTraitNone, &InferSoftmax,
       &SoftmaxCost},
  };
}

}  // namespace tc::ops_internal
