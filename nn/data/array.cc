#include "nn/data/array.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tc::nn {
namespace {

// Calls fn(T{}) with T the C++ type of `type`.
template <typename Fn>
void VisitElementType(ElementType type, Fn fn) {
  switch (type) {
    case ElementType::kBool:
      return fn(bool{});
    case ElementType::kU8:
      return fn(uint8_t{});
    case ElementType::kI8:
      return fn(int8_t{});
    case ElementType::kU16:
      return fn(uint16_t{});
    case ElementType::kI16:
      return fn(int16_t{});
    case ElementType::kU32:
      return fn(uint32_t{});
    case ElementType::kI32:
      return fn(int32_t{});
    case ElementType::kU64:
      return fn(uint64_t{});
    case ElementType::kI64:
      return fn(int64_t{});
    case ElementType::kF32:
      return fn(float{});
    case ElementType::kF64:
      return fn(double{});
  }
}

// Converts `n` elements of type From at `src` to To at `dst` (unaligned reads).
template <typename From, typename To>
void Convert(const uint8_t* src, int64_t n, To* dst) {
  for (int64_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, src + i * sizeof(From), sizeof(From));
    if constexpr (std::is_same_v<To, bool>) {
      dst[i] = v != From(0);
    } else {
      dst[i] = static_cast<To>(v);
    }
  }
}

}  // namespace

absl::Status CheckRegularFile(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  if (S_ISREG(info.st_mode)) return absl::OkStatus();
  const char* kind = S_ISFIFO(info.st_mode)   ? "a FIFO"
                     : S_ISDIR(info.st_mode)  ? "a directory"
                     : S_ISCHR(info.st_mode)  ? "a character device"
                     : S_ISBLK(info.st_mode)  ? "a block device"
                     : S_ISSOCK(info.st_mode) ? "a socket"
                                              : "not a file";
  return absl::InvalidArgumentError(absl::StrCat(path, " is ", kind, ", not a regular file"));
}

absl::string_view ElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kBool:
      return "bool";
    case ElementType::kU8:
      return "u8";
    case ElementType::kI8:
      return "i8";
    case ElementType::kU16:
      return "u16";
    case ElementType::kI16:
      return "i16";
    case ElementType::kU32:
      return "u32";
    case ElementType::kI32:
      return "i32";
    case ElementType::kU64:
      return "u64";
    case ElementType::kI64:
      return "i64";
    case ElementType::kF32:
      return "f32";
    case ElementType::kF64:
      return "f64";
  }
  return "?";
}

size_t ElementSize(ElementType type) {
  size_t size = 0;
  VisitElementType(type, [&](auto zero) { size = sizeof(zero); });
  return size;
}

int64_t Array::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> Array::row_shape() const {
  return shape.empty() ? std::vector<int64_t>{}
                       : std::vector<int64_t>(shape.begin() + 1, shape.end());
}

std::string Array::ToString() const {
  return absl::StrCat(ElementTypeName(type), "[", absl::StrJoin(shape, ","), "]");
}

absl::Status Array::GatherRows(absl::Span<const int64_t> indices, const Tensor& out) const {
  std::vector<int64_t> want = row_shape();
  want.insert(want.begin(), static_cast<int64_t>(indices.size()));
  if (out.shape() != want || !out.is_contiguous()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rows of ", ToString(), " go into a contiguous tensor of shape [",
                     absl::StrJoin(want, ","), "], got ", out.type().ToString()));
  }
  const int64_t row = numel() / std::max<int64_t>(rows(), 1);
  const size_t row_bytes = static_cast<size_t>(row) * ElementSize(type);
  for (int64_t r : indices) {
    if (r < 0 || r >= rows()) {
      return absl::OutOfRangeError(absl::StrCat("row ", r, " of ", ToString(), " is out of range"));
    }
  }
  auto fill = [&](auto* dst) {
    VisitElementType(type, [&](auto zero) {
      using From = decltype(zero);
      for (size_t i = 0; i < indices.size(); ++i) {
        Convert<From>(bytes.data() + static_cast<size_t>(indices[i]) * row_bytes, row,
                      dst + static_cast<int64_t>(i) * row);
      }
    });
  };
  switch (out.dtype()) {
    case DType::kF32:
      fill(out.data<float>());
      break;
    case DType::kF64:
      fill(out.data<double>());
      break;
    case DType::kI64:
      fill(out.data<int64_t>());
      break;
    case DType::kI32:
      fill(out.data<int32_t>());
      break;
    case DType::kBool:
      fill(out.data<bool>());
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("rows of ", ToString(),
                                                     " convert to f32, f64, i64, i32 or bool, not ",
                                                     DTypeName(out.dtype())));
  }
  return absl::OkStatus();
}

namespace {

// Element i of a little-endian array of T.
template <typename T>
T ElementAt(const std::vector<uint8_t>& bytes, int64_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

absl::Status Array::CheckFinite() const {
  if (type != ElementType::kF32 && type != ElementType::kF64) return absl::OkStatus();
  const int64_t n = numel(), row = n / std::max<int64_t>(rows(), 1);
  for (int64_t i = 0; i < n; ++i) {
    const double value =
        type == ElementType::kF32 ? ElementAt<float>(bytes, i) : ElementAt<double>(bytes, i);
    if (std::abs(value) <= std::numeric_limits<float>::max()) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "example ", i / std::max<int64_t>(row, 1), ", element ", i % std::max<int64_t>(row, 1),
        " is ", value, ": features must be finite f32 values"));
  }
  return absl::OkStatus();
}

}  // namespace tc::nn
