#include "codegen/interpreter.h"

#include <memory>
#include <utility>

namespace tc::codegen {

absl::StatusOr<Interpreter> Interpreter::Create(const Graph& graph) {
  if (absl::Status s = CheckCompilable(graph, "interpreter"); !s.ok()) return s;
  return Interpreter(graph.Clone());
}

Interpreter::Interpreter(Graph graph) : graph_(std::move(graph)) {
  std::vector<StepValues> values;
  for (const Node* node : graph_.nodes()) {
    Step step{node};
    for (const Value* r : node->results()) step.result_types.push_back(r->type());
    steps_.push_back(std::move(step));
    values.push_back({node->inputs(), node->results()});
  }
  slots_ = PlanSlots(graph_, values);
}

absl::StatusOr<std::vector<Tensor>> Interpreter::Run(absl::Span<const Tensor> args) const {
  return RunPlan(graph_, slots_, args, [&](int i, absl::Span<const Tensor> inputs) {
    return RunNodeKernel(*steps_[i].node, inputs, steps_[i].result_types);
  });
}

absl::StatusOr<Executable> Interpret(const Graph& graph) {
  absl::StatusOr<Interpreter> interpreter = Interpreter::Create(graph);
  if (!interpreter.ok()) return interpreter.status();
  auto shared = std::make_shared<const Interpreter>(*std::move(interpreter));
  return Executable([shared](absl::Span<const Tensor> args) { return shared->Run(args); });
}

Compiler interpreter() { return &Interpret; }

}  // namespace tc::codegen
