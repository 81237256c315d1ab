// What the fuzz targets share: a fuzzer's bytes as a file that the loaders
// (which take paths) can open, without touching a disk.
#ifndef TENSORCUT_FUZZ_FUZZ_INPUT_H_
#define TENSORCUT_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace tc::fuzz {

// An anonymous in-memory file holding a copy of `data`; path() opens it.
class MemoryFile {
 public:
  MemoryFile(const uint8_t* data, size_t size);
  ~MemoryFile();
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// A folder in memory (/dev/shm) for targets that write, removed at exit.
const std::string& ScratchDir();

// Reports a broken invariant the way fuzzers expect: a message, then abort.
[[noreturn]] void Fail(const std::string& what);

}  // namespace tc::fuzz

#endif  // TENSORCUT_FUZZ_FUZZ_INPUT_H_
