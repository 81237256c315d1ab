#include "codegen/fusing_compiler.h"

#include <memory>
#include <utility>

#include "codegen/program.h"

namespace tc::codegen {
namespace {

absl::StatusOr<Executable> CompileFusing(const Graph& graph) {
  absl::StatusOr<std::shared_ptr<Program>> program = Program::Compile(graph);
  if (!program.ok()) return program.status();
  return Executable([program = *std::move(program)](absl::Span<const Tensor> args) {
    return program->Run(args);
  });
}

}  // namespace

Compiler fusing() { return &CompileFusing; }

}  // namespace tc::codegen
