#include "base/cache_folder.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace tc {

std::string CacheFolder() {
  if (const char* dir = std::getenv("TENSORCUT_CACHE_DIR"); dir != nullptr) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/tensorcut");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/tensorcut");
  }
  return "";
}

}  // namespace tc
