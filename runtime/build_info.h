// What this copy of tensorcut was built with and what it finds on this CPU:
// the lines `tensorcut --version` prints, for bug reports and for telling
// whether a speed figure came from an optimised, native build.
//
//   std::printf("%s", tc::BuildInfoText().c_str());
#ifndef TENSORCUT_RUNTIME_BUILD_INFO_H_
#define TENSORCUT_RUNTIME_BUILD_INFO_H_

#include <string>

namespace tc {

struct BuildInfo {
  std::string version;   // tc::version(): "0.2.0"
  std::string compiler;  // "g++ 12.2.0"
  // Bazel's compilation mode and the --copt/--cxxopt flags of the build, e.g.
  // "-c opt -O2 -Wall -Wno-sign-compare -O3 -march=native -std=c++17".
  std::string build_flags;
  // How the library was compiled, as its own code sees it: optimisation,
  // assertions (NDEBUG, set by `bazel -c opt`), the widest vector ISA and the
  // extensions the compiler could assume (-march=native adds them;
  // tensorcut itself checks the CPU at run time) and sanitizers, e.g.
  // "optimised, assertions on, compiled for baseline x86-64".
  std::string features;
  std::string onednn_version;  // the oneDNN library loaded: "2.6.3"
  std::string cpu_isa;         // what oneDNN dispatches to on this CPU: "avx2"
  int threads = 1;             // intra-op threads now (tc::NumThreads())
  // The gemm setting (runtime/gemm.h) and OpenBLAS's configuration, empty
  // where it is not installed.
  std::string gemm;  // "auto"
  std::string openblas;
};

BuildInfo GetBuildInfo();

// GetBuildInfo() as five lines:
//   tensorcut 0.2.0
//   built with g++ 12.2.0 (C++17), -c fastbuild -O2 -Wall -Wno-sign-compare -std=c++17
//   optimised, assertions on, compiled for baseline x86-64
//   oneDNN 2.6.3, dispatching to avx2 on this CPU; 2 threads
//   gemm auto: oneDNN or OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64
std::string BuildInfoText();

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_BUILD_INFO_H_
