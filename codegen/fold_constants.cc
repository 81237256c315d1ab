#include "codegen/fold_constants.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "runtime/dispatch.h"

namespace tc::codegen {
namespace {

Attrs FullAttrs(const TensorType& type, double value) {
  return {{"shape", type.shape}, {"value", value}, {"dtype", type.dtype}};
}

// The one value `v` holds when a `full` computes it.
std::optional<double> ConstantValue(const Value* v) {
  if (v->is_placeholder() || v->producer()->op() != OpKind::kFull) return std::nullopt;
  return v->producer()->attrs().Float("value");
}

// What `node`'s kernel gives on one element of each constant operand, or
// nullopt when an attribute could not hold it exactly.
absl::StatusOr<std::optional<double>> Evaluate(const Node& node,
                                               const std::vector<double>& operands) {
  std::vector<Tensor> scalars;
  for (int i = 0; i < node.num_inputs(); ++i) {
    const TensorType scalar{node.input(i)->type().dtype, {}};
    TC_ASSIGN_OR_RETURN(TensorList full,
                        RunKernel(OpKind::kFull, {}, FullAttrs(scalar, operands[i]), {scalar}));
    scalars.push_back(full[0]);
  }
  const TensorType result{node.result(0)->type().dtype, {}};
  TC_ASSIGN_OR_RETURN(TensorList out, RunKernel(node.op(), scalars, node.attrs(), {result}));
  const double value = out[0].to_vector<double>()[0];
  const bool exact = result.dtype != DType::kI64 || std::abs(value) <= 9007199254740992.0;
  if (!std::isfinite(value) || !exact) return std::optional<double>();
  return std::optional<double>(value);
}

absl::StatusOr<bool> Run(Graph& graph) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    const bool elementwise = node->def().Has(kTraitFusible);
    const bool view = node->def().Has(kTraitView);
    if ((!elementwise && !view) || node->num_results() != 1 || node->num_inputs() == 0) continue;
    std::vector<double> operands;
    for (const Value* in : node->inputs()) {
      if (std::optional<double> v = ConstantValue(in)) operands.push_back(*v);
    }
    if (static_cast<int>(operands.size()) != node->num_inputs()) continue;
    std::optional<double> value = operands[0];  // a view of a constant holds its value
    if (elementwise) {
      TC_ASSIGN_OR_RETURN(value, Evaluate(*node, operands));
      if (!value) continue;
    }
    Value* result = node->result(0);
    const std::string name = result->name();
    TC_ASSIGN_OR_RETURN(
        std::vector<Value*> full,
        graph.AddNode(OpKind::kFull, {}, FullAttrs(result->type(), *value), node->source()));
    TC_RETURN_IF_ERROR(graph.ReplaceAllUsesWith(result, full[0]));
    TC_RETURN_IF_ERROR(graph.MoveBefore(full[0]->producer(), node));
    const std::vector<Value*> inputs = node->inputs();
    TC_RETURN_IF_ERROR(graph.RemoveNode(node));
    graph.RenameValue(full[0], name);
    for (Value* in : inputs) {
      if (!in->has_uses() && !in->producer()->removed()) {
        TC_RETURN_IF_ERROR(graph.RemoveNode(in->producer()));
      }
    }
    changed = true;
  }
  return changed;
}

}  // namespace

Pass FoldConstants() { return {"fold-constants", &Run}; }

}  // namespace tc::codegen
