// The fusing compiler: the interpreter (codegen/interpreter.h) with each
// elementwise fusion group (codegen/fusion.h) run as one fused kernel
// (codegen/fused_kernel.h) instead of one eager kernel per node.
//
//   CompiledForward fw = pipeline.fw_compile(codegen::fusing(), *part).value();
//   absl::StatusOr<Executable> exe = codegen::fusing()(graph);
//   absl::StatusOr<std::vector<Tensor>> out = (*exe)({x, w, b});
//
// It accepts the graphs and arguments the interpreter accepts, with the same
// error messages (codegen/graph_runner.h), and its results equal the
// interpreter's bitwise (see fused_ops.h). Other nodes run their eager kernel
// in graph order; a group runs where its last node stands. Each value is freed
// after its last use; values inside a group are never materialised.
#ifndef TENSORCUT_CODEGEN_FUSING_COMPILER_H_
#define TENSORCUT_CODEGEN_FUSING_COMPILER_H_

#include "codegen/interpreter.h"

namespace tc::codegen {

// The fusing compiler as a Compiler (the graph is copied).
Compiler fusing();

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FUSING_COMPILER_H_
