// tc::version() is the number set in version.bzl, and the build information
// names this build's compiler, flags, oneDNN and CPU.
#include "runtime/build_info.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/version.h"
#include "catch2/catch.hpp"

namespace tc {
namespace {

std::string VersionFromBzl() {
  const std::string path =
      absl::StrCat(std::getenv("TEST_SRCDIR"), "/", std::getenv("TEST_WORKSPACE"), "/version.bzl");
  std::ifstream in(path);
  REQUIRE(in.good());
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "TENSORCUT_VERSION = \"")) {
      return std::vector<std::string>(absl::StrSplit(line, '"'))[1];
    }
  }
  FAIL("version.bzl sets no TENSORCUT_VERSION");
  return "";
}

TEST_CASE("tc::version() is version.bzl's, MAJOR.MINOR.PATCH") {
  const std::string version = tc::version();
  REQUIRE(version == VersionFromBzl());
  const std::vector<std::string> parts = absl::StrSplit(version, '.');
  REQUIRE(parts.size() == 3);
}

TEST_CASE("the build information names the compiler, flags, oneDNN and the CPU's ISA") {
  const BuildInfo info = GetBuildInfo();
  REQUIRE(info.version == tc::version());
  REQUIRE((absl::StartsWith(info.compiler, "g++ ") || absl::StartsWith(info.compiler, "clang ")));
  const std::vector<std::string> mode = absl::StrSplit(info.build_flags, ' ');
  REQUIRE(mode.size() >= 2);
  REQUIRE(mode[0] == "-c");
  REQUIRE((mode[1] == "fastbuild" || mode[1] == "opt" || mode[1] == "dbg"));
  REQUIRE(absl::StrContains(info.build_flags, " -O2 "));  // .bazelrc's --copt=-O2
  // The library is optimised as its flags' last -O says (the sanitizer
  // builds compile the tests' own files at -O0, the library at -O1).
  std::string last_level;
  for (const std::string& flag : mode) {
    if (absl::StartsWith(flag, "-O")) last_level = flag;
  }
  REQUIRE(absl::StartsWith(info.features,
                           last_level == "-O0" ? "not optimised (-O0), " : "optimised, "));
  // This test is compiled with the library's other flags, so it sees what it does.
#if defined(NDEBUG)
  REQUIRE(absl::StrContains(info.features, ", assertions off, "));
#else
  REQUIRE(absl::StrContains(info.features, ", assertions on, "));
#endif
#if defined(__AVX512F__)
  REQUIRE(absl::StrContains(info.features, "compiled for AVX512F"));
#elif defined(__AVX2__)
  REQUIRE(absl::StrContains(info.features, "compiled for AVX2"));
#elif !defined(__AVX__) && !defined(__SSE4_2__)
  REQUIRE(absl::StrContains(info.features, "compiled for baseline x86-64"));
#endif
  REQUIRE(absl::StartsWith(info.onednn_version, "2."));
  REQUIRE(!info.cpu_isa.empty());
  REQUIRE(info.threads >= 1);

  const std::string text = BuildInfoText();
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 5);
  REQUIRE(lines[0] == absl::StrCat("tensorcut ", info.version));
  REQUIRE(lines[1] == absl::StrCat("built with ", info.compiler, " (C++17), ", info.build_flags));
  REQUIRE(lines[2] == info.features);
  REQUIRE(absl::StartsWith(
      lines[3], absl::StrCat("oneDNN ", info.onednn_version, ", dispatching to ", info.cpu_isa)));
  // tools/setup.sh installs OpenBLAS.
  REQUIRE(info.gemm == "auto");
  REQUIRE(absl::StartsWith(info.openblas, "OpenBLAS 0."));
  REQUIRE(lines[4] == absl::StrCat("gemm auto: oneDNN or ", info.openblas));
}

}  // namespace
}  // namespace tc
