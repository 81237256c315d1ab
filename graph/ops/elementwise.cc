// Elementwise ops: NumPy broadcasting over all inputs; arithmetic and
// comparisons need equal dtypes (no implicit promotion: a cast is explicit).
#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "graph/op_attrs.h"
#include "graph/ops/families.h"
#include "graph/ops/infer_util.h"

namespace tc::ops_internal {
namespace {

absl::StatusOr<Shape> BroadcastAll(absl::Span<const TensorType> inputs) {
  Shape out = inputs.empty() ? Shape{} : inputs[0].shape;
  for (size_t i = 1; i < inputs.size(); ++i) {
    TC_ASSIGN_OR_RETURN(out, BroadcastShapes(out, inputs[i].shape));
  }
  return out;
}

absl::StatusOr<std::vector<TensorType>> InferBinary(absl::Span<const TensorType> in, const Attrs&) {
  TC_RETURN_IF_ERROR(RequireSameDType(in));
  if (in[0].dtype == DType::kBool) return Invalid("arithmetic on bool; cast first");
  TC_ASSIGN_OR_RETURN(Shape shape, BroadcastAll(in));
  return One(in[0].dtype, std::move(shape));
}

absl::StatusOr<std::vector<TensorType>> InferCompare(absl::Span<const TensorType> in,
                                                     const Attrs&) {
  TC_RETURN_IF_ERROR(RequireSameDType(in));
  TC_ASSIGN_OR_RETURN(Shape shape, BroadcastAll(in));
  return One(DType::kBool, std::move(shape));
}

absl::StatusOr<std::vector<TensorType>> InferWhere(absl::Span<const TensorType> in, const Attrs&) {
  if (in[0].dtype != DType::kBool) return Invalid("condition must be bool, got ", in[0].ToString());
  TC_RETURN_IF_ERROR(RequireSameDType(in.subspan(1)));
  TC_ASSIGN_OR_RETURN(Shape shape, BroadcastAll(in));
  return One(in[1].dtype, std::move(shape));
}

absl::StatusOr<std::vector<TensorType>> InferFloatUnary(absl::Span<const TensorType> in,
                                                        const Attrs&) {
  TC_RETURN_IF_ERROR(RequireFloating(in[0], "input"));
  return One(in[0].dtype, in[0].shape);
}

absl::StatusOr<std::vector<TensorType>> InferNumericUnary(absl::Span<const TensorType> in,
                                                          const Attrs&) {
  if (in[0].dtype == DType::kBool) return Invalid("input must be numeric, got ", in[0].ToString());
  return One(in[0].dtype, in[0].shape);
}

absl::StatusOr<std::vector<TensorType>> InferGeluBackward(absl::Span<const TensorType> in,
                                                          const Attrs& attrs) {
  TC_RETURN_IF_ERROR(RequireFloating(in[0], "grad"));
  if (in[0] != in[1]) {
    return Invalid("grad ", in[0].ToString(), " and input ", in[1].ToString(), " differ");
  }
  return One(in[0].dtype, in[0].shape);
}

absl::StatusOr<std::vector<TensorType>> InferGelu(absl::Span<const TensorType> in,
                                                  const Attrs& attrs) {
  return in.size() == 1 ? InferFloatUnary(in, attrs) : InferGeluBackward(in, attrs);
}

absl::StatusOr<std::vector<TensorType>> InferCast(absl::Span<const TensorType> in,
                                                  const Attrs& attrs) {
  return One(attrs.Dtype("dtype"), in[0].shape);
}

OpDef Binary(OpKind kind) {
  const bool commutative = kind == OpKind::kAdd || kind == OpKind::kMul ||
                           kind == OpKind::kMaximum || kind == OpKind::kMinimum;
  return {kind,
          "",
          OpFamily::kElementwise,
          2,
          2,
          {},
          kTraitElementwise | kTraitFusible | (commutative ? kTraitCommutative : kTraitNone),
          &InferBinary};
}
OpDef Compare(OpKind kind) {
  return {kind,
          "",
          OpFamily::kElementwise,
          2,
          2,
          {},
          kTraitElementwise | kTraitFusible | kTraitNonDifferentiable,
          &InferCompare};
}
OpDef FloatUnary(OpKind kind) {
  return {kind,
          "",
          OpFamily::kElementwise,
          1,
          1,
          {},
          kTraitElementwise | kTraitFusible,
          &InferFloatUnary};
}
OpDef NumericUnary(OpKind kind) {
  return {kind,
          "",
          OpFamily::kElementwise,
          1,
          1,
          {},
          kTraitElementwise | kTraitFusible,
          &InferNumericUnary};
}

}  // namespace

std::vector<OpDef> ElementwiseOpDefs() {
  const AttrSpec approximate{"approximate", AttrKind::kEnum, kGeluApproximationNames};
  return {
      Binary(OpKind::kAdd),
      Binary(OpKind::kSub),
      Binary(OpKind::kMul),
      Binary(OpKind::kDiv),
      Binary(OpKind::kMaximum),
      Binary(OpKind::kMinimum),
      Compare(OpKind::kEq),
      Compare(OpKind::kNe),
      Compare(OpKind::kLt),
      Compare(OpKind::kLe),
      Compare(OpKind::kGt),
      Compare(OpKind::kGe),
      {OpKind::kWhere,
       "",
       OpFamily::kElementwise,
       3,
       3,
       {},
       kTraitElementwise | kTraitFusible,
       &InferWhere},
      NumericUnary(OpKind::kNeg),
      FloatUnary(OpKind::kExp),
      FloatUnary(OpKind::kLog),
      FloatUnary(OpKind::kLog1p),
      FloatUnary(OpKind::kErf),
      FloatUnary(OpKind::kSqrt),
      FloatUnary(OpKind::kRsqrt),
      NumericUnary(OpKind::kAbs),
      {OpKind::kSign,
       "",
       OpFamily::kElementwise,
       1,
       1,
       {},
       kTraitElementwise | kTraitFusible | kTraitNonDifferentiable,
       &InferNumericUnary},
      NumericUnary(OpKind::kRelu),
      FloatUnary(OpKind::kSigmoid),
      FloatUnary(OpKind::kTanh),
      {OpKind::kGelu,
       "",
       OpFamily::kElementwise,
       1,
       1,
       {approximate},
       kTraitElementwise | kTraitFusible,
       &InferGelu},
      {OpKind::kGeluBackward,
       "",
       OpFamily::kElementwise,
       2,
       2,
       {approximate},
       kTraitElementwise | kTraitFusible | kTraitBackward,
       &InferGelu},
      {OpKind::kPow,
       "",
       OpFamily::kElementwise,
       1,
       1,
       {{"exponent", AttrKind::kFloat}},
       kTraitElementwise | kTraitFusible,
       &InferFloatUnary},
      {OpKind::kCast,
       "",
       OpFamily::kElementwise,
       1,
       1,
       {{"dtype", AttrKind::kDType}},
       kTraitElementwise | kTraitFusible,
       &InferCast},
      {OpKind::kStopGradient,
       "",
       OpFamily::kElementwise,
       1,
       1,
       {},
       kTraitElementwise | kTraitFusible | kTraitNonDifferentiable,
       &InferFloatUnary},
  };
}

}  // namespace tc::ops_internal
