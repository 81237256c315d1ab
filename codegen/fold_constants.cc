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
// nullopt when it is better left to run: a kernel error, an integer division
// (it may trap), a result an attribute would not hold exactly.
std::optional<double> Evaluate(const Node& node, const std::vector<double>& operands) {
  const DType dtype = node.result(0)->type().dtype;
  if (node.op() == OpKind::kDiv && !IsFloating(dtype)) return std::nullopt;
  if (dtype == DType::kBF16) return std::nullopt;  // `full` has no bf16 kernel
  std::vector<Tensor> scalars;
  for (int i = 0; i < node.num_inputs(); ++i) {
    const TensorType scalar{node.input(i)->type().dtype, {}};
    absl::StatusOr<TensorList> full =
        RunKernel(OpKind::kFull, {}, FullAttrs(scalar, operands[i]), {scalar});
    if (!full.ok()) return std::nullopt;
    scalars.push_back((*full)[0]);
  }
  const TensorType result{dtype, {}}, as_f64{DType::kF64, {}};
  absl::StatusOr<TensorList> out = RunKernel(node.op(), scalars, node.attrs(), {result});
  if (!out.ok()) return std::nullopt;
  absl::StatusOr<TensorList> wide =
      RunKernel(OpKind::kCast, {(*out)[0]}, {{"dtype", DType::kF64}}, {as_f64});
  if (!wide.ok()) return std::nullopt;
  const double value = *(*wide)[0].data<double>();
  const bool exact = dtype != DType::kI64 || std::abs(value) <= 9007199254740992.0;
  if (!std::isfinite(value) || !exact) return std::nullopt;
  return value;
}

absl::StatusOr<bool> Run(Graph& graph) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    const OpDef& def = node->def();
    const bool elementwise = def.Has(kTraitFusible) && !def.Has(kTraitRandom);
    // A view that adds elements (an expand) is free as a view, dense as a full.
    const bool view = def.Has(kTraitView) && node->num_inputs() == 1 &&
                      node->result(0)->type().numel() <= node->input(0)->type().numel();
    // A returned constant would be made afresh, allocated, every run.
    if ((!elementwise && !view) || node->num_results() != 1 || node->num_inputs() == 0 ||
        node->result(0)->is_output()) {
      continue;
    }
    std::vector<double> operands;
    for (const Value* in : node->inputs()) {
      if (std::optional<double> v = ConstantValue(in)) operands.push_back(*v);
    }
    if (static_cast<int>(operands.size()) != node->num_inputs()) continue;
    std::optional<double> value = operands[0];  // a view of a constant holds its value
    if (elementwise) {
      value = Evaluate(*node, operands);
      if (!value) continue;
    }
    const std::vector<Value*> inputs = node->inputs();
    TC_RETURN_IF_ERROR(
        graph.ReplaceNode(node, OpKind::kFull, {}, FullAttrs(node->result(0)->type(), *value))
            .status());
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
