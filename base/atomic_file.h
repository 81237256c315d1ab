// Files replaced whole or not at all: what checkpoints and exported models
// are written with. WriteAtomically writes a temporary file beside the
// destination, flushes it, renames it over the destination and persists the
// rename; a failure or a kill leaves the old file as it was (and a stray
// temporary that the next write of the same path removes).
//
//   TC_RETURN_IF_ERROR(WriteAtomically(path, "checkpoint", [&](int fd) {
//     return WriteAll(fd, bytes.data(), bytes.size(), path, "checkpoint");
//   }));
//
// Only a regular file, or a name not taken yet, is ever replaced: through a
// symbolic link its target is (the link stays), and a device such as
// /dev/null, a directory or a FIFO is refused. `what` ("checkpoint", "ONNX
// model") names the file in every error.
#ifndef TENSORCUT_BASE_ATOMIC_FILE_H_
#define TENSORCUT_BASE_ATOMIC_FILE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tc {

// `write` fills the open temporary file; it need not flush.
absl::Status WriteAtomically(const std::string& path, absl::string_view what,
                             const std::function<absl::Status(int fd)>& write);

// Writes `bytes` as the whole file.
absl::Status WriteAtomically(const std::string& path, absl::string_view what,
                             absl::string_view bytes);

// OK when WriteAtomically could write `path`: a temporary file is made
// beside it and removed, and so are the temporaries killed writes of `path`
// left. The error names the folder ("cannot write in /nonexistent: No such
// file or directory") or what `path` is.
absl::Status CheckWritable(const std::string& path, absl::string_view what);

// OK when the folder `path` is written in has room for a `bytes`-byte
// temporary beside what it replaces (the old file stays until the rename).
// ResourceExhausted otherwise: "a 412.3 MB checkpoint does not fit in /data:
// 97.1 MB free".
absl::Status CheckFreeSpace(const std::string& path, uint64_t bytes, absl::string_view what);

// Writes all `size` bytes to `fd`, retrying short writes.
absl::Status WriteAll(int fd, const void* data, size_t size, const std::string& path,
                      absl::string_view what);

// errno as a status: NotFound, PermissionDenied, else Internal.
absl::Status ErrnoStatus(int error, absl::string_view what);

}  // namespace tc

#endif  // TENSORCUT_BASE_ATOMIC_FILE_H_
