// The lowering pass that makes elementwise fusion part of the IR: each group
// PlanFusion (codegen/fusion.h) finds becomes one `fused` node, placed where
// the group's last node stood, whose body is the group's nodes.
//
//   graph(%x: f32[4,3], %b: f32[3]) {          graph(%x: f32[4,3], %b: f32[3]) {
//     %0: f32[4,3] = add(%x, %b)                 %1: f32[4,3] = fused(%x, %b) {
//     %1: f32[4,3] = relu(%0)          ->          graph(%x: f32[4,3], %b: f32[3]) {
//     return (%1)                                    %0: f32[4,3] = add(%x, %b)
//   }                                                %1: f32[4,3] = relu(%0)
//                                                    return (%1)
//                                                  }
//                                                }
//                                                return (%1)
//                                              }
//
// The body's placeholders are the group's inputs and its outputs the group's
// outputs (values read after it or returned), under the names they had, so
// every value keeps its name. Nodes outside groups are unchanged and keep
// their order; a lone fusible node stays as it is.
#ifndef TENSORCUT_CODEGEN_FUSE_ELEMENTWISE_H_
#define TENSORCUT_CODEGEN_FUSE_ELEMENTWISE_H_

#include "absl/status/statusor.h"
#include "codegen/fusion.h"
#include "graph/pass.h"

namespace tc::codegen {

// "fuse-elementwise".
Pass FuseElementwise();

// `group`'s nodes as a graph of their own: a placeholder per group input and
// the group's outputs returned, every value under the name it had. The body
// of the fused node the pass makes of the group.
absl::StatusOr<Graph> BodyOf(const FusionGroup& group);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FUSE_ELEMENTWISE_H_
