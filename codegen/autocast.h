// Mixed precision. The autocast pass, a lowering pass, runs every f32
// product (matmul, linear, conv2d and its backward ops) on bf16 operands with
// f32 accumulation and an f32 result, as torch.autocast does on CPU; every
// other op (reductions, norms, softmax, losses, the optimizer's update) stays
// f32, and so do the graph's inputs and outputs: a parameter's master copy
// and its gradient are f32.
//
//   %y: f32[8,32] = linear(%x, %w, %b)
//     ->
//   %x_bf16: bf16[8,16] = cast(%x) {dtype=bf16}
//   %w_bf16: bf16[32,16] = cast(%w) {dtype=bf16}
//   %b_bf16: bf16[32] = cast(%b) {dtype=bf16}
//   %y: f32[8,32] = linear(%x_bf16, %w_bf16, %b_bf16) {out_dtype=f32}
//
// A value several products read is cast once, just before the first.
// Attention (sdpa, sdpa_backward), whose fused kernels run f32 only, is
// written out first (graph/decompositions.h's AttentionDecompositions), so
// that its products run bf16 like every other. For
// training the pass runs on the joint graph, before partitioning
// (IrOptions::precision), so the backward's products are cast too and the
// partition may save a bf16 operand instead of its f32 value, and the halves
// are compiled as they come; a compiler made by WithPrecision runs it on
// each graph it compiles (an inference graph).
//
//   codegen::Compiler bf16 = codegen::WithPrecision(codegen::fusing(), Precision::kBF16);
#ifndef TENSORCUT_CODEGEN_AUTOCAST_H_
#define TENSORCUT_CODEGEN_AUTOCAST_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codegen/executable.h"
#include "graph/pass.h"

namespace tc {

// The precision a compiled program computes its products in.
enum class Precision { kF32, kBF16 };

// "f32", "bf16".
absl::string_view PrecisionName(Precision precision);
// The inverse: `precision: expected f32 or bf16, got "f16"` for another name.
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);

namespace codegen {

// Products of fewer FLOPs (graph/op_def.h's estimate at the dims' hints)
// stay f32: a bf16 product that small saves less than its casts cost (the
// `linear` reference model's 4x3x2 layer ran 2.5x slower in bf16).
inline constexpr double kAutocastMinFlops = 1 << 20;

// "autocast-bf16": casts the products of at least `min_flops`.
Pass AutocastBf16(double min_flops = kAutocastMinFlops);

// Whether `precision` runs in bf16 here: kBF16 on a CPU with bf16
// instructions (tc::CpuHasBf16). kBF16 on a CPU without them is false, and
// says so on stderr, once per process: products run f32.
bool RunsInBf16(Precision precision);

// `inner` that runs the autocast pass first where RunsInBf16(precision), else
// `inner` itself.
Compiler WithPrecision(Compiler inner, Precision precision);

}  // namespace codegen
}  // namespace tc

#endif  // TENSORCUT_CODEGEN_AUTOCAST_H_
