// The file that keeps gemm verdicts across processes (runtime/kernels/
// gemm_cache.h), written and read back in a test's temporary folder.
#include "runtime/kernels/gemm_cache.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"

namespace tc::kernels {
namespace {

std::string TempFolder(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const GemmShape kWeightGrad{1, 256, 1024, 1024, true, false, false, 2};
const GemmShape kLinear{1, 1024, 256, 256, false, true, true, 1};

TEST_CASE("verdicts round-trip through the file, which starts with its identity") {
  const GemmCacheFile file(TempFolder("a/b"), "cpu X; oneDNN 2.6.3 avx2; OpenBLAS 0.3.21");
  CHECK(file.Read().empty());  // no file yet
  REQUIRE(file.Append(kWeightGrad, GemmImpl::kOpenBlas));
  REQUIRE(file.Append(kLinear, GemmImpl::kOneDnn));
  CHECK(ReadAll(file.path()) ==
        "tensorcut gemm verdicts: cpu X; oneDNN 2.6.3 avx2; OpenBLAS 0.3.21\n"
        "1 256 1024 1024 1 0 0 2 openblas\n"
        "1 1024 256 256 0 1 1 1 onednn\n");
  const auto verdicts = file.Read();
  REQUIRE(verdicts.size() == 2);
  CHECK(verdicts.at(kWeightGrad) == GemmImpl::kOpenBlas);
  CHECK(verdicts.at(kLinear) == GemmImpl::kOneDnn);
}

TEST_CASE("lines that do not parse are skipped, another identity's file is not read") {
  const GemmCacheFile file(TempFolder("c"), "cpu Y");
  REQUIRE(file.Append(kLinear, GemmImpl::kOneDnn));
  {
    std::ofstream out(file.path(), std::ios::app);
    out << "1 2 3\n"                             // too few fields
        << "1 256 1024 1024 1 0 0 2 mkl\n"       // no such library
        << "1 256 1024 1024 2 0 0 2 onednn\n"    // a flag of 2
        << "1 256 -1 1024 1 0 0 2 onednn\n"      // a negative size
        << "1 256 1024 1024 1 0 0 0 openblas\n"  // no threads
        << "1 256 1024 10";                      // cut short by a crash
  }
  const auto verdicts = file.Read();
  CHECK(verdicts.size() == 1);
  CHECK(verdicts.count(kLinear) == 1);
  // Another machine's identity hashes to another file name.
  const GemmCacheFile other(TempFolder("c"), "cpu Z");
  CHECK(other.path() != file.path());
  CHECK(other.Read().empty());
}

TEST_CASE("a folder that cannot be made leaves the verdict unwritten, without an error") {
  const GemmCacheFile file("/proc/no/such/folder", "cpu X");
  CHECK(!file.Append(kLinear, GemmImpl::kOneDnn));
  CHECK(file.Read().empty());
}

TEST_CASE("the folder comes from TENSORCUT_CACHE_DIR, and its empty value turns the file off") {
  setenv("TENSORCUT_CACHE_DIR", "", 1);
  CHECK(!GemmCacheFile::ForThisMachine().has_value());
  setenv("TENSORCUT_CACHE_DIR", TempFolder("d").c_str(), 1);
  const std::optional<GemmCacheFile> file = GemmCacheFile::ForThisMachine();
  REQUIRE(file.has_value());
  CHECK(file->path().rfind(TempFolder("d") + "/gemm-", 0) == 0);
  unsetenv("TENSORCUT_CACHE_DIR");
  setenv("XDG_CACHE_HOME", TempFolder("xdg").c_str(), 1);
  CHECK(GemmCacheFile::ForThisMachine()->path().rfind(TempFolder("xdg") + "/tensorcut/gemm-", 0) ==
        0);
}

}  // namespace
}  // namespace tc::kernels
