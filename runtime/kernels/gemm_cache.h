// The per-shape gemm verdicts (runtime/gemm.h) kept on disk, so that a
// process times only the shapes no earlier process on this machine timed.
// One text file per machine and library build:
//
//   $TENSORCUT_CACHE_DIR/gemm-<hash of the identity line>.txt
//   tensorcut gemm verdicts: Intel(R) Xeon(R) ...; oneDNN 2.6.3 avx512_core_amx; OpenBLAS ...
//   1 128 512 784 0 1 1 2 onednn
//
// then one line per shape: batch m n k a_transposed b_transposed bias threads
// and the winner. The folder is $TENSORCUT_CACHE_DIR (set and empty: no
// file), else $XDG_CACHE_HOME/tensorcut, else $HOME/.cache/tensorcut. A line
// that does not parse is skipped (its shape is timed again); a file of
// another identity is not read; a folder or file that cannot be read or
// written leaves the choice to timing, as without a cache.
#ifndef TENSORCUT_RUNTIME_KERNELS_GEMM_CACHE_H_
#define TENSORCUT_RUNTIME_KERNELS_GEMM_CACHE_H_

#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "runtime/kernels/gemm_choice.h"

namespace tc::kernels {

class GemmCacheFile {
 public:
  // This machine's file, or nullopt when caching is off or no folder is known.
  static std::optional<GemmCacheFile> ForThisMachine();

  GemmCacheFile(std::string folder, std::string identity);

  // The verdicts the file holds; empty when it is missing or of another identity.
  absl::flat_hash_map<GemmShape, GemmImpl> Read() const;
  // Appends one verdict, creating the folder and the file (identity first)
  // where they are missing; false when it cannot.
  bool Append(const GemmShape& shape, GemmImpl winner) const;

  const std::string& path() const { return path_; }

 private:
  std::string folder_, identity_line_, path_;
};

}  // namespace tc::kernels

#endif  // TENSORCUT_RUNTIME_KERNELS_GEMM_CACHE_H_
