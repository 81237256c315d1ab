// The early-return macros: an error returns at once with its status, an OK
// value flows on, and the expression is evaluated exactly once.
#include "base/status_macros.h"

#include <memory>
#include <string>

#include "catch2/catch.hpp"

namespace tc {
namespace {

absl::StatusOr<int> Half(int x, int* calls) {
  ++*calls;
  if (x % 2 != 0) return absl::InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

absl::StatusOr<int> Quarter(int x, int* calls) {
  TC_ASSIGN_OR_RETURN(const int half, Half(x, calls));
  TC_ASSIGN_OR_RETURN(int quarter, Half(half, calls));
  return quarter;
}

absl::Status CheckEven(int x, int* calls) {
  TC_RETURN_IF_ERROR(Half(x, calls).status());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<int>> Boxed(int x) {
  if (x < 0) return absl::OutOfRangeError("negative");
  return std::make_unique<int>(x);
}

absl::StatusOr<int> Unbox(int x) {
  std::unique_ptr<int> box;
  TC_ASSIGN_OR_RETURN(box, Boxed(x));  // an existing variable, a move-only value
  return *box;
}

TEST_CASE("TC_ASSIGN_OR_RETURN passes values on and returns the first error") {
  int calls = 0;
  REQUIRE(Quarter(12, &calls).value() == 3);
  REQUIRE(calls == 2);
  calls = 0;
  const absl::StatusOr<int> odd = Quarter(6, &calls);  // 6 / 2 = 3 is odd
  REQUIRE(odd.status() == absl::InvalidArgumentError("odd: 3"));
  REQUIRE(calls == 2);
  calls = 0;
  REQUIRE(Quarter(5, &calls).status() == absl::InvalidArgumentError("odd: 5"));
  REQUIRE(calls == 1);  // the second call never ran
  REQUIRE(Unbox(7).value() == 7);
  REQUIRE(Unbox(-1).status() == absl::OutOfRangeError("negative"));
}

TEST_CASE("TC_RETURN_IF_ERROR returns an error status and evaluates once") {
  int calls = 0;
  REQUIRE(CheckEven(4, &calls).ok());
  REQUIRE(CheckEven(3, &calls) == absl::InvalidArgumentError("odd: 3"));
  REQUIRE(calls == 2);
}

}  // namespace
}  // namespace tc
