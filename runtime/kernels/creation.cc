// Eager kernels of the creation family.
#include <cmath>

#include "absl/strings/str_cat.h"
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

// Only ever called with a number: a graph's symbols have values before it runs.
absl::StatusOr<TensorList> SizeScalarKernel(absl::Span<const Tensor>, const Attrs& attrs,
                                            absl::Span<const TensorType> out_types) {
  const int64_t size = attrs.Int("size");
  if (IsSymbolic(size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("size_scalar: size ", DimToString(size), " has no value"));
  }
  Tensor out = Tensor::Empty({}, out_types[0].dtype);
  VisitDType(out.dtype(), [&](auto zero) { *out.data<decltype(zero)>() = size; });
  return TensorList{out};
}

}  // namespace

void RegisterCreationKernels(KernelTable& t) {
  t.eager[static_cast<int>(OpKind::kFull)] = &FullKernel;
  t.eager[static_cast<int>(OpKind::kArange)] = &ArangeKernel;
  t.eager[static_cast<int>(OpKind::kSizeScalar)] = &SizeScalarKernel;
}

}  // namespace tc::kernels
