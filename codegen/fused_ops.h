// The instructions of a fused kernel (codegen/fused_kernel.h) and their
// evaluation on one block of elements. Each op evaluates the functor its eager
// kernel evaluates (runtime/kernels/elementwise_math.h), in the same type, so
// fused and eager results are bitwise equal.
//
//   FusedInstr mul{OpKind::kMul, DType::kF32, DType::kF32, /*dst=*/2, {0, 1, -1}};
//   EvalInstr(mul, registers, n, start);  // registers[2][i] = registers[0][i] * registers[1][i]
#ifndef TENSORCUT_CODEGEN_FUSED_OPS_H_
#define TENSORCUT_CODEGEN_FUSED_OPS_H_

#include <array>
#include <cstdint>

#include "graph/op_attrs.h"
#include "graph/op_def.h"

namespace tc::codegen {

// dst = op(src...), on operands of dtype `dtype` (for where, the dtype of its
// two value operands; for cast, the source dtype). Unused sources are -1.
struct FusedInstr {
  OpKind op;
  DType dtype;
  DType result_dtype;
  int dst;
  std::array<int, 3> src;
  ElementwiseAttrs attrs = {};  // pow's, gelu's, gelu_backward's and dropout's
};

// Whether EvalInstr evaluates `op` (on every dtype its shape inference
// admits): the elementwise ops without attributes, where, cast, gelu, its
// backward, pow and dropout. A test checks that these are exactly the ops
// the op table calls fusible (kTraitFusible), which are all fusion planning
// and the verifier admit in a fused region.
bool HasFusedEvaluation(OpKind op);

// Evaluates `instr` on elements [0, n) of the registers, each an array of
// its value's dtype, the pass's elements [start, start + n): a random op
// (dropout) draws element i's number at its offset + start + i, as its
// eager kernel does in row-major order. dst may be one of the sources.
// `instr.op` must have a fused evaluation.
void EvalInstr(const FusedInstr& instr, void* const* registers, int64_t n, int64_t start);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FUSED_OPS_H_
