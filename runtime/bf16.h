// bf16 (bfloat16: f32's sign, exponent and top 7 mantissa bits) on the CPU:
// whether this CPU has instructions for it, and the scalar conversions the
// cast kernel and tests use. Mixed-precision programs (codegen/autocast.h)
// keep bf16 values only as the operands of products.
#ifndef TENSORCUT_RUNTIME_BF16_H_
#define TENSORCUT_RUNTIME_BF16_H_

#include <cstdint>
#include <cstring>

namespace tc {

// Whether oneDNN runs bf16 products on this CPU's own instructions
// (AVX512-BF16 or AMX), decided at run time; elsewhere bf16 would be
// emulated, slower than f32.
bool CpuHasBf16();

// f32 to bf16, rounding to nearest even; a NaN stays a (quiet) NaN and a
// subnormal becomes a zero of its sign, as the AVX512-BF16 instruction (and
// so oneDNN's reorder) converts, so that a cast rounds alike whichever
// kernel runs it. The outcomes are computed and one selected, with no
// branch, so that a loop of these vectorises (the fused passes' casts).
inline uint16_t ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7f800000u) == 0) bits &= 0x80000000u;
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// bf16 to f32, exactly.
inline float FromBf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_BF16_H_
