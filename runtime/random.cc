#include "runtime/random.h"

#include <cmath>

namespace tc {

uint64_t RandomBits(uint64_t seed, uint64_t counter) {
  // Two rounds of the splitmix64 finaliser over a seed-dependent key: cheap,
  // stateless, and passes the statistical tests that matter for init and masks.
  uint64_t z =
      counter * 0x9E3779B97F4A7C15ULL + (seed ^ 0xD1B54A32D192ED03ULL) * 0xBF58476D1CE4E5B9ULL;
  for (int round = 0; round < 2; ++round) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
  }
  return z;
}

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
