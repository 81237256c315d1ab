// Calls a generic lambda with a value of the C++ type behind a DType, so one
// templated kernel body serves every dtype:
//
//   VisitDType(t.dtype(), [&](auto zero) { using T = decltype(zero); ... });
#ifndef TENSORCUT_RUNTIME_KERNELS_DTYPE_DISPATCH_H_
#define TENSORCUT_RUNTIME_KERNELS_DTYPE_DISPATCH_H_

#include <cstdint>

#include "base/check.h"
#include "graph/dtype.h"

namespace tc::kernels {

template <typename Fn>
decltype(auto) VisitDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF32:
      return fn(float{});
    case DType::kF64:
      return fn(double{});
    case DType::kI64:
      return fn(int64_t{});
    case DType::kI32:
      return fn(int32_t{});
    case DType::kBool:
      return fn(bool{});
    case DType::kBF16:
      break;
  }
  TC_FAIL("no kernel for dtype ", DTypeName(dtype));
}

// The same for f32 and f64 only (kernels that only make sense on floats).
template <typename Fn>
decltype(auto) VisitFloatDType(DType dtype, Fn&& fn) {
  if (dtype == DType::kF64) return fn(double{});
  if (dtype == DType::kF32) return fn(float{});
  TC_FAIL("no floating kernel for dtype ", DTypeName(dtype));
}

}  // namespace tc::kernels

#endif  // TENSORCUT_RUNTIME_KERNELS_DTYPE_DISPATCH_H_
