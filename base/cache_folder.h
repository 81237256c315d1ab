// Where tensorcut keeps what later processes may reuse (the gemm verdicts,
// runtime/kernels/gemm_cache.h; the compiled steps' programs,
// pipeline/step_cache.h): $TENSORCUT_CACHE_DIR when set (set and empty: keep
// nothing), else $XDG_CACHE_HOME/tensorcut, else $HOME/.cache/tensorcut.
#ifndef TENSORCUT_BASE_CACHE_FOLDER_H_
#define TENSORCUT_BASE_CACHE_FOLDER_H_

#include <string>

namespace tc {

// The folder, or "" when caching is off or no folder is known.
std::string CacheFolder();

// Which build of tensorcut this code is: the file that holds it (the
// program, or libtensorcut.so) as its path, size and modification time,
// e.g. "/usr/lib/libtensorcut.so.0 48213776 1796601600.123456789". A cache
// entry whose key holds it is not reused by another build of the same
// version (a rebuilt checkout). "" when the file is not found.
std::string BuildIdentity();

}  // namespace tc

#endif  // TENSORCUT_BASE_CACHE_FOLDER_H_
