#include "graph/shape.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace tc {

int64_t NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = DimMul(n, d);
  return n;
}

absl::Status CheckShapeSize(absl::Span<const int64_t> shape) {
  if (static_cast<int64_t>(shape.size()) > kMaxRank) {
    return absl::InvalidArgumentError(
        absl::StrCat("a shape of ", shape.size(), " dims (at most ", kMaxRank, ")"));
  }
  int64_t sizes = 1;
  for (int64_t dim : shape) {
    const int64_t d = DimHint(dim);
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeToString(shape), " has a negative dimension"));
    }
    if (__builtin_mul_overflow(sizes, std::max<int64_t>(d, 1), &sizes) || sizes > kMaxElements) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeToString(shape), " has more than 2^60 elements"));
    }
  }
  return absl::OkStatus();
}

std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    s = DimMul(s, IsSymbolic(shape[i]) ? shape[i] : std::max<int64_t>(shape[i], 1));
  }
  return strides;
}

bool IsContiguous(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides) {
  // The strides ContiguousStrides gives: an empty dim counts as 1.
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected = DimMul(expected, IsSymbolic(shape[d]) ? shape[d] : std::max<int64_t>(shape[d], 1));
  }
  return true;
}

std::vector<int64_t> DenseStrides(absl::Span<const int64_t> shape, absl::Span<const int> order) {
  if (order.empty()) return ContiguousStrides(shape);
  std::vector<int64_t> strides(shape.size());
  int64_t next = 1;
  for (auto d = order.rbegin(); d != order.rend(); ++d) {
    strides[*d] = next;
    next = DimMul(next, shape[*d]);
  }
  return strides;
}

bool IsChannelsLast(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides) {
  // Kernels ask this on every call: computed in place, allocating nothing.
  if (shape.size() != 4 || IsContiguous(shape, strides)) return false;
  int64_t expected = 1;
  for (auto d = kChannelsLast.rbegin(); d != kChannelsLast.rend(); ++d) {
    if (shape[*d] != 1 && strides[*d] != expected) return false;
    expected = DimMul(expected, shape[*d]);
  }
  return true;
}

std::string ShapeToString(absl::Span<const int64_t> shape) {
  return absl::StrCat(
      "[",
      absl::StrJoin(shape, ",",
                    [](std::string* out, int64_t d) { absl::StrAppend(out, DimToString(d)); }),
      "]");
}

absl::StatusOr<Shape> BroadcastShapes(absl::Span<const int64_t> a, absl::Span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", ShapeToString(a), " and ",
                                                     ShapeToString(b), " do not broadcast"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

absl::StatusOr<int64_t> WrapDim(int64_t dim, int64_t rank) {
  const int64_t wrapped = dim < 0 ? dim + rank : dim;
  if (wrapped < 0 || wrapped >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("dim ", dim, " out of range for rank ", rank));
  }
  return wrapped;
}

absl::StatusOr<std::vector<int64_t>> NormalizeDims(absl::Span<const int64_t> dims, int64_t rank) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) {
    TC_ASSIGN_OR_RETURN(const int64_t wrapped, WrapDim(d, rank));
    out.push_back(wrapped);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    return absl::InvalidArgumentError(absl::StrCat("dims ", ShapeToString(dims), " repeat a dim"));
  }
  return out;
}

std::string TensorType::ToString() const {
  return absl::StrCat(DTypeName(dtype), ShapeToString(shape));
}

}  // namespace tc
