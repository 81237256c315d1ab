#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace tc::check_internal {

void Fail(const char* file, int line, const char* condition, const std::string& message) {
  std::fprintf(stderr, "tensorcut internal error at %s:%d: %s%s%s\n", file, line,
               condition != nullptr ? condition : "", condition != nullptr ? ": " : "",
               message.c_str());
  std::abort();
}

}  // namespace tc::check_internal
