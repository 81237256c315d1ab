// Parameter initialisers, as torch.nn.init: each fills an existing tensor in
// place (its handle, dtype and shape stay; it may require grad) with values
// drawn from `gen` (nullptr: the default generator), and returns it. A model
// built from a Generator with a fixed seed is therefore reproducible.
//
//   nn::init::kaiming_normal_(conv.weight(), 0, "fan_out", "relu");
//   nn::init::zeros_(conv.bias());
//
// Fans follow PyTorch: for a weight [out, in, k...], fan_in = in * prod(k) and
// fan_out = out * prod(k). Bad arguments (an unknown mode or nonlinearity, a
// tensor of rank < 2 where fans are needed) throw tc::Error (InvalidArgument).
#ifndef TENSORCUT_NN_INIT_H_
#define TENSORCUT_NN_INIT_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "runtime/ops.h"

namespace tc::nn::init {

// The recommended gain for a nonlinearity: 1 for linear, conv and sigmoid,
// 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + a^2)) for leaky_relu with
// negative slope `param` (0.01 when not given), 3/4 for selu.
double calculate_gain(absl::string_view nonlinearity, std::optional<double> param = std::nullopt);

struct Fans {
  int64_t fan_in, fan_out;
};
Fans calculate_fans(const Tensor& t);

const Tensor& uniform_(const Tensor& t, double a = 0, double b = 1, Generator* gen = nullptr);
const Tensor& normal_(const Tensor& t, double mean = 0, double std_dev = 1,
                      Generator* gen = nullptr);
const Tensor& constant_(const Tensor& t, double value);
const Tensor& zeros_(const Tensor& t);
const Tensor& ones_(const Tensor& t);

// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)); N(0, gain^2 * 2 / (fan_in + fan_out)).
const Tensor& xavier_uniform_(const Tensor& t, double gain = 1, Generator* gen = nullptr);
const Tensor& xavier_normal_(const Tensor& t, double gain = 1, Generator* gen = nullptr);

// std = calculate_gain(nonlinearity, a) / sqrt(fan), fan by `mode` ("fan_in"
// or "fan_out"); uniform draws from U(-sqrt(3) std, sqrt(3) std). Linear and
// Conv weights default to kaiming_uniform_(w, sqrt(5)), which is
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
const Tensor& kaiming_uniform_(const Tensor& t, double a = 0, absl::string_view mode = "fan_in",
                               absl::string_view nonlinearity = "leaky_relu",
                               Generator* gen = nullptr);
const Tensor& kaiming_normal_(const Tensor& t, double a = 0, absl::string_view mode = "fan_in",
                              absl::string_view nonlinearity = "leaky_relu",
                              Generator* gen = nullptr);

// N(mean, std^2) conditioned on [a, b] (drawn by inverting the normal CDF, so
// every value lies within the bounds); needs a < b.
const Tensor& trunc_normal_(const Tensor& t, double mean = 0, double std_dev = 1, double a = -2,
                            double b = 2, Generator* gen = nullptr);

// A (semi-)orthogonal matrix times `gain`: t viewed as [size(0), numel / size(0)]
// has orthonormal rows (or columns, whichever are fewer), from the QR
// decomposition of a normal draw with R's diagonal made positive.
const Tensor& orthogonal_(const Tensor& t, double gain = 1, Generator* gen = nullptr);

}  // namespace tc::nn::init

#endif  // TENSORCUT_NN_INIT_H_
