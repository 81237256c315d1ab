// The lowering pass that folds constants: an elementwise op or a view whose
// every operand is a `full` (a tensor of one value) is itself a `full`, of
// the value the op's eager kernel gives on those values, so a program never
// computes it.
//
//   %0: f32[] = full() {dtype=f32, shape=[], value=2}
//   %1: f32[4,3] = full() {dtype=f32, shape=[4,3], value=3}
//   %2: f32[4,3] = mul(%0, %1)                  ->   %2: f32[4,3] = full() {..., value=6}
//   %3: f32[12] = reshape(%2) {shape=[12]}      ->   %3: f32[12] = full() {..., value=6}
//
// The value is computed by the op's kernel on one element, in the op's
// dtype, so the folded graph gives the unfolded graph's bits. A folded node
// keeps its result's name and its place; a `full` nothing reads any more is
// removed. Left unfolded: random ops, graph outputs (a returned constant is
// made afresh every run), views that add elements (an expand is free as a
// view), integer divisions, and results that are not finite or, in i64,
// beyond 2^53 (a `full`'s value is a double).
#ifndef TENSORCUT_CODEGEN_FOLD_CONSTANTS_H_
#define TENSORCUT_CODEGEN_FOLD_CONSTANTS_H_

#include "graph/pass.h"

namespace tc::codegen {

// "fold-constants".
Pass FoldConstants();

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FOLD_CONSTANTS_H_
