// VJP (vector-Jacobian product) rules: for each differentiable op, the
// gradients of its inputs given the gradients of its outputs. A rule is
// ordinary code over Tensors that calls only ops from the op table: run on
// concrete tensors it is eager autograd; run while tracing it emits the
// backward half of the joint graph. Rules neither read tensor data nor keep
// state.
#ifndef TENSORCUT_AUTODIFF_VJP_H_
#define TENSORCUT_AUTODIFF_VJP_H_

#include <array>

#include "absl/types/span.h"
#include "runtime/ops.h"

namespace tc {

struct VjpContext {
  absl::Span<const Tensor> inputs;
  absl::Span<const Tensor> outputs;
  const Attrs& attrs;
  // One per output; undefined where no gradient flows into that output.
  absl::Span<const Tensor> grads;
};

// Returns one gradient per input; undefined for inputs that get none (integer
// inputs, condition masks).
using VjpFn = TensorList (*)(const VjpContext& ctx);

// nullptr for ops without a rule: non-differentiable ops (comparisons,
// argmax, ...) and backward-only ops (double backward is not supported).
VjpFn GetVjp(OpKind op);

// Whether an op must have a VJP rule: every op but the non-differentiable,
// backward-only and lowered ones (lowered forms exist only after autodiff).
// Tests check GetVjp against this.
bool NeedsVjp(OpKind op);

// Sums `grad` down to `shape` (undoing NumPy broadcasting).
Tensor SumToShape(const Tensor& grad, const Shape& shape);

namespace vjp_internal {
using VjpTable = std::array<VjpFn, kNumOps>;
void RegisterElementwiseVjps(VjpTable& table);
void RegisterReductionVjps(VjpTable& table);
void RegisterLayoutVjps(VjpTable& table);
void RegisterNnVjps(VjpTable& table);
void RegisterCollectiveVjps(VjpTable& table);
}  // namespace vjp_internal

}  // namespace tc

#endif  // TENSORCUT_AUTODIFF_VJP_H_
