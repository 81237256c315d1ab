// Which fusion groups an out-variant kernel can apply as post-ops
// (runtime/dispatch.h's PostOp): a chain of elementwise ops that starts at the
// kernel's result and reads nothing else of the group's.
//
//   // y = linear(x, w, b); z = gelu(y) + r
//   std::optional<PostOpChain> chain = MatchPostOpChain(group, y);
//   // chain->ops: {gelu, add}; chain->operands: {r}
//
// A program (codegen/program.h) then runs the kernel with the chain instead
// of the group, when the kernel takes it and nothing else reads y: one pass
// over memory fewer.
#ifndef TENSORCUT_CODEGEN_POST_OP_CHAIN_H_
#define TENSORCUT_CODEGEN_POST_OP_CHAIN_H_

#include <optional>
#include <vector>

#include "codegen/fusion.h"
#include "graph/ir.h"
#include "runtime/dispatch.h"

namespace tc::codegen {

struct PostOpChain {
  std::vector<PostOp> ops;
  // The second operand of each binary op, in order: inputs of the group.
  std::vector<const Value*> operands;
};

// The group as post-ops on `head` (one of its inputs), or nullopt when it is
// not such a chain: every node reads the previous node's result (`head` for
// the first) exactly once, as its only or first operand (either operand for
// add, mul, maximum and minimum), its other operand (if any) is a group input
// other than `head`, every result has head's type, no node has attributes
// but gelu's form, and the group's one output is its last node's result.
// Whether a kernel takes the ops is its own check (GetPostOpKernel).
std::optional<PostOpChain> MatchPostOpChain(const FusionGroup& group, const Value* head);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_POST_OP_CHAIN_H_
