// Parameter initialisers, as torch.nn.init. Each returns a new f32 tensor
// drawn from `gen` (nullptr: the default generator), so a model built from a
// Generator with a fixed seed is reproducible.
//
//   Tensor w = nn::init::KaimingUniform({512, 784}, /*fan_in=*/784, gen);
#ifndef TENSORCUT_NN_INIT_H_
#define TENSORCUT_NN_INIT_H_

#include <cstdint>

#include "runtime/ops.h"

namespace tc::nn::init {

// Uniform in [-bound, bound).
Tensor Uniform(absl::Span<const int64_t> shape, double bound, Generator* gen);

// PyTorch's default for Linear and Conv2d weights: kaiming_uniform_ with
// a = sqrt(5), i.e. bound = gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + a^2)),
// which works out to 1 / sqrt(fan_in).
double KaimingUniformBound(int64_t fan_in);
Tensor KaimingUniform(absl::Span<const int64_t> shape, int64_t fan_in, Generator* gen);

// PyTorch's default bias for Linear and Conv2d: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)).
double BiasBound(int64_t fan_in);

// xavier_uniform_: bound = sqrt(6 / (fan_in + fan_out)).
double XavierUniformBound(int64_t fan_in, int64_t fan_out);
Tensor XavierUniform(absl::Span<const int64_t> shape, int64_t fan_in, int64_t fan_out,
                     Generator* gen);

}  // namespace tc::nn::init

#endif  // TENSORCUT_NN_INIT_H_
