#include "nn/init.h"

#include <cmath>

namespace tc::nn::init {

Tensor Uniform(absl::Span<const int64_t> shape, double bound, Generator* gen) {
  return rand(shape, DType::kF32, gen, -bound, bound);
}

double KaimingUniformBound(int64_t fan_in) {
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  return gain * std::sqrt(3.0 / static_cast<double>(fan_in));
}

Tensor KaimingUniform(absl::Span<const int64_t> shape, int64_t fan_in, Generator* gen) {
  return Uniform(shape, KaimingUniformBound(fan_in), gen);
}

double BiasBound(int64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); }

double XavierUniformBound(int64_t fan_in, int64_t fan_out) {
  return std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
}

Tensor XavierUniform(absl::Span<const int64_t> shape, int64_t fan_in, int64_t fan_out,
                     Generator* gen) {
  return Uniform(shape, XavierUniformBound(fan_in, fan_out), gen);
}

}  // namespace tc::nn::init
