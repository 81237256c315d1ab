// A dataset's arrays as they are stored: the element type of the file
// (bytes for images, 32-bit ints, floats, ...), a shape and the little-endian
// bytes, row-major, so that data stays the size it is on disk and is
// converted one batch at a time.
//
//   nn::Array images = nn::ReadNpy("images.npy").value();     // u8 [N, 28, 28]
//   Tensor batch = tc::empty({64, 28, 28});
//   images.GatherRows(indices, batch);                         // to f32, row by row
#ifndef TENSORCUT_NN_DATA_ARRAY_H_
#define TENSORCUT_NN_DATA_ARRAY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/tensor.h"

namespace tc::nn {

enum class ElementType { kBool, kU8, kI8, kU16, kI16, kU32, kI32, kU64, kI64, kF32, kF64 };

// "u8", "f32", ...
absl::string_view ElementTypeName(ElementType type);

// OK when `path` is a regular file: the readers below refuse a FIFO, a device
// or a directory, whose reading could wait forever or never end, with "PATH
// is a FIFO, not a regular file".
absl::Status CheckRegularFile(const std::string& path);
size_t ElementSize(ElementType type);

struct Array {
  ElementType type = ElementType::kF32;
  std::vector<int64_t> shape;  // dim 0 counts the examples
  std::vector<uint8_t> bytes;  // row-major, little-endian

  int64_t numel() const;
  int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  // The shape of one row: shape without dim 0.
  std::vector<int64_t> row_shape() const;
  // "u8[60000,28,28]".
  std::string ToString() const;

  // Writes rows `indices` (each in [0, rows())) into `out`, a contiguous f32,
  // f64, i64, i32 or bool tensor of shape [indices.size(), row_shape()...], each
  // element converted (bool: nonzero). An error names what did not fit.
  absl::Status GatherRows(absl::Span<const int64_t> indices, const Tensor& out) const;
  // An error naming the first element that is not a finite f32 value (NaN,
  // an infinity, or an f64 beyond f32's range), by example and position in
  // it: "example 17, element 3 is nan". Integer arrays are always finite.
  absl::Status CheckFinite() const;
};

using NamedArrays = std::vector<std::pair<std::string, Array>>;

}  // namespace tc::nn

#endif  // TENSORCUT_NN_DATA_ARRAY_H_
