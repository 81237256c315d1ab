#include "codegen/fusing_compiler.h"

#include <memory>
#include <utility>

#include "base/status_macros.h"
#include "codegen/program.h"

namespace tc::codegen {
namespace {

class CompiledProgram : public Executable::Impl {
 public:
  explicit CompiledProgram(std::shared_ptr<const Program> program) : program_(std::move(program)) {}

  absl::Status Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const override {
    return program_->Run(args, outputs);
  }
  int num_outputs() const override { return program_->num_outputs(); }
  DimOrder output_order(int i) const override { return program_->output_order(i); }
  PlannedMemory planned_memory() const override { return program_->planned_memory(); }

 private:
  std::shared_ptr<const Program> program_;
};

}  // namespace

absl::StatusOr<Executable> CompileProgram(const Graph& graph, const CompileOptions& options) {
  TC_ASSIGN_OR_RETURN(std::shared_ptr<Program> program, Program::Compile(graph, options));
  return Executable(std::make_shared<const CompiledProgram>(std::move(program)));
}

Compiler fusing() { return Compiler(&CompileProgram); }

}  // namespace tc::codegen
