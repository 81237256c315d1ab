#include "runtime/kernels/openblas.h"

#include <dlfcn.h>

namespace tc::kernels {
namespace {

// CBLAS's enumerators (cblas.h), fixed by the standard's C interface.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

// Debian's OpenMP build first (the alternatives link may name the pthread
// build, whose own threads would contend with oneDNN's), then whatever the
// loader finds.
constexpr const char* kLibraries[] = {
    "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
    "/usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0",
    "libopenblas.so.0",
};

const OpenBlas* Load() {
  for (const char* name : kLibraries) {
    // RTLD_LOCAL: its symbols stay out of the program's namespace.
    void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) continue;
    void* sgemm = dlsym(library, "cblas_sgemm");
    void* config = dlsym(library, "openblas_get_config");
    if (sgemm == nullptr || config == nullptr) {
      dlclose(library);
      continue;
    }
    return new OpenBlas(reinterpret_cast<OpenBlas::SgemmFn>(sgemm),
                        reinterpret_cast<const char* (*)()>(config)());
  }
  return nullptr;
}

}  // namespace

const OpenBlas* OpenBlas::Get() {
  static const OpenBlas* const library = Load();
  return library;
}

void OpenBlas::Sgemm(int64_t m, int64_t n, int64_t k, const BlasMatrix& a, const BlasMatrix& b,
                     float beta, float* y, int64_t ldy) const {
  sgemm_(kRowMajor, a.transposed ? kTrans : kNoTrans, b.transposed ? kTrans : kNoTrans, m, n, k,
         1.f, a.data, a.ld, b.data, b.ld, beta, y, ldy);
}

}  // namespace tc::kernels
