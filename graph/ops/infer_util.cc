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

absl::StatusOr<DType> ProductDType(DType operands, const Attrs& attrs) {
  if (!attrs.Has(kOutDTypeAttr.name)) return operands;
  const DType out = attrs.Dtype(kOutDTypeAttr.name);
  if (out != operands && !(out == DType::kF32 && operands == DType::kBF16)) {
    return Invalid("out_dtype ", DTypeName(out), " of ", DTypeName(operands),
                   " operands: expected theirs, or f32 of bf16 operands");
  }
  return out;
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

absl::Status RequireStatic(const TensorType& t, int64_t first, absl::string_view what) {
  for (int64_t d = first; d < t.rank(); ++d) {
    if (IsSymbolic(t.shape[d])) {
      const std::string may = first == 0 ? "no dim may be symbolic"
                              : first == 1
                                  ? "only dim 0 may be symbolic"
                                  : absl::StrCat("only dims 0 to ", first - 1, " may be symbolic");
      return Invalid(what, " ", t.ToString(), " has symbolic dim ", d, " (",
                     DimToString(t.shape[d]), ") where a number is needed: ", may);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SliceBounds> NormalizeSlice(int64_t size, int64_t start, int64_t end, int64_t step) {
  if (step <= 0) return Invalid("slice step must be positive, got ", step);
  if (IsSymbolic(size) || IsSymbolic(start) || IsSymbolic(end)) {
    // No clamping over symbols: the bounds must be provably in order, 0 <=
    // start <= end <= size, for every value of the symbols (>= 1).
    auto resolve = [size](int64_t i) {
      if (IsSymbolic(i)) return i;
      return i < 0 ? DimAdd(size, i) : i >= kMaxElements ? size : i;
    };
    const int64_t s = resolve(start), e = resolve(end);
    auto provable = [](int64_t d) { return DimMinimum(d).value_or(-1) >= 0; };
    if (step != 1 || !provable(s) || !provable(DimSub(e, s)) || !provable(DimSub(size, e))) {
      return Invalid("slice [", DimToString(start), ":", DimToString(end), ":", step,
                     "] of a dim of size ", DimToString(size),
                     " is not provably in range (over symbols, slices take step 1 and bounds "
                     "in order)");
    }
    return SliceBounds{s, 1, DimSub(e, s)};
  }
  auto clamp = [size](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size); };
  const int64_t s = clamp(start), e = clamp(end);
  return SliceBounds{s, step, e > s ? (e - s + step - 1) / step : 0};
}

}  // namespace tc::ops_internal
