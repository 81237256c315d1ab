// Creation ops: constants made from attributes alone (no inputs), so a graph
// can always recompute them for free.
#include <cmath>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "graph/ops/families.h"
#include "graph/ops/infer_util.h"

namespace tc::ops_internal {
namespace {

// Converting a double outside an integer type to it is undefined (it gave
// the most negative value): refused, as PyTorch refuses the overflow.
absl::Status RequireRepresentable(double value, DType dtype) {
  const double limit = dtype == DType::kI64 ? 0x1p63 : 0x1p31;
  if (IsInteger(dtype) && !(value >= -limit && value < limit)) {
    return Invalid("value ", value, " cannot be converted to ", DTypeName(dtype),
                   " without overflow");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TensorType>> InferFull(absl::Span<const TensorType>,
                                                  const Attrs& attrs) {
  const std::vector<int64_t>& shape = attrs.Ints("shape");
  TC_RETURN_IF_ERROR(CheckShapeSize(shape));
  const DType dtype = attrs.Dtype("dtype");
  const double value = attrs.Float("value");
  TC_RETURN_IF_ERROR(RequireRepresentable(value, dtype));
  return One(dtype, shape);
}

absl::StatusOr<std::vector<TensorType>> InferArange(absl::Span<const TensorType>,
                                                    const Attrs& attrs) {
  const double start = attrs.Float("start"), end = attrs.Float("end"), step = attrs.Float("step");
  if (step == 0) return Invalid("step must be nonzero");
  const double n = std::ceil((end - start) / step);
  // Checked as a double: converting one past int64 to an integer is undefined.
  if (!(n <= static_cast<double>(kMaxElements))) {
    return Invalid("[", start, ", ", end, ") in steps of ", step, " has more than 2^60 elements");
  }
  const DType dtype = attrs.Dtype("dtype");
  if (n > 0) {
    TC_RETURN_IF_ERROR(RequireRepresentable(start, dtype));
    TC_RETURN_IF_ERROR(RequireRepresentable(start + (n - 1) * step, dtype));
  }
  return One(dtype, {n > 0 ? static_cast<int64_t>(n) : 0});
}

absl::StatusOr<std::vector<TensorType>> InferSizeScalar(absl::Span<const TensorType>,
                                                        const Attrs& attrs) {
  const DType dtype = attrs.Dtype("dtype");
  if (dtype == DType::kBool) return Invalid("a size is not a bool");
  return One(dtype, {});
}

OpCost CreationCost(absl::Span<const TensorType>, absl::Span<const TensorType> out, const Attrs&) {
  return {0, static_cast<double>(out[0].bytes())};
}

}  // namespace

std::vector<OpDef> CreationOpDefs() {
  return {
      {OpKind::kFull,
       "",
       OpFamily::kCreation,
       0,
       0,
       {{"dtype", AttrKind::kDType}, {"shape", AttrKind::kInts}, {"value", AttrKind::kFloat}},
       kTraitCreation,
       &InferFull,
       &CreationCost},
      {OpKind::kArange,
       "",
       OpFamily::kCreation,
       0,
       0,
       {{"dtype", AttrKind::kDType},
        {"end", AttrKind::kFloat},
        {"start", AttrKind::kFloat},
        {"step", AttrKind::kFloat}},
       kTraitCreation | kTraitNonDifferentiable,
       &InferArange,
       &CreationCost},
      {OpKind::kSizeScalar,
       "",
       OpFamily::kCreation,
       0,
       0,
       {{"dtype", AttrKind::kDType}, {"size", AttrKind::kInt}},
       kTraitCreation | kTraitNonDifferentiable,
       &InferSizeScalar,
       &CreationCost},
  };
}

}  // namespace tc::ops_internal
