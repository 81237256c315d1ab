#include "tests/test_util.h"

#include <cmath>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tc::testing {

std::string CompareTensors(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  // Undefined (a grad that never came) matches only undefined.
  if (!actual.defined() || !expected.defined()) {
    if (actual.defined() == expected.defined()) return "";
    return absl::StrCat(actual.defined() ? "expected" : "actual", " is undefined");
  }
  if (actual.shape() != expected.shape()) {
    return absl::StrCat("shapes differ: actual ", actual.type().ToString(), ", expected ",
                        expected.type().ToString());
  }
  const std::vector<double> a = actual.to_vector<double>();
  const std::vector<double> e = expected.to_vector<double>();
  double worst = 0;
  int64_t worst_i = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (a[i] == e[i]) continue;  // equal infinities differ by NaN
    const double excess = std::abs(a[i] - e[i]) - (atol + rtol * std::abs(e[i]));
    if (!(excess <= 0) && (worst_i < 0 || !(excess <= worst))) {
      worst = excess;
      worst_i = static_cast<int64_t>(i);
    }
  }
  if (worst_i < 0) return "";
  const Index index = Unravel(worst_i, actual.shape());
  return absl::StrCat("tensors ", actual.type().ToString(), " differ; worst at ",
                      ShapeToString(index), ": actual ", a[worst_i], ", expected ", e[worst_i],
                      " (rtol ", rtol, ", atol ", atol, ")");
}

Tensor NonContiguous(const Tensor& t) {
  if (t.dim() == 0) return t;
  // Store the values with the dims reversed, then permute back: a true
  // non-contiguous view whenever some dim >= 2 is not alone.
  std::vector<int64_t> reversed(t.dim());
  for (int64_t i = 0; i < t.dim(); ++i) reversed[i] = t.dim() - 1 - i;
  Tensor stored = permute(t, reversed).clone();
  return permute(stored, reversed);
}

Tensor Random(absl::Span<const int64_t> shape, DType dtype, uint64_t seed) {
  Generator gen(seed);
  switch (dtype) {
    case DType::kF32:
    case DType::kF64:
      return randn(shape, dtype, &gen);
    case DType::kI64:
    case DType::kI32:
      return cast(rand(shape, DType::kF64, &gen, 0, 10), dtype);
    case DType::kBool:
      return lt(rand(shape, DType::kF64, &gen), scalar(0.5, DType::kF64));
    case DType::kBF16:
      break;
  }
  return Tensor();
}

int64_t Ravel(const Index& index, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

Index Unravel(int64_t flat, const Shape& shape) {
  Index index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

Tensor Reference(const Shape& shape, const std::function<double(const Index&)>& f) {
  std::vector<double> v(NumElements(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = f(Unravel(i, shape));
  return from_vector<double>(v, shape);
}

std::string ThrownMessage(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return std::string(e.status().message());
  }
  return "no error";
}

}  // namespace tc::testing
