#include "codegen/fold_post_ops.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "codegen/loop_region.h"

namespace tc::codegen {
namespace {

// A loop region's body as an epilogue of its placeholder `head`: the chain's
// ops, and the region inputs its binary ops read, in order.
struct Chain {
  std::vector<OpKind> ops;
  std::vector<int> operands;  // indices of region inputs
};

std::optional<Chain> MatchChain(const Graph& body, const Value* head) {
  const std::vector<Node*> nodes = body.nodes();
  if (body.outputs().size() != 1 || body.outputs()[0] != nodes.back()->result(0)) {
    return std::nullopt;
  }
  const std::vector<Value*>& placeholders = body.placeholders();
  Chain chain;
  const Value* previous = head;
  for (const Node* node : nodes) {
    if (node->num_results() != 1 || node->result(0)->type() != head->type() ||
        node->num_inputs() > 2 ||
        std::count(node->inputs().begin(), node->inputs().end(), previous) != 1) {
      return std::nullopt;
    }
    if (node->num_inputs() == 2) {
      const bool first = node->input(0) == previous;
      const Value* other = node->input(first ? 1 : 0);
      if ((!first && !node->def().Has(kTraitCommutative)) || other == head ||
          !other->is_placeholder()) {
        return std::nullopt;
      }
      chain.operands.push_back(std::find(placeholders.begin(), placeholders.end(), other) -
                               placeholders.begin());
    }
    chain.ops.push_back(node->op());
    previous = node->result(0);
  }
  return chain;
}

// Whether a binary post-op reading `operand` runs on oneDNN's fast kernels
// after a product of `result` shape: an operand of that shape, a scalar, or
// one varying along the last dim alone (per output column). Other broadcasts
// are left to the fused loop: oneDNN 2.6 takes one value per row
// ([8,4,128,1] over [8,4,128,128], a softmax's log-sum-exp) on its reference
// binary kernel, 70 times slower than the product itself.
bool FastBinaryOperand(const Shape& operand, const Shape& result) {
  if (operand == result || NumElements(operand) == 1) return true;
  for (size_t i = 0; i + 1 < operand.size(); ++i) {
    if (operand[i] != 1) return false;
  }
  return !operand.empty() && operand.back() == result.back();
}

// The epilogue region's body: the kernel over its own placeholders, then
// the chain over the kernel's first result and one placeholder per operand
// it reads, in order; every chain value laid out as the kernel's result.
absl::StatusOr<Graph> EpilogueBody(const Node& kernel, const Graph& chain_body, const Value* head) {
  Graph body;
  std::vector<Value*> kernel_inputs;
  for (const Value* in : kernel.inputs()) {
    kernel_inputs.push_back(body.AddPlaceholder(in->name(), in->type()));
  }
  std::vector<std::string> names;
  for (const Value* r : kernel.results()) names.push_back(r->name());
  TC_ASSIGN_OR_RETURN(const std::vector<Value*> results,
                      body.AddCopyOf(kernel, kernel_inputs, names));
  const Value* previous = head;  // in chain_body
  Value* value = results[0];     // what it is in the new body
  for (const Node* node : chain_body.nodes()) {
    std::vector<Value*> inputs;
    for (const Value* in : node->inputs()) {
      inputs.push_back(in == previous ? value : body.AddPlaceholder(in->name(), in->type()));
    }
    TC_ASSIGN_OR_RETURN(const std::vector<Value*> out,
                        body.AddCopyOf(*node, inputs, {node->result(0)->name()}));
    body.SetLayout(out[0], results[0]->layout());
    previous = node->result(0);
    value = out[0];
  }
  std::vector<Value*> outputs = {value};
  outputs.insert(outputs.end(), results.begin() + 1, results.end());
  TC_RETURN_IF_ERROR(body.SetOutputs(std::move(outputs)));
  return body;
}

// Whether `head`, an operand of `region_node`, is the first result of a
// kernel that takes epilogues, read by nothing else and laid out as the
// region's result.
bool IsKernelResult(const Value* head, const Node& region_node) {
  const Node* kernel = head->producer();
  return kernel != nullptr && kernel->body() == nullptr && !kernel->def().epilogue.ops.empty() &&
         head == kernel->result(0) && head->uses().size() == 1 && !head->is_output() &&
         head->layout() == region_node.result(0)->layout();
}

// Folds the chain `region_node` runs into the kernel producing one of its
// inputs, when it can; returns whether it did.
absl::StatusOr<bool> FoldInto(Graph& graph, Node* region_node) {
  const std::vector<Value*>& operands_of_region = region_node->inputs();
  if (std::none_of(operands_of_region.begin(), operands_of_region.end(),
                   [&](const Value* v) { return IsKernelResult(v, *region_node); })) {
    return false;
  }
  TC_ASSIGN_OR_RETURN(std::optional<LoopRegion> region, LoopRegionOf(*region_node));
  if (!region) return false;
  const std::vector<Node*> order = graph.nodes();
  const auto position = [&](const Node* n) {
    return std::find(order.begin(), order.end(), n) - order.begin();
  };
  for (size_t h = 0; h < region->inputs.size(); ++h) {
    Value* head = region->inputs[h];
    if (!IsKernelResult(head, *region_node)) continue;
    Node* kernel = head->producer();
    const Value* head_placeholder = region->body.placeholders()[h];
    std::optional<Chain> chain = MatchChain(region->body, head_placeholder);
    if (!chain || !kernel->def().TakesEpilogue(head->type().dtype, chain->ops)) continue;
    std::vector<Value*> operands;
    for (int i : chain->operands) operands.push_back(region->inputs[i]);
    if (!std::all_of(operands.begin(), operands.end(), [&](const Value* v) {
          return FastBinaryOperand(v->type().shape, head->type().shape);
        })) {
      continue;
    }
    // The new node cannot read its own results (batch norm's statistics).
    if (std::any_of(operands.begin(), operands.end(),
                    [&](const Value* v) { return v->producer() == kernel; })) {
      continue;
    }
    // Where the new node can stand: at the chain, unless something between
    // reads the kernel's other results; else at the kernel, when the
    // operands are ready before it.
    const int k = position(kernel), c = position(region_node);
    bool read_between = false;
    for (int r = 1; r < kernel->num_results(); ++r) {
      for (const Use& use : kernel->result(r)->uses()) {
        const int at = position(use.user);
        read_between |= k < at && at < c;
      }
    }
    bool operands_ready = true;
    for (const Value* v : operands) {
      operands_ready = operands_ready && (v->is_placeholder() || position(v->producer()) < k);
    }
    if (read_between && !operands_ready) continue;
    TC_ASSIGN_OR_RETURN(Graph body, EpilogueBody(*kernel, region->body, head_placeholder));
    std::vector<Value*> inputs = kernel->inputs();
    inputs.insert(inputs.end(), operands.begin(), operands.end());
    std::vector<Value*> replaced = {region_node->result(0)};
    for (int r = 1; r < kernel->num_results(); ++r) replaced.push_back(kernel->result(r));
    TC_RETURN_IF_ERROR(ReplaceByRegion(graph, {kernel, region_node}, replaced,
                                       read_between ? kernel : region_node, std::move(inputs),
                                       std::move(body)));
    return true;
  }
  return false;
}

absl::StatusOr<bool> Run(Graph& graph) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (node->removed()) continue;
    TC_ASSIGN_OR_RETURN(const bool folded, FoldInto(graph, node));
    changed = changed || folded;
  }
  return changed;
}

}  // namespace

Pass FoldPostOps() { return {"fold-post-ops", &Run}; }

}  // namespace tc::codegen
