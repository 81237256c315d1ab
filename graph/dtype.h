// Element types of tensors and graph values.
//
// f64 exists for gradient checking (oneDNN has no f64 kernels; f64 runs on
// reference loops). bf16 is mixed precision's storage type (codegen/autocast.h):
// its kernels compute in f32. i64 is the index type (class targets, embedding
// indices, shapes); i32 is PyTorch's int32, for data and arithmetic (its sum
// counts in i64, as PyTorch's). kI32 comes last so that the others keep their
// numbers.
#ifndef TENSORCUT_GRAPH_DTYPE_H_
#define TENSORCUT_GRAPH_DTYPE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tc {

enum class DType : uint8_t { kF32, kF64, kI64, kBool, kBF16, kI32 };

inline constexpr DType kAllDTypes[] = {DType::kF32,  DType::kF64,  DType::kI64,
                                       DType::kBool, DType::kBF16, DType::kI32};

// Bytes per element.
int64_t ItemSize(DType dtype);
// "f32", "f64", "i64", "bool", "bf16", "i32".
absl::string_view DTypeName(DType dtype);
absl::StatusOr<DType> ParseDType(absl::string_view name);
bool IsFloating(DType dtype);
// i64 or i32.
bool IsInteger(DType dtype);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_DTYPE_H_
