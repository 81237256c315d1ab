// The fusing compiler: each graph lowered to a Program (codegen/program.h):
// the fused nodes of the fuse-elementwise pass (codegen/fuse_elementwise.h)
// run as one fused kernel (codegen/fused_kernel.h), other nodes through
// out-variant kernels into an arena planned at compile time, views resolved
// at compile time.
//
//   CompiledForward fw = pipeline.fw_compile(codegen::fusing(), *part).value();
//   absl::StatusOr<Executable> exe = codegen::fusing()(graph);
//   absl::StatusOr<std::vector<Tensor>> out = (*exe)({x, w, b});
//
// It takes CompileOptions (codegen/executable.h): arguments in the layouts
// given, outputs past `free_outputs_from` in whatever layout the program
// planned (output_order says which).
//
// It accepts the graphs and arguments the interpreter accepts, with the same
// argument errors (codegen/graph_runner.h). Fused elementwise results equal
// the interpreter's bitwise (see fused_ops.h); sums taken in a fused pass and
// oneDNN post-ops match them to rounding.
#ifndef TENSORCUT_CODEGEN_FUSING_COMPILER_H_
#define TENSORCUT_CODEGEN_FUSING_COMPILER_H_

#include "codegen/executable.h"

namespace tc::codegen {

// A graph compiled to a Program, as an Executable (the graph is copied).
absl::StatusOr<Executable> CompileProgram(const Graph& graph, const CompileOptions& options = {});
// The fusing compiler as a Compiler: CompileProgram.
Compiler fusing();

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FUSING_COMPILER_H_
