#include "base/version.h"

namespace tc {

// TENSORCUT_VERSION comes from version.bzl, through base/BUILD.bazel.
const char* version() { return TENSORCUT_VERSION; }

}  // namespace tc
