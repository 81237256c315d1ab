// How op errors reach the caller.
//
// Every op has a status-returning entry point (tc::Call in runtime/dispatch.h).
// The convenience API (runtime/ops.h: tc::matmul, operator+, ...) throws
// tc::Error carrying that status instead, so model code reads like math; the
// pipeline's entry points catch it and return the status, so a bad shape in a
// model surfaces as an absl::Status, never as a crash.
#ifndef TENSORCUT_RUNTIME_ERROR_H_
#define TENSORCUT_RUNTIME_ERROR_H_

#include <stdexcept>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tc {

class Error : public std::runtime_error {
 public:
  explicit Error(absl::Status status)
      : std::runtime_error(std::string(status.message())), status_(std::move(status)) {}
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw Error(status);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) throw Error(value.status());
  return *std::move(value);
}

// Runs `fn` and turns a thrown tc::Error into its status: the boundary between
// the throwing convenience API and status-returning entry points.
template <typename Fn>
auto CatchErrors(Fn&& fn) -> absl::StatusOr<decltype(fn())> {
  try {
    return fn();
  } catch (const Error& e) {
    return e.status();
  }
}

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_ERROR_H_
