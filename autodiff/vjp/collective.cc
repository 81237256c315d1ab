// VJP rules of the collectives. The sum over ranks is linear and every
// rank's loss reads it, so a rank's gradient of its bucket is the sum over
// ranks of their gradients of the summed bucket: the backward of an
// all-reduce is an all-reduce (of the incoming gradient, over the same
// group). What SyncBatchNorm's statistics need (nn/normalization.h).
#include "autodiff/vjp.h"

namespace tc::vjp_internal {
namespace {

// The wait is the identity on values.
TensorList AllReduceWait(const VjpContext& c) { return {c.grads[0]}; }

// Each tensor's slice of the summed gradient, times the weight; the weight
// gets none.
TensorList AllReduceStart(const VjpContext& c) {
  const Tensor& g = c.grads[0];
  TensorList grads(c.inputs.size());
  if (!g.defined()) return grads;
  const TensorList summed = unpack_bucket(all_reduce_sum({g}, c.attrs.Str("group"))[0],
                                          c.inputs.first(c.inputs.size() - 1));
  const Tensor weight = cast(c.inputs.back(), g.dtype());
  for (size_t i = 0; i < summed.size(); ++i) grads[i] = summed[i] * weight;
  return grads;
}

}  // namespace

void RegisterCollectiveVjps(VjpTable& t) {
  t[static_cast<int>(OpKind::kAllReduceStart)] = &AllReduceStart;
  t[static_cast<int>(OpKind::kAllReduceWait)] = &AllReduceWait;
}

}  // namespace tc::vjp_internal
