#include "runtime/random.h"

#include <cmath>

namespace tc {

double RandomNormal(uint64_t seed, uint64_t counter) {
  const double u1 = 1.0 - RandomUniform(seed, 2 * counter);  // in (0, 1]
  const double u2 = RandomUniform(seed, 2 * counter + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

Generator& DefaultGenerator() {
  static Generator gen(0);
  return gen;
}

void manual_seed(uint64_t seed) { DefaultGenerator().Reseed(seed); }

}  // namespace tc
