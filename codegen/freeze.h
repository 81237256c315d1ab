// Freezing an inference program: placeholders whose values are fixed for the
// program's life (a model's weights, compiled for inference) are read once,
// when it is compiled, as torch.jit.freeze does.
//
//   std::vector<Tensor> constants = ...;  // per placeholder: its value, or undefined
//   codegen::Compiler frozen = codegen::Frozen(codegen::fusing(), constants);
//   absl::StatusOr<Executable> exe = frozen(graph);
//   (*exe)(args);  // what args hold at constant placeholders is not read
//
// The split (SplitConstants) rewrites the graph in two. Every node that reads
// only constants moves into a prelude: a weight's bf16 cast, its transpose,
// a reshape of it. The rest reads the prelude's results as placeholders of
// its own, appended after the graph's:
//
//   %w: f32[8,4], %x: f32[2,4]                   prelude(%w):  %0 = permute(%w) {dims=[1,0]}
//   %0: f32[4,8] = permute(%w) {dims=[1,0]}  ->                outputs %0
//   %1: f32[2,8] = matmul(%x, %0)                rest(%w, %x, %frozen):
//                                                              %1 = matmul(%x, %frozen)
//
// Random ops and collectives stay in the rest, and so do views that add
// elements (an expand is free as a view, not once materialized) and nodes
// without operands (constants, which compilers fold themselves).
//
// A frozen executable copies the constants when Frozen is called: writes to
// the caller's tensors afterwards are not seen (compile again after changing
// weights). It runs the prelude once per compiled graph, and freezes the
// copies and the prelude's results (runtime/tensor.h), so that matmul and
// convolution kernels reorder such weights into the layout oneDNN prefers
// once, not per call. An output that is a constant, or a view of one, is
// copied: a caller never holds a frozen tensor.
#ifndef TENSORCUT_CODEGEN_FREEZE_H_
#define TENSORCUT_CODEGEN_FREEZE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codegen/executable.h"
#include "graph/ir.h"
#include "runtime/tensor.h"

namespace tc::codegen {

struct ConstantSplit {
  Graph prelude;  // placeholders: the constant ones, in order; outputs: what the rest reads
  Graph rest;     // the graph's placeholders, then one per prelude output
};

// `constant`: one flag per placeholder of `graph`. Both graphs verify.
absl::StatusOr<ConstantSplit> SplitConstants(const Graph& graph, absl::Span<const bool> constant);

// `inner` over graphs whose placeholder i is `constants[i]` wherever that is
// defined. Compiling a graph with another number of placeholders, or whose
// constant placeholder has another type, fails with the placeholder's name.
Compiler Frozen(Compiler inner, const std::vector<Tensor>& constants);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FREEZE_H_
