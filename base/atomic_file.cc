#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tc {
namespace {

// What a write makes first, beside `path`, for mkstemp to fill in.
std::string TemporaryName(const std::string& path) { return absl::StrCat(path, ".tmp-XXXXXX"); }

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Removes what writes of `path` killed mid-write left (`path`.tmp-XXXXXX).
// Failing to remove one costs only its disk space.
void RemoveStaleTemporaries(const std::string& path) {
  const std::string prefix = absl::StrCat(std::filesystem::path(path).filename().string(), ".tmp-");
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(DirName(path), error)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, prefix) && name.size() == prefix.size() + 6) {
      std::filesystem::remove(entry.path(), error);
    }
  }
}

// The file a write of `path` replaces: `path` itself, or the file its
// symbolic links lead to (the links stay links); an error for anything but
// a regular file or a name not taken yet.
absl::StatusOr<std::string> Destination(const std::string& path, absl::string_view what) {
  std::error_code error;
  std::string target = path;
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, error))) {
    target = std::filesystem::weakly_canonical(path, error).string();
    if (error) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot resolve the link ", path, ": ", error.message()));
    }
  }
  const std::filesystem::file_status status = std::filesystem::status(target, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, std::filesystem::is_directory(status) ? " is a directory" : " is not a regular file",
        target == path ? "" : absl::StrCat(" (", target, ")"), ": a ", what,
        " is written only over a regular file"));
  }
  return target;
}

}  // namespace

absl::Status ErrnoStatus(int error, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

absl::Status WriteAll(int fd, const void* data, size_t size, const std::string& path,
                      absl::string_view what) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("cannot write ", what, " ", path));
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status WriteAtomically(const std::string& given, absl::string_view what,
                             const std::function<absl::Status(int fd)>& write) {
  const absl::StatusOr<std::string> destination = Destination(given, what);
  if (!destination.ok()) return destination.status();
  const std::string& path = *destination;
  std::string temp = TemporaryName(path);
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot create ", what, " ", path));
  absl::Status status = write(fd);
  if (status.ok() && ::fsync(fd) != 0) {
    status = ErrnoStatus(errno, absl::StrCat("cannot flush ", what, " ", path));
  }
  if (status.ok() && ::fchmod(fd, 0644) != 0) {
    status = ErrnoStatus(errno, absl::StrCat("cannot set permissions of ", what, " ", path));
  }
  if (::close(fd) != 0 && status.ok()) {
    status = ErrnoStatus(errno, absl::StrCat("cannot close ", what, " ", path));
  }
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    status = ErrnoStatus(errno, absl::StrCat("cannot rename ", temp, " to ", path));
  }
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  RemoveStaleTemporaries(path);
  // Persist the rename itself; the data is already on disk, so a failure here
  // only risks the old file reappearing after a crash.
  const int dir = ::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

absl::Status WriteAtomically(const std::string& path, absl::string_view what,
                             absl::string_view bytes) {
  return WriteAtomically(
      path, what, [&](int fd) { return WriteAll(fd, bytes.data(), bytes.size(), path, what); });
}

absl::Status CheckWritable(const std::string& given, absl::string_view what) {
  const absl::StatusOr<std::string> path = Destination(given, what);
  if (!path.ok()) return path.status();
  std::string probe = TemporaryName(*path);
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write in ", DirName(*path), ": ", std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  RemoveStaleTemporaries(*path);
  return absl::OkStatus();
}

absl::Status CheckFreeSpace(const std::string& given, uint64_t bytes, absl::string_view what) {
  const absl::StatusOr<std::string> path = Destination(given, what);
  if (!path.ok()) return path.status();
  const std::string folder = DirName(*path);
  struct statvfs fs;
  if (::statvfs(folder.c_str(), &fs) != 0) {
    return ErrnoStatus(errno, absl::StrCat("cannot measure the free space in ", folder));
  }
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (bytes <= free_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrFormat("a %.1f MB %s does not fit in %s: %.1f MB free", bytes / 1e6, what, folder,
                      free_bytes / 1e6));
}

}  // namespace tc
