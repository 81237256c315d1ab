// Post-op folding, a lowering pass: a loop region (codegen/loop_region.h)
// that is a chain of elementwise ops over a kernel's first result, its only
// reader, becomes that kernel's epilogue (OpDef::epilogue; oneDNN's
// post-ops after matmul and linear, a relu inside batch norm): one `fused`
// node whose body is the kernel, then the chain, so the program calls the
// kernel once and saves the pass over memory the chain would take.
//
//   %y: f32[8,32] = linear(%x, %w, %b)         %z: f32[8,32] = fused(%x, %w, %b, %r) {
//   %g: f32[8,32] = gelu(%y) {approximate=      graph(%x: ..., %w: ..., %b: ..., %r: ...) {
//       "none"}                          ->       %y: f32[8,32] = linear(%x, %w, %b)
//   %z: f32[8,32] = add(%g, %r)                   %g: f32[8,32] = gelu(%y) {...}
//                                                 %z: f32[8,32] = add(%g, %r)
//                                                 return (%z)
//                                               }
//                                             }
//
// The chain must read the kernel's result once per op, as the first operand
// (either for add, mul, maximum, minimum), every other operand an input of
// the region, every value of the result's type and layout, ending in the
// region's one output; each other operand of the result's shape, a scalar
// or a row every row reads (the broadcasts oneDNN runs fast); and the kernel
// must take it (OpDef::TakesEpilogue).
// The kernel's other results (batch norm's statistics) follow in the new
// node's results. It stands where the chain stood when nothing between the
// two reads those, else where the kernel stood when the chain's operands
// are computed before it; otherwise nothing is folded. Runs after
// assign-layouts, which leaves a kernel's result and its chain in one layout
// when they can share it.
#ifndef TENSORCUT_CODEGEN_FOLD_POST_OPS_H_
#define TENSORCUT_CODEGEN_FOLD_POST_OPS_H_

#include "graph/pass.h"

namespace tc::codegen {

// "fold-post-ops".
Pass FoldPostOps();

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FOLD_POST_OPS_H_
