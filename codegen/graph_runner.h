// What every graph compiler in codegen/ shares with the interpreter, so that
// they accept the same graphs and arguments, report errors the same way and
// free each value at the same point: the compile-time check, the plan of
// value slots, and a run of that plan (argument check, one call per step).
//
//   if (absl::Status s = CheckCompilable(graph, "interpreter"); !s.ok()) return s;
//   std::vector<StepValues> values;  // what each step reads and writes
//   for (const Node* node : graph.nodes()) values.push_back({node->inputs(), node->results()});
//   SlotPlan plan = PlanSlots(graph, values);
//   ...
//   return RunPlan(graph, plan, args, [&](int step, absl::Span<const Tensor> inputs) {
//     return RunNodeKernel(*nodes[step], inputs, result_types[step]);
//   });
#ifndef TENSORCUT_CODEGEN_GRAPH_RUNNER_H_
#define TENSORCUT_CODEGEN_GRAPH_RUNNER_H_

#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/ir.h"
#include "runtime/dispatch.h"

namespace tc::codegen {

// The graph verifies and every op has an eager kernel, else an error naming
// `compiler`: "interpreter: conv2d has no eager kernel".
absl::Status CheckCompilable(const Graph& graph, absl::string_view compiler);

// One defined argument per placeholder, of its type: InvalidArgumentError
// "expected 3 arguments, got 2" or "argument 1 (%w): expected f32[2,3], got f32[3,2]".
absl::Status CheckArguments(absl::Span<Value* const> placeholders, absl::Span<const Tensor> args);

// The values one step of a run reads and writes (a node's, or a fused group's).
struct StepValues {
  absl::Span<const Value* const> inputs;
  absl::Span<const Value* const> results;
};

// Where a run keeps its values: one slot each in a table, the placeholders
// first. Each value is released after the step that last reads it (after its
// producer when nothing does); graph outputs are kept to the end.
struct SlotPlan {
  struct Step {
    std::vector<int> inputs;
    std::vector<int> results;
    std::vector<int> release;  // slots last used here (and unused results)
  };
  int num_slots = 0;
  std::vector<Step> steps;
  std::vector<int> outputs;
};

// The slots of `graph`'s values for `steps`, run in order; every value a step
// reads is a placeholder or a result of an earlier step.
SlotPlan PlanSlots(const Graph& graph, absl::Span<const StepValues> steps);

// Step `step` of a plan: its results, one per StepValues::results, from its inputs.
using StepFn =
    absl::FunctionRef<absl::StatusOr<TensorList>(int step, absl::Span<const Tensor> inputs)>;

// Checks `args` (CheckArguments), runs the plan's steps in order with
// `run_step`, freeing values as planned, and returns the graph outputs; the
// first step error is returned as is.
absl::StatusOr<std::vector<Tensor>> RunPlan(const Graph& graph, const SlotPlan& plan,
                                            absl::Span<const Tensor> args, StepFn run_step);

// `status`, an error of `node`'s kernel, with " (at <source>)" appended when
// the node has a source.
absl::Status AtSource(const Node& node, const absl::Status& status);

// Runs the node's eager kernel; a kernel error gets " (at <source>)" appended.
absl::StatusOr<TensorList> RunNodeKernel(const Node& node, absl::Span<const Tensor> inputs,
                                         absl::Span<const TensorType> result_types);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_GRAPH_RUNNER_H_
