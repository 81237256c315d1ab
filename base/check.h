// Internal invariants: conditions that hold unless tensorcut itself has a
// bug, never ones input from a user can break (those are statuses, or
// tc::Error where a call cannot return one: runtime/error.h). A failed check
// prints where and what, then aborts:
//
//   TC_CHECK(v.size() == 2, "attribute '", name, "' has ", v.size(), " values, not 2");
//   TC_FAIL("no kernel for dtype ", DTypeName(dtype));  // a path never taken
//
// prints "tensorcut internal error at graph/op_attrs.cc:16: v.size() == 2:
// attribute 'stride' has 3 values, not 2". The message parts are joined by
// absl::StrCat, and only evaluated when the check fails.
#ifndef TENSORCUT_BASE_CHECK_H_
#define TENSORCUT_BASE_CHECK_H_

#include <string>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"

namespace tc::check_internal {

// Prints the failure (`condition` may be null: a TC_FAIL) and aborts.
[[noreturn]] void Fail(const char* file, int line, const char* condition,
                       const std::string& message);

}  // namespace tc::check_internal

#define TC_CHECK(condition, ...)                                                               \
  do {                                                                                         \
    if (ABSL_PREDICT_FALSE(!(condition))) {                                                    \
      ::tc::check_internal::Fail(__FILE__, __LINE__, #condition, ::absl::StrCat(__VA_ARGS__)); \
    }                                                                                          \
  } while (false)

#define TC_FAIL(...) \
  ::tc::check_internal::Fail(__FILE__, __LINE__, nullptr, ::absl::StrCat(__VA_ARGS__))

#endif  // TENSORCUT_BASE_CHECK_H_
