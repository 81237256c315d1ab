#include "codegen/fused_ops.h"

#include <string>
#include <type_traits>

#include "base/check.h"
#include "runtime/bf16.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/elementwise_math.h"
#include "runtime/random.h"

namespace tc::codegen {
namespace {

namespace math = kernels::math;

// A destination register may be one of the sources (in-place reuse) but never
// overlaps one otherwise, so no loop below carries a dependency: `ivdep` lets
// GCC vectorise them without runtime alias checks, whose fallback is scalar.
template <typename T>
T* Reg(void* const* registers, int r) {
  return static_cast<T*>(registers[r]);
}

template <typename In, typename Out, typename F>
void Map1(void* const* regs, const FusedInstr& ins, int64_t n, F f) {
  const In* x = Reg<In>(regs, ins.src[0]);
  Out* o = Reg<Out>(regs, ins.dst);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
}

template <typename In, typename Out, typename F>
void Map2(void* const* regs, const FusedInstr& ins, int64_t n, F f) {
  const In* a = Reg<In>(regs, ins.src[0]);
  const In* b = Reg<In>(regs, ins.src[1]);
  Out* o = Reg<Out>(regs, ins.dst);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
}

[[noreturn]] void Unsupported(const FusedInstr& ins) {
  TC_FAIL("fused kernel has no ", OpName(ins.op), " on ", DTypeName(ins.dtype));
}

// Comparisons on every dtype; the other ops without attributes on floats.
template <typename T>
bool EvalPlain(const FusedInstr& ins, void* const* regs, int64_t n) {
  return math::VisitPlainOp(ins.op, [&](auto f) {
    using F = decltype(f);
    if constexpr (std::is_base_of_v<math::Comparison, F>) {
      Map2<T, bool>(regs, ins, n, f);
    } else if constexpr (!std::is_floating_point_v<T>) {
      Unsupported(ins);
    } else if constexpr (std::is_base_of_v<math::UnaryFormula, F>) {
      Map1<T, T>(regs, ins, n, f);
    } else {
      Map2<T, T>(regs, ins, n, f);
    }
  });
}

// x, seed, offset -> dropout(x): the eager kernel's formula
// (runtime/kernels/embedding_dropout.cc) at the pass's element indices.
template <typename T>
void Dropout(const FusedInstr& ins, void* const* regs, int64_t n, int64_t start) {
  const T* x = Reg<T>(regs, ins.src[0]);
  const uint64_t seed = static_cast<uint64_t>(*Reg<int64_t>(regs, ins.src[1]));
  const uint64_t offset = static_cast<uint64_t>(*Reg<int64_t>(regs, ins.src[2])) + start;
  const double p = ins.attrs.p;
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  T* o = Reg<T>(regs, ins.dst);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    o[i] = RandomUniform(seed, offset + static_cast<uint64_t>(i)) >= p ? x[i] * scale : T(0);
  }
}

// Gelu, its backward, pow and dropout: the ops with attributes, on floats.
template <typename T>
void EvalWithAttributes(const FusedInstr& ins, void* const* regs, int64_t n, int64_t start) {
  switch (ins.op) {
    case OpKind::kDropout:
      return Dropout<T>(ins, regs, n, start);
    case OpKind::kGelu:
      return math::VisitGelu<false>(ins.attrs.approximation,
                                    [&](auto f) { Map1<T, T>(regs, ins, n, f); });
    case OpKind::kGeluBackward:
      return math::VisitGelu<true>(ins.attrs.approximation,
                                   [&](auto f) { Map2<T, T>(regs, ins, n, f); });
    case OpKind::kPow:
      return math::VisitPow(ins.attrs.exponent, [&](auto f) { Map1<T, T>(regs, ins, n, f); });
    default:
      Unsupported(ins);
  }
}

template <typename T>
void Eval(const FusedInstr& ins, void* const* regs, int64_t n, int64_t start) {
  if (EvalPlain<T>(ins, regs, n)) return;
  switch (ins.op) {
    case OpKind::kWhere: {
      const bool* c = Reg<bool>(regs, ins.src[0]);
      const T* a = Reg<T>(regs, ins.src[1]);
      const T* b = Reg<T>(regs, ins.src[2]);
      T* o = Reg<T>(regs, ins.dst);
#pragma GCC ivdep
      for (int64_t i = 0; i < n; ++i) o[i] = math::Where{}(c[i], a[i], b[i]);
      return;
    }
    case OpKind::kCast:
      return kernels::VisitDType(ins.result_dtype, [&](auto to) {
        Map1<T, decltype(to)>(regs, ins, n, math::Cast<decltype(to)>{});
      });
    default:
      if constexpr (std::is_floating_point_v<T>) {
        return EvalWithAttributes<T>(ins, regs, n, start);
      }
      Unsupported(ins);
  }
}

}  // namespace

bool HasFusedEvaluation(OpKind op) {
  switch (op) {
    case OpKind::kWhere:
    case OpKind::kCast:
    case OpKind::kGelu:
    case OpKind::kGeluBackward:
    case OpKind::kPow:
    case OpKind::kDropout:
      return true;
    default:
      return math::VisitPlainOp(op, [](auto) {});
  }
}

void EvalInstr(const FusedInstr& instr, void* const* registers, int64_t n, int64_t start) {
  // bf16 has no C++ arithmetic type: its values are the raw 16 bits, which
  // only casts to and from f32 read or write.
  if (instr.dtype == DType::kBF16) {
    return Map1<uint16_t, float>(registers, instr, n, [](uint16_t h) { return FromBf16(h); });
  }
  if (instr.result_dtype == DType::kBF16) {
    return Map1<float, uint16_t>(registers, instr, n, [](float f) { return ToBf16(f); });
  }
  kernels::VisitDType(instr.dtype,
                      [&](auto zero) { Eval<decltype(zero)>(instr, registers, n, start); });
}

}  // namespace tc::codegen
