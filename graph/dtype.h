// Element types of tensors and graph values.
//
// f64 exists for gradient checking (oneDNN has no f64 kernels; f64 runs on
// reference loops). bf16 is reserved: declared so that tables stay complete,
// not yet supported by any kernel.
#ifndef TENSORCUT_GRAPH_DTYPE_H_
#define TENSORCUT_GRAPH_DTYPE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tc {

enum class DType : uint8_t { kF32, kF64, kI64, kBool, kBF16 };

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF64, DType::kI64, DType::kBool,
                                       DType::kBF16};

// Bytes per element.
int64_t ItemSize(DType dtype);
// "f32", "f64", "i64", "bool", "bf16".
absl::string_view DTypeName(DType dtype);
absl::StatusOr<DType> ParseDType(absl::string_view name);
bool IsFloating(DType dtype);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_DTYPE_H_
