#include "partition/partition.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/pass.h"
#include "graph/passes/recompute_late.h"
#include "graph/passes/specialize_symbols.h"

namespace tc::partition {
namespace {

using ValueSet = absl::flat_hash_set<const Value*>;
using NodeSet = absl::flat_hash_set<const Node*>;

// The nodes `roots` depend on, walking operands until a placeholder or a
// value in `stop`. Every value the walk ends at is added to `boundary`.
NodeSet Ancestors(absl::Span<Value* const> roots, const ValueSet& stop, ValueSet& boundary) {
  NodeSet nodes;
  std::vector<const Value*> stack(roots.begin(), roots.end());
  ValueSet seen;
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    if (v->is_placeholder() || stop.contains(v)) {
      boundary.insert(v);
      continue;
    }
    if (!nodes.insert(v->producer()).second) continue;
    for (const Value* in : v->producer()->inputs()) stack.push_back(in);
  }
  return nodes;
}

bool HasWholeDim(const Value* v, int64_t symbol) {
  for (int64_t d : v->type().shape) {
    if (SymbolIndex(d) == symbol) return true;
  }
  return false;
}

// For each symbol the backward needs that none of its placeholders has as a
// whole dim: a primal (else a forward value) of `joint` that has it, to save.
std::vector<Value*> SizeCarriers(const Graph& joint, absl::Span<Value* const> primals,
                                 const ValueSet& from_tangent, const PartitionResult& part) {
  std::vector<Value*> carriers;
  for (int64_t symbol : part.symbols_for_bw) {
    const std::vector<Value*>& taken = part.backward.placeholders();
    if (std::any_of(taken.begin(), taken.end(),
                    [&](const Value* v) { return HasWholeDim(v, symbol); })) {
      continue;
    }
    Value* carrier = nullptr;
    for (Value* p : primals) {
      if (carrier == nullptr && HasWholeDim(p, symbol)) carrier = p;
    }
    for (const Node* node : joint.nodes()) {
      for (Value* r : node->results()) {
        if (carrier == nullptr && !from_tangent.contains(r) && HasWholeDim(r, symbol)) {
          carrier = r;
        }
      }
    }
    // One value may carry several symbols ([s0,s1,256]): saved once.
    if (carrier != nullptr &&
        std::find(carriers.begin(), carriers.end(), carrier) == carriers.end()) {
      carriers.push_back(carrier);
    }
  }
  return carriers;
}

}  // namespace

absl::Status CheckJointLayout(const Graph& joint, const JointLayout& layout) {
  const int num_placeholders = static_cast<int>(joint.placeholders().size());
  const int num_outputs = static_cast<int>(joint.outputs().size());
  if (layout.num_primals + layout.num_tangents != num_placeholders ||
      layout.num_forward_outputs + layout.num_gradients() != num_outputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("the layout (", layout.num_primals, " primals + ", layout.num_tangents,
                     " tangents -> ", layout.num_forward_outputs, " forward outputs + ",
                     layout.num_gradients(), " gradients) does not fit a joint graph with ",
                     num_placeholders, " inputs and ", num_outputs, " outputs"));
  }
  for (int p : layout.grad_primal_indices) {
    if (p < 0 || p >= layout.num_primals) {
      return absl::InvalidArgumentError(
          absl::StrCat("the layout names primal ", p, " of ", layout.num_primals));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Graph> ExtractSubgraph(const Graph& graph, absl::Span<Value* const> inputs,
                                      absl::Span<Value* const> outputs) {
  Graph sub;
  absl::flat_hash_map<const Value*, Value*> mapped;
  for (Value* in : inputs) {
    if (!graph.Owns(in)) return absl::InvalidArgumentError("an input is not a value of the graph");
    if (!mapped.try_emplace(in, sub.AddPlaceholder(in->name(), in->type())).second) {
      return absl::InvalidArgumentError(absl::StrCat("input %", in->name(), " is given twice"));
    }
  }
  ValueSet stop(inputs.begin(), inputs.end()), boundary;
  for (Value* out : outputs) {
    if (!graph.Owns(out))
      return absl::InvalidArgumentError("an output is not a value of the graph");
  }
  const NodeSet needed = Ancestors(outputs, stop, boundary);
  for (const Value* v : boundary) {
    if (!stop.contains(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the outputs need %", v->name(), ", which is not an input"));
    }
  }
  for (const Node* node : graph.nodes()) {
    if (!needed.contains(node)) continue;
    std::vector<Value*> operands;
    for (const Value* in : node->inputs()) operands.push_back(mapped.at(in));
    std::vector<std::string> names;
    for (const Value* r : node->results()) names.push_back(r->name());
    TC_ASSIGN_OR_RETURN(std::vector<Value*> results, sub.AddCopyOf(*node, operands, names));
    for (int i = 0; i < node->num_results(); ++i) mapped[node->result(i)] = results[i];
  }
  std::vector<Value*> sub_outputs;
  for (const Value* out : outputs) sub_outputs.push_back(mapped.at(out));
  TC_RETURN_IF_ERROR(sub.SetOutputs(std::move(sub_outputs)));
  return sub;
}

JointParts SplitJoint(const Graph& joint, const JointLayout& layout) {
  const std::vector<Value*>& in = joint.placeholders();
  const std::vector<Value*>& out = joint.outputs();
  return {{in.begin(), in.begin() + layout.num_primals},
          {in.begin() + layout.num_primals, in.end()},
          {out.begin(), out.begin() + layout.num_forward_outputs},
          {out.begin() + layout.num_forward_outputs, out.end()}};
}

absl::StatusOr<PartitionResult> AssemblePartition(const Graph& joint, const JointLayout& layout,
                                                  absl::Span<Value* const> saved_values) {
  TC_RETURN_IF_ERROR(CheckJointLayout(joint, layout));
  const auto [primals, tangents, fw_outputs, gradients] = SplitJoint(joint, layout);

  PartitionResult result;
  for (const Value* v : saved_values) {
    result.saved.push_back({v->name(), v->type(), v->type().bytes()});
  }
  result.num_fw_outs_saved_for_bw = static_cast<int>(saved_values.size());

  // One pass in definition order marks every value that depends on a tangent.
  ValueSet from_tangent(tangents.begin(), tangents.end());
  for (const Node* node : joint.nodes()) {
    const bool depends = std::any_of(node->inputs().begin(), node->inputs().end(),
                                     [&](const Value* in) { return from_tangent.contains(in); });
    if (depends) from_tangent.insert(node->results().begin(), node->results().end());
  }
  for (int j = 0; j < layout.num_gradients(); ++j) {
    if (!from_tangent.contains(gradients[j])) {
      result.indices_of_inputs_to_detach.push_back(layout.grad_primal_indices[j]);
    }
  }

  std::vector<Value*> fw_graph_outputs = fw_outputs;
  fw_graph_outputs.insert(fw_graph_outputs.end(), saved_values.begin(), saved_values.end());
  TC_ASSIGN_OR_RETURN(result.forward, ExtractSubgraph(joint, primals, fw_graph_outputs));
  std::vector<Value*> bw_inputs(saved_values.begin(), saved_values.end());
  bw_inputs.insert(bw_inputs.end(), tangents.begin(), tangents.end());
  TC_ASSIGN_OR_RETURN(result.backward, ExtractSubgraph(joint, bw_inputs, gradients));
  TC_RETURN_IF_ERROR(
      RunPasses(result.backward, {RecomputeLate(static_cast<int>(saved_values.size()))}).status());
  result.symbols_for_bw = GraphSymbols(result.backward);
  if (std::vector<Value*> carriers = SizeCarriers(joint, primals, from_tangent, result);
      !carriers.empty()) {
    carriers.insert(carriers.begin(), saved_values.begin(), saved_values.end());
    return AssemblePartition(joint, layout, carriers);
  }
  return result;
}

absl::StatusOr<PartitionResult> DefaultPartition(const Graph& joint, const JointLayout& layout) {
  TC_RETURN_IF_ERROR(CheckJointLayout(joint, layout));
  const auto [primals, tangents, fw_outputs, gradients] = SplitJoint(joint, layout);
  const ValueSet tangent_set(tangents.begin(), tangents.end());

  ValueSet fw_boundary;
  const NodeSet fw_nodes = Ancestors(fw_outputs, {}, fw_boundary);
  for (const Value* v : fw_boundary) {
    if (tangent_set.contains(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("a forward output depends on the tangent %", v->name()));
    }
  }

  // The backward walk ends at primals and at values of forward nodes: those
  // it reaches, tangents aside, are what the forward must save.
  ValueSet fw_values;
  for (const Node* node : fw_nodes)
    fw_values.insert(node->results().begin(), node->results().end());
  ValueSet bw_boundary;
  Ancestors(gradients, fw_values, bw_boundary);
  std::vector<Value*> saved_values;
  for (Value* p : primals) {
    if (bw_boundary.contains(p)) saved_values.push_back(p);
  }
  for (const Node* node : joint.nodes()) {
    for (Value* r : node->results()) {
      if (bw_boundary.contains(r)) saved_values.push_back(r);
    }
  }

  return AssemblePartition(joint, layout, saved_values);
}

}  // namespace tc::partition
