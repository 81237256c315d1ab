// Kernels of the collectives (graph/ops/collective.cc) over the process
// groups of runtime/collectives.h.
#include "absl/strings/str_cat.h"
#include "runtime/collectives.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"

namespace tc::kernels {
namespace {

// x..., weight -> bucket: each x (any strides) times the weight, one after
// another in the bucket, whose sum over the group then starts.
absl::Status AllReduceStartInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                absl::Span<const Tensor> outputs) {
  TC_ASSIGN_OR_RETURN(CollectiveGroup * group, FindCollectiveGroup(attrs.Str("group")));
  const Tensor& bucket = outputs[0];
  const double weight = *in.back().data<double>();
  VisitFloatDType(bucket.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T w = static_cast<T>(weight);
    T* o = static_cast<T*>(bucket.raw_data());
    for (const Tensor& x : in.first(in.size() - 1)) {
      const T* xp = static_cast<const T*>(x.raw_data());
      ForEachOffset<1>(x.shape(), {x.strides()}, [&](int64_t i) { *o++ = xp[i] * w; });
    }
  });
  return group->StartAllReduce(bucket);
}

absl::Status Wait(const Tensor& bucket, const Attrs& attrs) {
  TC_ASSIGN_OR_RETURN(CollectiveGroup * group, FindCollectiveGroup(attrs.Str("group")));
  return group->WaitAllReduce(bucket);
}

// A compiled program gives the wait its bucket's own memory as its result
// (codegen/program.h); anywhere else the summed bucket is copied.
absl::Status AllReduceWaitInto(absl::Span<const Tensor> in, const Attrs& attrs,
                               absl::Span<const Tensor> outputs) {
  TC_RETURN_IF_ERROR(Wait(in[0], attrs));
  if (outputs[0].raw_data() != in[0].raw_data()) CopyStrided(in[0], outputs[0]);
  return absl::OkStatus();
}

// Eagerly, the wait's result is its bucket.
absl::StatusOr<TensorList> AllReduceWait(absl::Span<const Tensor> in, const Attrs& attrs,
                                         absl::Span<const TensorType>) {
  TC_RETURN_IF_ERROR(Wait(in[0], attrs));
  return TensorList{in[0]};
}

}  // namespace

void RegisterCollectiveKernels(KernelTable& t) {
  BindInto<&AllReduceStartInto>(t, OpKind::kAllReduceStart);
  t.into[static_cast<int>(OpKind::kAllReduceWait)] = &AllReduceWaitInto;
  t.eager[static_cast<int>(OpKind::kAllReduceWait)] = &AllReduceWait;
}

}  // namespace tc::kernels
