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

absl::StatusOr<std::vector<int64_t>> NormalizeDims(absl::Span<const int64_t> dims, int64_t rank) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) {
    TC_ASSIGN_OR_RETURN(int64_t w, WrapDim(d, rank));
    out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    return Invalid("dims ", ShapeToString(dims), " repeat a dim");
  }
  return out;
}

absl::StatusOr<SliceBounds> NormalizeSlice(int64_t size, int64_t start, int64_t end, int64_t step) {
  if (step <= 0) return Invalid("slice step must be positive, got ", step);
  auto clamp = [size](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size); };
  const int64_t s = clamp(start), e = clamp(end);
  return SliceBounds{s, step, e > s ? (e - s + step - 1) / step : 0};
}

}  // namespace tc::ops_internal
