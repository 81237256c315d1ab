// Argument and input checks shared by the layers (internal to nn/): each
// throws tc::Error (InvalidArgument) with a message that names the layer,
// what it expected and what came.
#ifndef TENSORCUT_NN_LAYER_CHECKS_H_
#define TENSORCUT_NN_LAYER_CHECKS_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "nn/int_pair.h"
#include "runtime/ops.h"

namespace tc::nn::internal {

[[noreturn]] void ThrowInvalid(absl::string_view message);

// "<layer>: <what> must be positive, got <value>".
void RequirePositive(absl::string_view layer, absl::string_view what, int64_t value);
void RequirePositive(absl::string_view layer, absl::string_view what, const IntPair& value);
void RequireNonNegative(absl::string_view layer, absl::string_view what, const IntPair& value);

// The input's rank is one of `ranks` and, when `channels` >= 0, dim 1 is
// `channels`; `layout` names the expected form ("[N, C, L]").
void RequireInput(absl::string_view layer, const Tensor& x, std::initializer_list<int64_t> ranks,
                  int64_t channels, absl::string_view layout);

// Values as PyTorch's reprs print them (Python's str): "True" / "False";
// floats in their shortest round-trip form, "0.1", "1.0", "1e-05"; int
// tuples "(4,)", "(3, 5)".
absl::string_view PyBool(bool value);
std::string PyFloat(double value);
std::string PyTuple(absl::Span<const int64_t> values);

}  // namespace tc::nn::internal

#endif  // TENSORCUT_NN_LAYER_CHECKS_H_
