// The free-space check a run makes before it trains: a save that fits is
// allowed, one that does not is refused naming the size, the folder and what
// is free, and a destination that could not be written is named as such.
#include "base/atomic_file.h"

#include <sys/statvfs.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"

namespace tc {
namespace {

std::string TestFolder() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : std::filesystem::temp_directory_path().string();
}

TEST_CASE("CheckFreeSpace allows what fits and names what does not") {
  const std::string folder = TestFolder();
  const std::string path = folder + "/model.safetensors";
  struct statvfs fs;
  REQUIRE(::statvfs(folder.c_str(), &fs) == 0);
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  REQUIRE(free_bytes > 4096);

  CHECK(CheckFreeSpace(path, 4096, "checkpoint").ok());
  // Beyond what any disk here holds free.
  const absl::Status too_big =
      CheckFreeSpace(path, free_bytes * 4 + (uint64_t{1} << 50), "checkpoint");
  CHECK(too_big.code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StartsWith(too_big.message(), "a "));
  CHECK(absl::StrContains(too_big.message(), " MB checkpoint does not fit in " + folder + ": "));
  CHECK(absl::EndsWith(too_big.message(), " MB free"));
}

TEST_CASE("CheckFreeSpace names a folder it cannot measure and refuses a directory") {
  const absl::Status missing = CheckFreeSpace("/nonexistent/x.safetensors", 1, "checkpoint");
  CHECK(missing.code() == absl::StatusCode::kNotFound);
  CHECK(missing.message() ==
        "cannot measure the free space in /nonexistent: No such file or directory");
  const std::string dir = TestFolder();
  CHECK(CheckFreeSpace(dir, 1, "checkpoint").message() ==
        dir + " is a directory: a checkpoint is written only over a regular file");
}

}  // namespace
}  // namespace tc
