// Sums into fused passes, a lowering pass: a sum of a loop region's result
// (codegen/loop_region.h), or of a reshape of one, moves into the region, so
// the region's pass adds the value up as it computes it (a bias gradient,
// softmax's backward). A result that only such sums read leaves the
// region's outputs: it never reaches memory.
//
//   %g: f32[64,32] = fused(%d, %y) {           %s: f32[32] = fused(%d, %y) {
//     ...                                        graph(%d: f32[64,32], %y: f32[64,32]) {
//     %g: f32[64,32] = mul(%d, %y)       ->        %g: f32[64,32] = mul(%d, %y)
//     return (%g)                                  %s: f32[32] = sum(%g) {dims=[0], keepdim=false}
//   }                                              return (%s)
//   %s: f32[32] = sum(%g) {dims=[0], ...}        }
//                                              }
//
// A sum moves when it is of f32 or f64 and the fused kernel can sum its
// dims in the region's order (FusedKernel::CanSum); through reshapes only
// when the region runs row-major (the body then holds one reshape, to the
// shape the sum reads). The new node stands where the region stood; its
// results are the kept outputs, in order, then the sums, in graph order.
// Runs after assign-layouts and fold-post-ops (a chain folded into a kernel
// is no region to sum in).
#ifndef TENSORCUT_CODEGEN_FUSE_SUMS_H_
#define TENSORCUT_CODEGEN_FUSE_SUMS_H_

#include "graph/pass.h"

namespace tc::codegen {

// "fuse-sums".
Pass FuseSums();

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FUSE_SUMS_H_
