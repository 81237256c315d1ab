// Shapes and the arithmetic on them shared by shape inference and kernels:
// element counts, contiguous and channels-last strides, NumPy broadcasting,
// dimension wrapping. A graph value's dims may be symbolic (graph/symbolic.h);
// a tensor's never are, except a tracer's stand-ins. Every function here
// takes both, computing over symbols where a dim is one.
#ifndef TENSORCUT_GRAPH_SHAPE_H_
#define TENSORCUT_GRAPH_SHAPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/dtype.h"
#include "graph/symbolic.h"

namespace tc {

using Shape = std::vector<int64_t>;

// The product of the dims: symbolic when a dim is.
int64_t NumElements(absl::Span<const int64_t> shape);

// The most elements a tensor may have: its byte size (8-byte elements) and
// every stride then fit an int64.
inline constexpr int64_t kMaxElements = int64_t{1} << 60;
// The most dims a shape may have; far beyond any model's, it bounds what a
// file or text can make the engine hold per shape.
inline constexpr int64_t kMaxRank = 64;

// OK when `shape`, read from a file or text, is a shape the engine can hold:
// at most kMaxRank dims, every dim non-negative, and the product of the dims (empty ones taken as
// 1, as strides do) at most kMaxElements, symbolic dims taken at their
// hints. The one check behind the IDX
// reader, checkpoints, the graph parser and shape inference: "shape
// [4,-1] has a negative dimension", "shape [2^31,2^31,2^31] has more than
// 2^60 elements".
absl::Status CheckShapeSize(absl::Span<const int64_t> shape);
// Row-major strides, in elements.
std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> shape);
// Whether `strides` lay `shape` out row-major without gaps (any stride is
// fine along a size-1 dim).
bool IsContiguous(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides);

// The order of a dense layout's dims in memory, outermost first: {0, 1, 2, 3}
// is row-major NCHW, kChannelsLast is NHWC (what oneDNN's convolutions
// prefer), the logical shape staying [N, C, H, W] either way.
using DimOrder = std::vector<int>;
inline const DimOrder kChannelsLast = {0, 2, 3, 1};
// Strides that lay `shape` out densely in `order` (row-major when empty).
std::vector<int64_t> DenseStrides(absl::Span<const int64_t> shape, absl::Span<const int> order);
// Whether `strides` lay a rank-4 `shape` out densely channels-last, in a
// way row-major strides would not (so a [1, C, 1, 1] tensor is not).
bool IsChannelsLast(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides);
// "[4,3]", "[s0,784]"; a scalar is "[]".
std::string ShapeToString(absl::Span<const int64_t> shape);

// NumPy broadcasting of two shapes; the error names both. A symbolic dim
// broadcasts with itself and with 1 only.
absl::StatusOr<Shape> BroadcastShapes(absl::Span<const int64_t> a, absl::Span<const int64_t> b);

// Maps a possibly negative dim into [0, rank); an error when out of range.
// Every op, kernel and rule normalises dims through this.
absl::StatusOr<int64_t> WrapDim(int64_t dim, int64_t rank);
// A set of dims (a reduction's): each wrapped, sorted, without repeats; []
// means every dim.
absl::StatusOr<std::vector<int64_t>> NormalizeDims(absl::Span<const int64_t> dims, int64_t rank);

// The static type of a tensor or graph value: "f32[4,3]", "f32[s0,784]".
struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;

  // Element and byte counts, for costs and reports: at the symbols' hints
  // when the shape is symbolic (NumElements(shape) is the exact count).
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n = DimMul(n, DimHint(d));  // interns nothing
    return n;
  }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t bytes() const { return numel() * ItemSize(dtype); }
  std::string ToString() const;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

}  // namespace tc

#endif  // TENSORCUT_GRAPH_SHAPE_H_
