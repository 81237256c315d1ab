#include "fuzz/fuzz_input.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace tc::fuzz {

MemoryFile::MemoryFile(const uint8_t* data, size_t size)
    : fd_(::memfd_create("fuzz-input", MFD_CLOEXEC)) {
  if (fd_ < 0) Fail("memfd_create failed");
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n <= 0) Fail("writing the memory file failed");
    done += static_cast<size_t>(n);
  }
  path_ = absl::StrCat("/proc/self/fd/", fd_);
}

MemoryFile::~MemoryFile() { ::close(fd_); }

const std::string& ScratchDir() {
  static const std::string* dir = [] {
    // In memory, so that the saves' fsync costs nothing; removed at exit.
    std::string name = "/dev/shm/tensorcut-fuzz-XXXXXX";
    if (::mkdtemp(name.data()) == nullptr) Fail("mkdtemp failed");
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ScratchDir(), ignored);
    });
    return new std::string(name);
  }();
  return *dir;
}

void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz target: %s\n", what.c_str());
  std::abort();
}

}  // namespace tc::fuzz
