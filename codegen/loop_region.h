// The two kinds of `fused` region a lowered graph holds (the verifier's
// rules, graph/verifier.cc), as the lowering passes and Program see them:
//
//   loop region: fusible ops over one shape, and sums of their results, run
//     as one pass over memory (codegen/fused_kernel.h);
//   epilogue region: a kernel that takes an epilogue (OpDef::epilogue) and
//     the chain of elementwise ops it applies to its first result.
//
// (graph/verifier.h's EpilogueKernel tells them apart.) A fusible node
// outside any region is a loop region of one node: the passes that rewrite
// loop regions (fold-post-ops makes one an epilogue, fuse-sums adds sums to
// one) take it as one. A
// body's placeholders carry no layout: a region reads its operands through
// whatever strides they have.
#ifndef TENSORCUT_CODEGEN_LOOP_REGION_H_
#define TENSORCUT_CODEGEN_LOOP_REGION_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/ir.h"
#include "graph/verifier.h"  // EpilogueKernel

namespace tc::codegen {

// A loop region's body, and the value of the outer graph each of its
// placeholders stands for.
struct LoopRegion {
  Graph body;
  std::vector<Value*> inputs;
};

// `node`'s loop region: a copy of a fused node's body, or a body of just a
// lone fusible node (one placeholder per distinct operand, named as it is,
// and its results named and laid out as they are); nullopt for any other
// node.
absl::StatusOr<std::optional<LoopRegion>> LoopRegionOf(const Node& node);

// Replaces `old_nodes` (in graph order) by one `fused` node over `inputs`
// holding `body`, placed before `position` (one of the old nodes): its
// result i takes the uses and the name of `replaced[i]`, one per body output.
// Every result of an old node that is still read must be replaced.
absl::Status ReplaceByRegion(Graph& graph, absl::Span<Node* const> old_nodes,
                             absl::Span<Value* const> replaced, const Node* position,
                             std::vector<Value*> inputs, Graph body);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_LOOP_REGION_H_
