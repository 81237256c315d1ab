#include "runtime/kernels/strided.h"

#include <cstring>

namespace tc::kernels {

absl::InlinedVector<int64_t, 8> BroadcastStrides(const Tensor& t,
                                                 absl::Span<const int64_t> out_shape) {
  absl::InlinedVector<int64_t, 8> strides(out_shape.size(), 0);
  const int64_t lead = static_cast<int64_t>(out_shape.size()) - t.dim();
  for (int64_t i = 0; i < t.dim(); ++i) {
    strides[lead + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  }
  return strides;
}

namespace {

template <typename T>
void CopyTyped(const Tensor& src, const Tensor& dst) {
  const T* s = static_cast<const T*>(src.raw_data());
  T* d = static_cast<T*>(dst.raw_data());
  ForEachOffset<2>(dst.shape(), {dst.strides(), BroadcastStrides(src, dst.shape())},
                   [&](int64_t o, int64_t i) { d[o] = s[i]; });
}

}  // namespace

void ZeroDense(const Tensor& t) {
  if (t.bytes() > 0) std::memset(t.raw_data(), 0, t.bytes());
}

void CopyStrided(const Tensor& src, const Tensor& dst) {
  if (dst.numel() == 0) return;
  if (src.is_contiguous() && dst.is_contiguous() && src.shape() == dst.shape()) {
    std::memcpy(dst.raw_data(), src.raw_data(), dst.bytes());
    return;
  }
  VisitElementBits(dst.dtype(), [&](auto bits) { CopyTyped<decltype(bits)>(src, dst); });
}

}  // namespace tc::kernels
