// Counter-based random numbers: value i of a stream is a pure function of
// (seed, offset + i). A Generator is just a seed and a running offset, so a
// draw can be replayed exactly from the (seed, offset) it started at; dropout
// relies on that so that a recomputed mask equals the forward's.
//
//   tc::Generator gen(42);
//   tc::Tensor a = tc::randn({2, 3}, tc::DType::kF32, &gen);
//   tc::manual_seed(7);  // reseeds the default generator
#ifndef TENSORCUT_RUNTIME_RANDOM_H_
#define TENSORCUT_RUNTIME_RANDOM_H_

#include <atomic>
#include <cstdint>

namespace tc {

// 64 random bits for counter `counter` of stream `seed`: two rounds of the
// splitmix64 finaliser over a seed-dependent key, cheap, stateless, and
// passing the statistical tests that matter for init and masks. Inline, so
// that the loops drawing masks (dropout's kernels) vectorise it.
inline uint64_t RandomBits(uint64_t seed, uint64_t counter) {
  uint64_t z =
      counter * 0x9E3779B97F4A7C15ULL + (seed ^ 0xD1B54A32D192ED03ULL) * 0xBF58476D1CE4E5B9ULL;
  for (int round = 0; round < 2; ++round) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
  }
  return z;
}
// Uniform in [0, 1), 53 bits.
inline double RandomUniform(uint64_t seed, uint64_t counter) {
  return static_cast<double>(RandomBits(seed, counter) >> 11) * 0x1.0p-53;
}
// Standard normal (Box-Muller over two counters 2i, 2i+1).
double RandomNormal(uint64_t seed, uint64_t counter);

// A seed and a running offset. Advance is atomic, so that calls of one
// compiled function on several threads each reserve their own counters;
// reseeding while another thread draws is the caller's race.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  Generator(const Generator& other) : seed_(other.seed_), offset_(other.offset()) {}
  Generator& operator=(const Generator& other) {
    seed_ = other.seed_;
    offset_.store(other.offset(), std::memory_order_relaxed);
    return *this;
  }
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_.load(std::memory_order_relaxed); }
  // Reserves n counters and returns the first.
  uint64_t Advance(uint64_t n) { return offset_.fetch_add(n, std::memory_order_relaxed); }
  void Reseed(uint64_t seed) {
    seed_ = seed;
    offset_.store(0, std::memory_order_relaxed);
  }

 private:
  uint64_t seed_;
  std::atomic<uint64_t> offset_{0};
};

// The process-wide generator used when none is passed.
Generator& DefaultGenerator();
void manual_seed(uint64_t seed);

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_RANDOM_H_
