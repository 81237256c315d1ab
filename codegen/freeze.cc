#include "codegen/freeze.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/interpreter.h"
#include "graph/symbolic.h"
#include "graph/verifier.h"
#include "runtime/kernels/strided.h"

namespace tc::codegen {
namespace {

std::vector<std::string> ResultNames(const Node& node) {
  std::vector<std::string> names;
  for (const Value* r : node.results()) names.push_back(r->name());
  return names;
}

// Whether a view node's results hold more elements than its operand: an
// expand, free as a view and not once computed.
bool AddsElements(const Node& node) {
  for (const Value* r : node.results()) {
    if (r->type().numel() > node.input(0)->type().numel()) return true;
  }
  return false;
}

// A frozen dense copy of `t` (`t` itself when it is frozen and dense).
Tensor FrozenCopy(const Tensor& t) {
  if (t.is_frozen() && t.is_contiguous()) return t;
  Tensor copy = Tensor::Uninitialized(t.shape(), t.dtype());
  kernels::CopyStrided(t, copy);
  copy.storage()->Freeze();
  return copy;
}

// The rest of a split graph with the constants bound: a run passes the
// caller's arguments, the constants in their places, then the prelude's
// results.
class FrozenExecutable : public Executable::Impl {
 public:
  FrozenExecutable(Executable rest, std::vector<Tensor> constants, std::vector<Tensor> prelude)
      : rest_(std::move(rest)), constants_(std::move(constants)), prelude_(std::move(prelude)) {}

  absl::Status Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const override {
    if (args.size() != constants_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected ", constants_.size(), " arguments, got ", args.size()));
    }
    // Reused from run to run, so that a run allocates nothing here.
    thread_local std::vector<Tensor> bound;
    for (size_t i = 0; i < args.size(); ++i) {
      bound.push_back(constants_[i].defined() ? constants_[i] : args[i]);
    }
    bound.insert(bound.end(), prelude_.begin(), prelude_.end());
    absl::Status status = rest_.Run(bound, outputs);
    bound.clear();
    TC_RETURN_IF_ERROR(status);
    for (Tensor& out : outputs) {
      if (!out.is_frozen()) continue;
      Tensor copy = Tensor::Uninitialized(out.shape(), out.dtype());
      kernels::CopyStrided(out, copy);
      out = std::move(copy);
    }
    return absl::OkStatus();
  }
  int num_outputs() const override { return rest_.num_outputs(); }
  DimOrder output_order(int i) const override { return rest_.output_order(i); }
  PlannedMemory planned_memory() const override { return rest_.planned_memory(); }
  PlanCacheStats plan_cache() const override { return rest_.plan_cache(); }

 private:
  Executable rest_;
  std::vector<Tensor> constants_;  // per placeholder of the graph; undefined: the caller's
  std::vector<Tensor> prelude_;    // per added placeholder of the rest
};

}  // namespace

absl::StatusOr<ConstantSplit> SplitConstants(const Graph& graph, absl::Span<const bool> constant) {
  const std::vector<Value*>& placeholders = graph.placeholders();
  if (constant.size() != placeholders.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("split-constants: expected ", placeholders.size(),
                     " flags (one per placeholder), got ", constant.size()));
  }
  // Values known when compiled: the constant placeholders, the results of
  // operand-free nodes of static type, and the results of the nodes that
  // move into the prelude (`hoisted`).
  absl::flat_hash_set<const Value*> known;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    if (constant[i]) known.insert(placeholders[i]);
  }
  absl::flat_hash_set<const Node*> hoisted;
  for (const Node* node : graph.nodes()) {
    const OpDef& def = node->def();
    if (def.Has(kTraitRandom) || def.Has(kTraitCollective) || node->body() != nullptr) continue;
    if (node->num_inputs() == 0) {
      for (const Value* r : node->results()) {
        if (!HasSymbolic(r->type().shape)) known.insert(r);
      }
      continue;
    }
    bool reads_known = true;
    for (const Value* in : node->inputs()) reads_known = reads_known && known.contains(in);
    if (!reads_known || (def.Has(kTraitView) && AddsElements(*node))) continue;
    hoisted.insert(node);
    for (const Value* r : node->results()) known.insert(r);
  }

  ConstantSplit split;
  // The prelude: the hoisted nodes and the operand-free nodes they read.
  absl::flat_hash_map<const Value*, Value*> in_prelude;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    if (constant[i]) {
      in_prelude[placeholders[i]] =
          split.prelude.AddPlaceholder(placeholders[i]->name(), placeholders[i]->type());
    }
  }
  auto read_by_hoisted = [&](const Value* v) {
    for (const Use& use : v->uses()) {
      if (hoisted.contains(use.user)) return true;
    }
    return false;
  };
  std::vector<const Value*> frontier;  // hoisted results the rest reads
  for (const Node* node : graph.nodes()) {
    const bool operand_free_read = node->num_inputs() == 0 && known.contains(node->result(0)) &&
                                   read_by_hoisted(node->result(0));
    if (!hoisted.contains(node) && !operand_free_read) continue;
    std::vector<Value*> inputs;
    for (const Value* in : node->inputs()) inputs.push_back(in_prelude.at(in));
    TC_ASSIGN_OR_RETURN(const std::vector<Value*> results,
                        split.prelude.AddCopyOf(*node, inputs, ResultNames(*node)));
    for (int r = 0; r < node->num_results(); ++r) {
      const Value* v = node->result(r);
      in_prelude[v] = results[r];
      if (!hoisted.contains(node)) continue;
      bool read_by_rest = v->is_output();
      for (const Use& use : v->uses()) read_by_rest = read_by_rest || !hoisted.contains(use.user);
      if (read_by_rest) frontier.push_back(v);
    }
  }
  std::vector<Value*> prelude_outputs;
  for (const Value* v : frontier) prelude_outputs.push_back(in_prelude.at(v));
  TC_RETURN_IF_ERROR(split.prelude.SetOutputs(std::move(prelude_outputs)));
  split.prelude.RemoveDeadNodes();

  // The rest: the graph with each frontier value a new placeholder.
  split.rest = graph.Clone();
  for (const Value* v : frontier) {
    Value* in_rest = split.rest.FindValue(v->name());
    Value* p = split.rest.AddPlaceholder("frozen", v->type());
    TC_RETURN_IF_ERROR(split.rest.ReplaceAllUsesWith(in_rest, p));
  }
  split.rest.RemoveDeadNodes();
  TC_RETURN_IF_ERROR(Verify(split.prelude));
  TC_RETURN_IF_ERROR(Verify(split.rest));
  return split;
}

Compiler Frozen(Compiler inner, const std::vector<Tensor>& constants) {
  auto copies = std::make_shared<std::vector<Tensor>>();
  for (const Tensor& t : constants) copies->push_back(t.defined() ? FrozenCopy(t) : Tensor());
  return [inner = std::move(inner), copies](
             const Graph& graph, const CompileOptions& options) -> absl::StatusOr<Executable> {
    const std::vector<Value*>& placeholders = graph.placeholders();
    if (copies->size() != placeholders.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("freeze: expected one constant (or none) per placeholder, ",
                       placeholders.size(), ", got ", copies->size()));
    }
    absl::InlinedVector<bool, 64> constant;  // a span of bools, which std::vector<bool> is not
    std::vector<Tensor> prelude_args;
    for (size_t i = 0; i < placeholders.size(); ++i) {
      const Tensor& c = (*copies)[i];
      constant.push_back(c.defined());
      if (!c.defined()) continue;
      if (c.type() != placeholders[i]->type()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "freeze: placeholder ", placeholders[i]->name(), " is ",
            placeholders[i]->type().ToString(), ", its constant ", c.type().ToString()));
      }
      prelude_args.push_back(c);
    }
    TC_ASSIGN_OR_RETURN(ConstantSplit split, SplitConstants(graph, constant));
    TC_ASSIGN_OR_RETURN(const Executable prelude, Interpret(split.prelude));
    TC_ASSIGN_OR_RETURN(std::vector<Tensor> computed, prelude(prelude_args));
    for (Tensor& t : computed) {  // fresh results, or views of the copies
      if (t.is_contiguous()) {
        t.storage()->Freeze();
      } else {
        t = FrozenCopy(t);
      }
    }
    CompileOptions rest_options = options;
    if (!rest_options.argument_orders.empty()) {
      rest_options.argument_orders.resize(split.rest.placeholders().size());
    }
    TC_ASSIGN_OR_RETURN(Executable rest, inner(split.rest, rest_options));
    return Executable(
        std::make_shared<FrozenExecutable>(std::move(rest), *copies, std::move(computed)));
  };
}

}  // namespace tc::codegen
