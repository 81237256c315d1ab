#include "runtime/build_info.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/version.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/build_flags.h"
#include "runtime/gemm.h"
#include "runtime/kernels/onednn.h"
#include "runtime/threads.h"

namespace tc {
namespace {

#if defined(__has_feature)
#define TC_HAS_FEATURE(x) __has_feature(x)
#else
#define TC_HAS_FEATURE(x) 0
#endif

std::string Compiler() {
#if defined(__clang__)
  return absl::StrCat("clang ", __clang_major__, ".", __clang_minor__, ".", __clang_patchlevel__);
#elif defined(__GNUC__)
  return absl::StrCat("g++ ", __GNUC__, ".", __GNUC_MINOR__, ".", __GNUC_PATCHLEVEL__);
#else
  return "an unknown compiler";
#endif
}

// The widest vector ISA and the extensions beyond baseline x86-64 the
// compiler was allowed to use for this file, which the whole library is
// compiled with.
std::string CompiledFor() {
  std::vector<const char*> isa;
#if defined(__AVX512F__)
  isa.push_back("AVX512F");
#elif defined(__AVX2__)
  isa.push_back("AVX2");
#elif defined(__AVX__)
  isa.push_back("AVX");
#elif defined(__SSE4_2__)
  isa.push_back("SSE4.2");
#endif
#if defined(__FMA__)
  isa.push_back("FMA");
#endif
#if defined(__AVX512BF16__)
  isa.push_back("AVX512-BF16");
#endif
#if defined(__AMX_TILE__)
  isa.push_back("AMX");
#endif
  if (isa.empty()) return "compiled for baseline x86-64";
  return absl::StrCat("compiled for ", absl::StrJoin(isa, " "), " (-march)");
}

std::string Features() {
  std::vector<std::string> parts;
#if defined(__OPTIMIZE__)
  parts.push_back("optimised");
#else
  parts.push_back("not optimised (-O0)");
#endif
#if defined(NDEBUG)
  parts.push_back("assertions off");
#else
  parts.push_back("assertions on");
#endif
  parts.push_back(CompiledFor());
#if defined(__SANITIZE_ADDRESS__) || TC_HAS_FEATURE(address_sanitizer)
  parts.push_back("AddressSanitizer");
#endif
#if defined(__SANITIZE_THREAD__) || TC_HAS_FEATURE(thread_sanitizer)
  parts.push_back("ThreadSanitizer");
#endif
  return absl::StrJoin(parts, ", ");
}

}  // namespace

BuildInfo GetBuildInfo() {
  const dnnl_version_t* onednn = dnnl::version();
  BuildInfo info;
  info.version = version();
  info.compiler = Compiler();
  info.build_flags = absl::StrCat("-c ", TENSORCUT_COMPILATION_MODE, " ", TENSORCUT_COMPILER_FLAGS);
  info.features = Features();
  info.onednn_version = absl::StrCat(onednn->major, ".", onednn->minor, ".", onednn->patch);
  info.cpu_isa = kernels::OneDnnIsa();
  info.threads = NumThreads();
  info.gemm = std::string(GemmChoiceName(GetGemmChoice()));
  info.openblas = OpenBlasConfig();
  return info;
}

std::string BuildInfoText() {
  const BuildInfo info = GetBuildInfo();
  return absl::StrCat("tensorcut ", info.version, "\nbuilt with ", info.compiler, " (C++",
                      __cplusplus / 100 % 100, "), ", info.build_flags, "\n", info.features,
                      "\noneDNN ", info.onednn_version, ", dispatching to ", info.cpu_isa,
                      " on this CPU; ", info.threads,
                      info.threads == 1 ? " thread\n" : " threads\n", "gemm ", info.gemm, ": ",
                      info.openblas.empty() ? "oneDNN (OpenBLAS is not installed)"
                                            : absl::StrCat("oneDNN or ", info.openblas),
                      "\n");
}

}  // namespace tc
