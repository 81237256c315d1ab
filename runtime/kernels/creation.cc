// Eager kernels of the creation family.
#include <cmath>

#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/registry.h"

namespace tc::kernels {
namespace {

absl::StatusOr<TensorList> FullKernel(absl::Span<const Tensor>, const Attrs& attrs,
                                      absl::Span<const TensorType> out_types) {
  Tensor out = Tensor::Empty(out_types[0].shape, out_types[0].dtype);
  const double value = attrs.Float("value");
  if (value != 0 || std::signbit(value)) {  // storage starts zeroed: +0, not -0
    VisitDType(out.dtype(), [&](auto zero) {
      using T = decltype(zero);
      std::fill_n(out.data<T>(), out.numel(), static_cast<T>(value));
    });
  }
  return TensorList{out};
}

absl::StatusOr<TensorList> ArangeKernel(absl::Span<const Tensor>, const Attrs& attrs,
                                        absl::Span<const TensorType> out_types) {
  Tensor out = Tensor::Empty(out_types[0].shape, out_types[0].dtype);
  const double start = attrs.Float("start"), step = attrs.Float("step");
  VisitDType(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* p = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<T>(start + i * step);
  });
  return TensorList{out};
}

}  // namespace

void RegisterCreationKernels(KernelTable& t) {
  t.eager[static_cast<int>(OpKind::kFull)] = &FullKernel;
  t.eager[static_cast<int>(OpKind::kArange)] = &ArangeKernel;
}

}  // namespace tc::kernels
