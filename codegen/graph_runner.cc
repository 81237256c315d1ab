#include "codegen/graph_runner.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/verifier.h"

namespace tc::codegen {

absl::Status CheckCompilable(const Graph& graph, absl::string_view compiler) {
  if (absl::Status s = Verify(graph); !s.ok()) return s;
  for (const Node* node : graph.nodes()) {
    if (GetKernel(node->op()) == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat(compiler, ": ", OpName(node->op()), " has no eager kernel"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckArguments(absl::Span<Value* const> placeholders, absl::Span<const Tensor> args) {
  if (args.size() != placeholders.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", placeholders.size(), " arguments, got ", args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType& want = placeholders[i]->type();
    // Compared field by field: building args[i].type() would copy its shape.
    if (!args[i].defined() || args[i].dtype() != want.dtype || args[i].shape() != want.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", i, " (%", placeholders[i]->name(), "): expected ", want.ToString(), ", got ",
          args[i].defined() ? args[i].type().ToString() : "an undefined tensor"));
    }
  }
  return absl::OkStatus();
}

SlotPlan PlanSlots(const Graph& graph, absl::Span<const StepValues> steps) {
  SlotPlan plan;
  absl::flat_hash_map<const Value*, int> slot;
  for (const Value* p : graph.placeholders()) slot[p] = plan.num_slots++;
  // For each slot, the step after which it is released: its last reader, or
  // its producer when nothing reads it; -1 for placeholders nothing reads.
  std::vector<int> release_after(plan.num_slots, -1);
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    SlotPlan::Step& step = plan.steps.emplace_back();
    for (const Value* in : steps[i].inputs) {
      step.inputs.push_back(slot.at(in));
      release_after[slot.at(in)] = i;
    }
    for (const Value* r : steps[i].results) {
      step.results.push_back(slot[r] = plan.num_slots++);
      release_after.push_back(i);
    }
  }
  for (const Value* out : graph.outputs()) {
    plan.outputs.push_back(slot.at(out));
    release_after[slot.at(out)] = -1;  // returned, so kept to the end
  }
  for (int s = 0; s < plan.num_slots; ++s) {
    if (release_after[s] >= 0) plan.steps[release_after[s]].release.push_back(s);
  }
  return plan;
}

absl::StatusOr<std::vector<Tensor>> RunPlan(const Graph& graph, const SlotPlan& plan,
                                            absl::Span<const Tensor> args, StepFn run_step) {
  if (absl::Status s = CheckArguments(graph.placeholders(), args); !s.ok()) return s;
  std::vector<Tensor> values(plan.num_slots);
  std::copy(args.begin(), args.end(), values.begin());
  std::vector<Tensor> inputs;
  for (int i = 0; i < static_cast<int>(plan.steps.size()); ++i) {
    const SlotPlan::Step& step = plan.steps[i];
    inputs.clear();
    for (int s : step.inputs) inputs.push_back(values[s]);
    absl::StatusOr<TensorList> out = run_step(i, inputs);
    if (!out.ok()) return out.status();
    for (size_t r = 0; r < step.results.size(); ++r) values[step.results[r]] = std::move((*out)[r]);
    for (int s : step.release) values[s] = Tensor();
  }
  std::vector<Tensor> outputs;
  outputs.reserve(plan.outputs.size());
  for (int s : plan.outputs) outputs.push_back(values[s]);
  return outputs;
}

absl::StatusOr<TensorList> RunNodeKernel(const Node& node, absl::Span<const Tensor> inputs,
                                         absl::Span<const TensorType> result_types) {
  absl::StatusOr<TensorList> out = RunKernel(node.op(), inputs, node.attrs(), result_types);
  if (out.ok()) return out;
  return AtSource(node, out.status());
}

absl::Status AtSource(const Node& node, const absl::Status& status) {
  if (node.source().empty()) return status;
  return absl::Status(status.code(), absl::StrCat(status.message(), " (at ", node.source(), ")"));
}

}  // namespace tc::codegen
