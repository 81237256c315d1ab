// The lowering pass that folds a convolution's bias into the convolution: a
// conv2d whose only reader adds a per-channel bias ([1, C, 1, 1], as
// nn::Conv2d computes it) becomes one conv2d with that bias operand, which
// oneDNN applies as it writes the output: one pass over it fewer.
//
//   %y: f32[2,4,8,8] = conv2d(%x, %w) {...}       %z: f32[2,4,8,8] = conv2d(%x, %w, %b) {...}
//   %z: f32[2,4,8,8] = add(%y, %b)          ->
//
// The folded node stands where the add stood (the bias may be computed after
// the convolution) and takes the add's result name and source.
#ifndef TENSORCUT_CODEGEN_FOLD_CONV_BIAS_H_
#define TENSORCUT_CODEGEN_FOLD_CONV_BIAS_H_

#include "graph/pass.h"

namespace tc::codegen {

// "fold-conv-bias".
Pass FoldConvolutionBias();

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FOLD_CONV_BIAS_H_
