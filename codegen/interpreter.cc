#include "codegen/interpreter.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "base/status_macros.h"

namespace tc::codegen {

absl::StatusOr<Interpreter> Interpreter::Create(const Graph& graph) {
  TC_RETURN_IF_ERROR(CheckCompilable(graph, "interpreter"));
  return Interpreter(graph.Clone());
}

Interpreter::Interpreter(Graph graph) : graph_(std::move(graph)) {
  absl::flat_hash_map<const Value*, int> slot;
  for (const Value* p : graph_.placeholders()) slot[p] = num_slots_++;
  // For each slot, the step after which it is released: its last reader, or
  // its producer when nothing reads it; -1 for placeholders nothing reads.
  std::vector<int> release_after(num_slots_, -1);
  for (const Node* node : graph_.nodes()) {
    const int i = static_cast<int>(steps_.size());
    Step& step = steps_.emplace_back(Step{node});
    if (node->body() != nullptr) {
      step.body = std::shared_ptr<const Interpreter>(new Interpreter(node->body()->Clone()));
    }
    for (const Value* in : node->inputs()) {
      step.inputs.push_back(slot.at(in));
      release_after[slot.at(in)] = i;
    }
    for (const Value* r : node->results()) {
      step.result_types.push_back(r->type());
      step.results.push_back(slot[r] = num_slots_++);
      release_after.push_back(i);
    }
  }
  for (const Value* out : graph_.outputs()) {
    output_slots_.push_back(slot.at(out));
    release_after[slot.at(out)] = -1;  // returned, so kept to the end
  }
  for (int s = 0; s < num_slots_; ++s) {
    if (release_after[s] >= 0) steps_[release_after[s]].release.push_back(s);
  }
}

absl::StatusOr<std::vector<Tensor>> Interpreter::Run(absl::Span<const Tensor> args) const {
  TC_RETURN_IF_ERROR(CheckArguments(graph_.placeholders(), args));
  std::vector<Tensor> values(num_slots_);
  std::copy(args.begin(), args.end(), values.begin());
  std::vector<Tensor> inputs;
  for (const Step& step : steps_) {
    inputs.clear();
    for (int s : step.inputs) inputs.push_back(values[s]);
    std::vector<Tensor> out;
    if (step.body != nullptr) {  // its nodes carry their own sources
      TC_ASSIGN_OR_RETURN(out, step.body->Run(inputs));
    } else {
      TC_ASSIGN_OR_RETURN(out, RunNodeKernel(*step.node, inputs, step.result_types));
    }
    for (size_t r = 0; r < step.results.size(); ++r) values[step.results[r]] = std::move(out[r]);
    for (int s : step.release) values[s] = Tensor();
  }
  std::vector<Tensor> outputs;
  outputs.reserve(output_slots_.size());
  for (int s : output_slots_) outputs.push_back(values[s]);
  return outputs;
}

namespace {

class InterpretedGraph : public Executable::Impl {
 public:
  explicit InterpretedGraph(Interpreter interpreter) : interpreter_(std::move(interpreter)) {}

  absl::Status Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const override {
    TC_ASSIGN_OR_RETURN(std::vector<Tensor> out, interpreter_.Run(args));
    std::move(out.begin(), out.end(), outputs.begin());
    return absl::OkStatus();
  }
  int num_outputs() const override { return interpreter_.graph().outputs().size(); }

 private:
  Interpreter interpreter_;
};

}  // namespace

absl::StatusOr<Executable> Interpret(const Graph& graph) {
  TC_ASSIGN_OR_RETURN(Interpreter interpreter, Interpreter::Create(graph));
  return Executable(std::make_shared<const InterpretedGraph>(std::move(interpreter)));
}

Compiler interpreter() {
  return Compiler([](const Graph& graph) { return Interpret(graph); });
}

}  // namespace tc::codegen
