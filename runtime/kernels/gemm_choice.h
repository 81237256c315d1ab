// The per-shape choice behind runtime/gemm.h: the matmul kernel describes a
// product's shape and how to time one run of each candidate; the first call of
// a shape times them, later calls read the choice.
#ifndef TENSORCUT_RUNTIME_KERNELS_GEMM_CHOICE_H_
#define TENSORCUT_RUNTIME_KERNELS_GEMM_CHOICE_H_

#include <cstdint>
#include <tuple>
#include <utility>

#include "absl/functional/function_ref.h"

namespace tc::kernels {

enum class GemmImpl { kOneDnn, kOpenBlas };

struct GemmShape {
  int64_t batch, m, n, k;
  bool a_transposed, b_transposed, bias;
  int threads;

  auto Tie() const { return std::tie(batch, m, n, k, a_transposed, b_transposed, bias, threads); }
  friend bool operator==(const GemmShape& x, const GemmShape& y) { return x.Tie() == y.Tie(); }
  template <typename H>
  friend H AbslHashValue(H h, const GemmShape& s) {
    return H::combine(std::move(h), s.Tie());
  }
};

// The implementation for a product of `shape` that OpenBLAS can take, under
// the process's GemmChoice; `seconds(impl)` runs the product once on `impl`
// (on operands of its own) and says how long it took.
GemmImpl ChooseGemm(const GemmShape& shape, absl::FunctionRef<double(GemmImpl)> seconds);

}  // namespace tc::kernels

#endif  // TENSORCUT_RUNTIME_KERNELS_GEMM_CHOICE_H_
