// Which library runs an f32 matrix product (matmul, linear). oneDNN's matmul
// always can; where OpenBLAS is installed (Debian's libopenblas0-openmp,
// loaded at run time) its sgemm is the other candidate: on AVX2 machines it
// multiplies a transposed (K-major) operand, as in every weight gradient, up
// to twice as fast as oneDNN 2.6.
//
// Under kAuto, the default, the first product of each shape in the process
// (sizes, which operands are transposed, bias, thread count) is timed on both,
// on scratch operands, and every product of that shape afterwards runs on the
// faster; the verdicts are kept on disk for the next process
// (runtime/kernels/gemm_cache.h). OpenBLAS is chosen only when it wins by
// kOpenBlasMargin, so that shapes on which the two are even keep oneDNN's
// results from run to run.
// Products below kMinTimedMacs multiply-adds, and products that carry
// post-ops (fused by oneDNN as it writes them), always run on oneDNN.
//
//   TC_RETURN_IF_ERROR(tc::SetGemmChoice(tc::GemmChoice::kOneDnn));  // e.g. to A/B
#ifndef TENSORCUT_RUNTIME_GEMM_H_
#define TENSORCUT_RUNTIME_GEMM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tc {

enum class GemmChoice { kAuto, kOneDnn, kOpenBlas };

inline constexpr double kOpenBlasMargin = 1.1;
inline constexpr int64_t kMinTimedMacs = int64_t{1} << 20;

// Sets the choice for the whole process. kOpenBlas where OpenBLAS is not
// installed is an error and changes nothing.
absl::Status SetGemmChoice(GemmChoice choice);
GemmChoice GetGemmChoice();

// "auto", "onednn" or "openblas".
absl::StatusOr<GemmChoice> ParseGemmChoice(absl::string_view name);
absl::string_view GemmChoiceName(GemmChoice choice);

// OpenBLAS's configuration, "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell
// MAX_THREADS=64", or empty where it is not installed.
std::string OpenBlasConfig();

// The shapes kAuto has timed so far in this process, how many of them it
// gave to OpenBLAS, and how many verdicts it read from the cache file
// instead (runtime/kernels/gemm_cache.h: earlier processes' timings on this
// machine, kept in $TENSORCUT_CACHE_DIR or ~/.cache/tensorcut).
struct GemmShapesTimed {
  int64_t shapes = 0;
  int64_t openblas = 0;
  int64_t read = 0;
};
GemmShapesTimed GetGemmShapesTimed();

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_GEMM_H_
