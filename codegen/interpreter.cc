#include "codegen/interpreter.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/verifier.h"
#include "runtime/dispatch.h"

namespace tc::codegen {

absl::StatusOr<Interpreter> Interpreter::Create(const Graph& graph) {
  if (absl::Status s = Verify(graph); !s.ok()) return s;
  for (const Node* node : graph.nodes()) {
    if (GetKernel(node->op()) == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("interpreter: ", OpName(node->op()), " has no eager kernel"));
    }
  }
  Interpreter interpreter(graph.Clone());
  interpreter.Plan();
  return interpreter;
}

void Interpreter::Plan() {
  absl::flat_hash_map<const Value*, int> slot;
  for (const Value* p : graph_.placeholders()) slot[p] = num_slots_++;
  // For each slot, the step after which it is released: its last reader, or
  // its producer when nothing reads it; -1 for placeholders nothing reads.
  std::vector<int> release_after(num_slots_, -1);
  for (const Node* node : graph_.nodes()) {
    const int index = static_cast<int>(steps_.size());
    Step step{node};
    for (const Value* in : node->inputs()) {
      step.inputs.push_back(slot.at(in));
      release_after[slot.at(in)] = index;
    }
    for (const Value* r : node->results()) {
      step.results.push_back(slot[r] = num_slots_++);
      step.result_types.push_back(r->type());
      release_after.push_back(index);
    }
    steps_.push_back(std::move(step));
  }
  for (const Value* out : graph_.outputs()) {
    outputs_.push_back(slot.at(out));
    release_after[slot.at(out)] = -1;  // returned, so kept to the end
  }
  for (int s = 0; s < num_slots_; ++s) {
    if (release_after[s] >= 0) steps_[release_after[s]].release.push_back(s);
  }
}

absl::StatusOr<std::vector<Tensor>> Interpreter::Run(absl::Span<const Tensor> args) const {
  const std::vector<Value*>& placeholders = graph_.placeholders();
  if (args.size() != placeholders.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", placeholders.size(), " arguments, got ", args.size()));
  }
  std::vector<Tensor> values(num_slots_);
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType& want = placeholders[i]->type();
    if (!args[i].defined() || args[i].type() != want) {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", i, " (%", placeholders[i]->name(), "): expected ", want.ToString(), ", got ",
          args[i].defined() ? args[i].type().ToString() : "an undefined tensor"));
    }
    values[i] = args[i];
  }
  std::vector<Tensor> inputs;
  for (const Step& step : steps_) {
    inputs.clear();
    for (int s : step.inputs) inputs.push_back(values[s]);
    absl::StatusOr<TensorList> out =
        RunKernel(step.node->op(), inputs, step.node->attrs(), step.result_types);
    if (!out.ok()) {
      if (step.node->source().empty()) return out.status();
      return absl::Status(out.status().code(),
                          absl::StrCat(out.status().message(), " (at ", step.node->source(), ")"));
    }
    for (size_t r = 0; r < step.results.size(); ++r) values[step.results[r]] = std::move((*out)[r]);
    for (int s : step.release) values[s] = Tensor();
  }
  inputs.clear();
  std::vector<Tensor> outputs;
  outputs.reserve(outputs_.size());
  for (int s : outputs_) outputs.push_back(values[s]);
  return outputs;
}

absl::StatusOr<Executable> Interpret(const Graph& graph) {
  absl::StatusOr<Interpreter> interpreter = Interpreter::Create(graph);
  if (!interpreter.ok()) return interpreter.status();
  auto shared = std::make_shared<const Interpreter>(*std::move(interpreter));
  return Executable([shared](absl::Span<const Tensor> args) { return shared->Run(args); });
}

Compiler interpreter() { return &Interpret; }

}  // namespace tc::codegen
