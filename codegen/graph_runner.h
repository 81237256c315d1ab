// What every graph compiler in codegen/ shares with the interpreter, so that
// they accept the same graphs and arguments and report errors the same way:
// the compile-time check, the argument check, and running one node's kernel.
//
//   TC_RETURN_IF_ERROR(CheckCompilable(graph, "interpreter"));
//   ...
//   TC_RETURN_IF_ERROR(CheckArguments(graph.placeholders(), args));
//   absl::StatusOr<TensorList> out = RunNodeKernel(*node, inputs, result_types);
#ifndef TENSORCUT_CODEGEN_GRAPH_RUNNER_H_
#define TENSORCUT_CODEGEN_GRAPH_RUNNER_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/ir.h"
#include "runtime/dispatch.h"

namespace tc::codegen {

// The graph verifies and every op has an eager kernel (a region op's body
// ops, for a region op), else an error naming `compiler`: "interpreter:
// conv2d has no eager kernel".
absl::Status CheckCompilable(const Graph& graph, absl::string_view compiler);

// One defined argument per placeholder, of its type: InvalidArgumentError
// "expected 3 arguments, got 2" or "argument 1 (%w): expected f32[2,3], got f32[3,2]".
absl::Status CheckArguments(absl::Span<Value* const> placeholders, absl::Span<const Tensor> args);

// `status`, an error of `node`'s kernel, with " (at <source>)" appended when
// the node has a source.
absl::Status AtSource(const Node& node, const absl::Status& status);

// Runs the node's eager kernel; a kernel error gets " (at <source>)" appended.
absl::StatusOr<TensorList> RunNodeKernel(const Node& node, absl::Span<const Tensor> inputs,
                                         absl::Span<const TensorType> result_types);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_GRAPH_RUNNER_H_
