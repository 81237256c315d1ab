// The interpreter: the "nop" compiler. It runs any Graph node by node with the
// eager kernels (the same ones tc::Call runs), so an interpreted graph gives
// bitwise the results of running its ops eagerly.
//
//   absl::StatusOr<Executable> exe = codegen::Interpret(graph);
//   absl::StatusOr<std::vector<Tensor>> out = (*exe)({x, w, b});
//   // a wrong argument: "argument 1 (%p_fc_weight): expected f32[2,3], got f32[3,2]"
//
// Compiling verifies the graph, checks that every op has an eager kernel and
// computes once where each value is last used; a run frees each intermediate
// right after its last use. A region op (a fused pass) runs its body, node
// by node. Kernels run below every dispatch hook: the
// interpreter neither records autograd nor is traced.
#ifndef TENSORCUT_CODEGEN_INTERPRETER_H_
#define TENSORCUT_CODEGEN_INTERPRETER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codegen/executable.h"
#include "codegen/graph_runner.h"
#include "graph/ir.h"
#include "runtime/tensor.h"

namespace tc::codegen {

class Interpreter {
 public:
  // Fails when the graph does not verify or an op has no eager kernel.
  static absl::StatusOr<Interpreter> Create(const Graph& graph);

  // Checks the argument count and each argument's dtype and shape against its
  // placeholder (InvalidArgumentError "expected 3 arguments, got 2" or
  // "argument 1 (%w): expected f32[2,3], got f32[3,2]"), then runs the graph.
  // A kernel's data-dependent error is returned with " (at <source>)".
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> args) const;

  const Graph& graph() const { return graph_; }

 private:
  // One node: the result types its kernel is called with, and where a run
  // keeps values, one slot each in a table (placeholders first): the slots it
  // reads and writes, and those released after it (their last use, or
  // results nothing reads; graph outputs are kept to the end).
  struct Step {
    const Node* node;
    std::vector<TensorType> result_types;
    std::vector<int> inputs, results, release;
    std::shared_ptr<const Interpreter> body;  // a region op's, run in its place
  };

  explicit Interpreter(Graph graph);

  Graph graph_;
  std::vector<Step> steps_;
  int num_slots_ = 0;
  std::vector<int> output_slots_;
};

// The interpreter as an Executable (the graph is copied).
absl::StatusOr<Executable> Interpret(const Graph& graph);
// The interpreter as a Compiler, for the pipeline's compile stages. It reads
// arguments in any layout through their strides and fixes no output layout,
// so it ignores CompileOptions.
Compiler interpreter();

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_INTERPRETER_H_
