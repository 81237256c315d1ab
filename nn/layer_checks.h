// Helpers shared by the layers (internal to nn/): argument and input checks,
// each throwing tc::Error (InvalidArgument) with a message that names the
// layer, what it expected and what came; PyTorch's default initialisation of
// a weight and bias; reprs' value formats.
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

// PyTorch's reset_parameters of Linear and the convolutions:
// kaiming_uniform_(a = sqrt(5)) on the weight, U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) on the bias (when defined), fan_in from the weight.
void ResetWeightAndBias(const Tensor& weight, const Tensor& bias, Generator* gen);

// A per-channel vector [C] shaped [1, C, 1, ...] to broadcast over dim 1 of
// a tensor of `rank`.
Tensor PerChannel(const Tensor& v, int64_t rank);

// Values as PyTorch's reprs print them (Python's str): "True" / "False";
// floats in their shortest round-trip form, "0.1", "1.0", "1e-05"; int
// tuples "(4,)", "(3, 5)".
absl::string_view PyBool(bool value);
std::string PyFloat(double value);
std::string PyTuple(absl::Span<const int64_t> values);

}  // namespace tc::nn::internal

#endif  // TENSORCUT_NN_LAYER_CHECKS_H_
