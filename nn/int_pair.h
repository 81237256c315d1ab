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
  IntPair(int64_t both) : values{both, both} {}  // NOLINT: implicit, as PyTorch's int form
  IntPair(int64_t height, int64_t width) : values{height, width} {}

  int64_t operator[](int i) const { return values[i]; }
  bool operator==(const IntPair& other) const { return values == other.values; }
  // "3" when both agree, else "(3, 5)", as PyTorch's reprs print them.
  std::string ToString() const {
    return values[0] == values[1] ? absl::StrCat(values[0])
                                  : absl::StrCat("(", values[0], ", ", values[1], ")");
  }

  std::array<int64_t, 2> values;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_INT_PAIR_H_
