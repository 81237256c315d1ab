// The library's version, as set in version.bzl (the one place it is set),
// e.g. "0.2.0". `tensorcut --version` prints it with the build's configuration
// (runtime/build_info.h).
#ifndef TENSORCUT_BASE_VERSION_H_
#define TENSORCUT_BASE_VERSION_H_

namespace tc {

// "MAJOR.MINOR.PATCH" of the library this program runs with: the shared
// library's, when linked against libtensorcut.so.
const char* version();

}  // namespace tc

#endif  // TENSORCUT_BASE_VERSION_H_
