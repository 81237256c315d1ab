#include "codegen/fusing_compiler.h"

#include <memory>
#include <utility>

#include "base/status_macros.h"
#include "codegen/program.h"

namespace tc::codegen {
namespace {

absl::StatusOr<Executable> CompileFusing(const Graph& graph) {
  TC_ASSIGN_OR_RETURN(std::shared_ptr<Program> program, Program::Compile(graph));
  return Executable(
      [program = std::move(program)](absl::Span<const Tensor> args) { return program->Run(args); });
}

}  // namespace

Compiler fusing() { return &CompileFusing; }

}  // namespace tc::codegen
