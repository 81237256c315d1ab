// Small helpers shared by the family files' shape inference.
#ifndef TENSORCUT_GRAPH_OPS_INFER_UTIL_H_
#define TENSORCUT_GRAPH_OPS_INFER_UTIL_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "graph/attrs.h"
#include "graph/op_def.h"
#include "graph/shape.h"

namespace tc::ops_internal {

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(args...));
}

inline std::vector<TensorType> One(DType dtype, Shape shape) {
  return {TensorType{dtype, std::move(shape)}};
}

// An error unless every input has the same dtype; `what` names the inputs' role.
absl::Status RequireSameDType(absl::Span<const TensorType> inputs);
absl::Status RequireFloating(const TensorType& t, absl::string_view what);
// A product's optional result dtype (matmul, linear): absent, its operands'
// `operands`; f32 from bf16 operands, a mixed-precision product that
// accumulates and writes f32 (what the autocast pass makes, codegen/autocast.h).
inline constexpr AttrSpec kOutDTypeAttr = {"out_dtype", AttrKind::kDType, {}, true};
absl::StatusOr<DType> ProductDType(DType operands, const Attrs& attrs);
absl::Status RequireRank(const TensorType& t, int64_t rank, absl::string_view what);
// An error naming the dim unless dims [first, rank) of `t` are numbers: for
// rules that compute with those sizes (a convolution's spatial extent).
absl::Status RequireStatic(const TensorType& t, int64_t first, absl::string_view what);

// A slice's bounds resolved as Python does: negative start/end count from the
// end, both clamped to [0, size]; step must be positive. Kernels use the same.
// Over a symbolic size (or bounds) nothing is clamped: step must be 1 and
// 0 <= start <= end <= size provable for every value of the symbols.
struct SliceBounds {
  int64_t start, step, length;
};
absl::StatusOr<SliceBounds> NormalizeSlice(int64_t size, int64_t start, int64_t end, int64_t step);

}  // namespace tc::ops_internal

#endif  // TENSORCUT_GRAPH_OPS_INFER_UTIL_H_
