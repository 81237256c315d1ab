#include "graph/ops/infer_util.h"

#include <algorithm>

#include "base/status_macros.h"

namespace tc::ops_internal {

absl::Status RequireSameDType(absl::Span<const TensorType> inputs) {
  for (const TensorType& t : inputs) {
    if (t.dtype != inputs[0].dtype) {
      return Invalid("dtypes differ: ", inputs[0].ToString(), " vs ", t.ToString());
    }
  }
  return absl::OkStatus();
}

absl::Status RequireFloating(const TensorType& t, absl::string_view what) {
  if (!IsFloating(t.dtype)) return Invalid(what, " must be floating point, got ", t.ToString());
  return absl::OkStatus();
}

absl::Status RequireRank(const TensorType& t, int64_t rank, absl::string_view what) {
  if (t.rank() != rank) {
    return Invalid(what, " must have rank ", rank, ", got ", t.ToString());
  }
  return absl::OkStatus();
}

absl::StatusOr<SliceBounds> NormalizeSlice(int64_t size, int64_t start, int64_t end, int64_t step) {
  if (step <= 0) return Invalid("slice step must be positive, got ", step);
  auto clamp = [size](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size); };
  const int64_t s = clamp(start), e = clamp(end);
  return SliceBounds{s, step, e > s ? (e - s + step - 1) / step : 0};
}

}  // namespace tc::ops_internal
