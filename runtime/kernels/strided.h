// Loops over strided, broadcast operands: the one place kernels turn an n-d
// index space into element offsets. Dims are coalesced where the operands'
// strides allow, so a contiguous operand costs one flat loop.
//
//   ForEachOffset<2>(shape, {out.strides(), BroadcastStrides(a, shape)},
//                    [&](int64_t o, int64_t i) { out_p[o] = a_p[i] * 2; });
#ifndef TENSORCUT_RUNTIME_KERNELS_STRIDED_H_
#define TENSORCUT_RUNTIME_KERNELS_STRIDED_H_

#include <array>
#include <cstdint>
#include <tuple>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "runtime/tensor.h"

namespace tc::kernels {

// Sets a dense tensor's bytes to zero. An empty tensor may have no storage,
// and memset may not be given a null pointer even for 0 bytes.
void ZeroDense(const Tensor& t);

// `t`'s strides seen from `out_shape` (t broadcast to it): 0 along broadcast dims.
absl::InlinedVector<int64_t, 8> BroadcastStrides(const Tensor& t,
                                                 absl::Span<const int64_t> out_shape);

// Calls fn(offset_0, ..., offset_{N-1}) once per index of `shape`, in row-major
// order, where offset_k is the index dotted with strides[k].
// Allocates nothing up to rank 8 after coalescing.
template <int N, typename Fn>
void ForEachOffset(absl::Span<const int64_t> shape,
                   const std::array<absl::Span<const int64_t>, N>& strides, Fn&& fn) {
  // Coalesce adjacent dims i-1, i when every operand steps over dim i exactly
  // as one step of dim i-1.
  absl::InlinedVector<int64_t, 8> dims;
  std::array<absl::InlinedVector<int64_t, 8>, N> st;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    bool merge = !dims.empty();
    for (int k = 0; k < N && merge; ++k) {
      merge = st[k].back() == strides[k][i] * shape[i];
    }
    if (merge) {
      dims.back() *= shape[i];
      for (int k = 0; k < N; ++k) st[k].back() = strides[k][i];
    } else {
      dims.push_back(shape[i]);
      for (int k = 0; k < N; ++k) st[k].push_back(strides[k][i]);
    }
  }
  const int rank = static_cast<int>(dims.size());
  std::array<int64_t, N> base{};
  if (rank == 0) {
    std::apply(fn, base);
    return;
  }
  const int64_t inner = dims[rank - 1];
  std::array<int64_t, N> inner_stride;
  for (int k = 0; k < N; ++k) inner_stride[k] = st[k][rank - 1];
  absl::InlinedVector<int64_t, 8> index(rank, 0);
  while (true) {
    std::array<int64_t, N> off = base;
    for (int64_t j = 0; j < inner; ++j) {
      std::apply(fn, off);
      for (int k = 0; k < N; ++k) off[k] += inner_stride[k];
    }
    int d = rank - 2;
    for (; d >= 0; --d) {
      ++index[d];
      for (int k = 0; k < N; ++k) base[k] += st[k][d];
      if (index[d] < dims[d]) break;
      for (int k = 0; k < N; ++k) base[k] -= st[k][d] * dims[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// Copies `src` (any strides, broadcast to dst's shape) into `dst`, same dtype.
void CopyStrided(const Tensor& src, const Tensor& dst);

// Calls fn(U{}) with U the unsigned integer as wide as an element of
// `dtype`: a copy moves elements as their bits, whatever they hold (bf16
// has no C++ arithmetic type; a NaN's payload stays as it is).
template <typename Fn>
void VisitElementBits(DType dtype, Fn&& fn) {
  switch (ItemSize(dtype)) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    default:
      return fn(uint64_t{});
  }
}

}  // namespace tc::kernels

#endif  // TENSORCUT_RUNTIME_KERNELS_STRIDED_H_
