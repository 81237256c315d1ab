// IntPair: an argument that is one int for both spatial dims or one per dim
// (height, width), as PyTorch's `int | tuple[int, int]` layer arguments.
//
//   nn::Conv2d conv(3, 8, /*kernel_size=*/{3, 5}, /*stride=*/2);
#ifndef TENSORCUT_NN_INT_PAIR_H_
#define TENSORCUT_NN_INT_PAIR_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace tc::nn {

struct IntPair {
  IntPair(int64_t both) : values{both, both}, one_int(true) {}  // NOLINT: PyTorch's int form
  IntPair(int64_t height, int64_t width) : values{height, width} {}

  int64_t operator[](int i) const { return values[i]; }
  bool operator==(const IntPair& other) const { return values == other.values; }
  // As PyTorch's reprs print the argument: "3" when given as one int, else
  // the tuple "(3, 5)".
  std::string ToString() const {
    return one_int ? absl::StrCat(values[0]) : absl::StrCat("(", values[0], ", ", values[1], ")");
  }

  std::array<int64_t, 2> values;
  bool one_int = false;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_INT_PAIR_H_
