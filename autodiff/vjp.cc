#include "autodiff/vjp.h"

namespace tc {
namespace {

const vjp_internal::VjpTable& Table() {
  static const vjp_internal::VjpTable* table = [] {
    auto* t = new vjp_internal::VjpTable{};
    vjp_internal::RegisterElementwiseVjps(*t);
    vjp_internal::RegisterReductionVjps(*t);
    vjp_internal::RegisterLayoutVjps(*t);
    vjp_internal::RegisterNnVjps(*t);
    vjp_internal::RegisterCollectiveVjps(*t);
    return t;
  }();
  return *table;
}

}  // namespace

VjpFn GetVjp(OpKind op) { return Table()[static_cast<int>(op)]; }

bool NeedsVjp(OpKind op) {
  const OpDef& def = GetOpDef(op);
  return def.family != OpFamily::kLowered && !def.Has(kTraitNonDifferentiable) &&
         !def.Has(kTraitBackward) && !def.Has(kTraitCreation);
}

Tensor SumToShape(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.shape()[d] != 1)) dims.push_back(d);
  }
  Tensor summed = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return reshape(summed, shape);
}

}  // namespace tc
