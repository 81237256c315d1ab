// OpenBLAS's sgemm, the second candidate beside oneDNN's matmul for f32
// products (runtime/gemm.h chooses between them per shape). It is loaded at
// run time, preferably from Debian's OpenMP build (libopenblas0-openmp, which
// runs on the same OpenMP threads and thread setting as oneDNN), so that
// tensorcut runs on oneDNN alone where OpenBLAS is not installed, and a
// program embedding tensorcut may link a BLAS of its own without a clash of
// symbols. OpenBLAS picks its kernels for the CPU when it is first loaded
// (often before main: Debian's LAPACK, which the milp partitioner's solver
// links, is OpenBLAS's where it is installed); OPENBLAS_CORETYPE set before
// the program starts overrides it. Kernels it picks badly (0.3.21 does not
// know the newest CPUs) only lose the timing in runtime/gemm.h.
#ifndef TENSORCUT_RUNTIME_KERNELS_OPENBLAS_H_
#define TENSORCUT_RUNTIME_KERNELS_OPENBLAS_H_

#include <cstdint>
#include <string>
#include <utility>

namespace tc::kernels {

// A row-major matrix operand: its data, whether it is stored transposed (the
// matrix's rows are the storage's columns) and the stride between the
// storage's rows.
struct BlasMatrix {
  const float* data;
  bool transposed;
  int64_t ld;
};

class OpenBlas {
 public:
  // The library, loaded on the first call; null when it is not installed.
  static const OpenBlas* Get();

  // y [m,n] (row stride ldy) = a [m,k] b [k,n] + beta y.
  void Sgemm(int64_t m, int64_t n, int64_t k, const BlasMatrix& a, const BlasMatrix& b, float beta,
             float* y, int64_t ldy) const;

  // What it was built as and runs: "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY
  // Haswell MAX_THREADS=64" (the kernels it chose are the core named).
  const std::string& config() const { return config_; }

  using SgemmFn = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                           const float* a, int lda, const float* b, int ldb, float beta, float* c,
                           int ldc);
  OpenBlas(SgemmFn sgemm, std::string config) : sgemm_(sgemm), config_(std::move(config)) {}

 private:
  SgemmFn sgemm_;
  std::string config_;
};

}  // namespace tc::kernels

#endif  // TENSORCUT_RUNTIME_KERNELS_OPENBLAS_H_
