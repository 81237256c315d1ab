#include "codegen/fusing_compiler.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "codegen/fused_kernel.h"
#include "codegen/fusion.h"
#include "codegen/graph_runner.h"

namespace tc::codegen {
namespace {

class FusedProgram {
 public:
  static absl::StatusOr<std::shared_ptr<const FusedProgram>> Create(const Graph& graph) {
    if (absl::Status s = CheckCompilable(graph, "fusing"); !s.ok()) return s;
    return std::shared_ptr<const FusedProgram>(new FusedProgram(graph.Clone()));
  }

  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> args) const {
    return RunPlan(graph_, slots_, args,
                   [&](int i, absl::Span<const Tensor> inputs) -> absl::StatusOr<TensorList> {
                     const Step& step = steps_[i];
                     if (step.kernel != nullptr) return step.kernel->Run(inputs);
                     return RunNodeKernel(*step.node, inputs, step.result_types);
                   });
  }

 private:
  // One node run by its eager kernel, or one fusion group run by `kernel`.
  struct Step {
    const Node* node = nullptr;
    std::unique_ptr<FusedKernel> kernel;
    std::vector<TensorType> result_types;  // of an eager node
  };

  explicit FusedProgram(Graph graph) : graph_(std::move(graph)) {
    const std::vector<FusionGroup> groups = PlanFusion(graph_);
    absl::flat_hash_map<const Node*, const FusionGroup*> group_of;
    for (const FusionGroup& g : groups) {
      for (const Node* n : g.nodes) group_of[n] = &g;
    }
    std::vector<StepValues> values;
    for (const Node* node : graph_.nodes()) {
      auto g = group_of.find(node);
      if (g == group_of.end()) {
        Step step{node};
        for (const Value* r : node->results()) step.result_types.push_back(r->type());
        steps_.push_back(std::move(step));
        values.push_back({node->inputs(), node->results()});
      } else if (node == g->second->nodes.back()) {
        Step step;
        step.kernel = std::make_unique<FusedKernel>(FusedKernel::Compile(*g->second));
        steps_.push_back(std::move(step));
        values.push_back({g->second->inputs, g->second->outputs});
      }
    }
    slots_ = PlanSlots(graph_, values);
  }

  Graph graph_;
  std::vector<Step> steps_;
  SlotPlan slots_;
};

absl::StatusOr<Executable> CompileFusing(const Graph& graph) {
  absl::StatusOr<std::shared_ptr<const FusedProgram>> program = FusedProgram::Create(graph);
  if (!program.ok()) return program.status();
  return Executable([program = *std::move(program)](absl::Span<const Tensor> args) {
    return program->Run(args);
  });
}

}  // namespace

Compiler fusing() { return &CompileFusing; }

}  // namespace tc::codegen
