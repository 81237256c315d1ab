// Layout assignment, a lowering pass: the memory order a program gives each
// value it computes, set on the value (Value::layout) and printed after its
// type ("%3: f32[2,4,8,8]:nhwc").
//
// oneDNN's convolutions run fastest on channels-last (NHWC) activations and
// reorder anything else into that layout around every call, forward and
// backward. So the pass makes a convolution's result channels-last and lets
// the ops between convolutions (batch norm, pooling, fused elementwise
// passes and their gradients) follow the layout of the activation they read:
// data stays channels-last from the first convolution to the flatten, and
// the reorders left are at the graph's edges. The logical shape stays
// [N, C, H, W] throughout; only strides change (graph/shape.h's DimOrder).
//
//   RunPasses(graph, {FuseElementwise(), AssignLayouts(options)});
//   //   %y: f32[2,4,8,8]:nhwc = conv2d(%x, %w) {...}
//   //   %n: f32[2,4,8,8]:nhwc, %m: f32[4], %v: f32[4] = batch_norm(%y, %g, %b) {...}
//
// Placeholders take the layouts of `options.argument_orders`. Values the
// graph returns before `options.free_outputs_from` stay row-major for the
// caller, and so does a value read only by reshapes (a flatten of NHWC data
// would be a copy; writing it row-major costs nothing extra). A view is
// marked with the layout its strides have (a permute of an NHWC input is
// channels-last), and followed like any value. Only a node's first result
// takes a layout (batch norm's statistics stay row-major), and every result
// of a fused pass the same one: a fused node's body values too, since its
// pass runs in their order.
#ifndef TENSORCUT_CODEGEN_LAYOUT_PLAN_H_
#define TENSORCUT_CODEGEN_LAYOUT_PLAN_H_

#include "codegen/executable.h"
#include "graph/pass.h"

namespace tc::codegen {

// "assign-layouts".
Pass AssignLayouts(const CompileOptions& options);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_LAYOUT_PLAN_H_
