#include "graph/passes/specialize_symbols.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "base/status_macros.h"

namespace tc {
namespace {

absl::StatusOr<Shape> SpecializeShape(const Shape& shape, const SymbolValues& values) {
  Shape out;
  out.reserve(shape.size());
  for (int64_t d : shape) {
    TC_ASSIGN_OR_RETURN(const int64_t value, EvaluateDim(d, values));
    out.push_back(value);
  }
  return out;
}

absl::StatusOr<Attrs> SpecializeAttrs(const Attrs& attrs, const SymbolValues& values) {
  Attrs out;
  for (const auto& [name, value] : attrs.entries()) {
    if (const auto* i = std::get_if<int64_t>(&value)) {
      TC_ASSIGN_OR_RETURN(const int64_t v, EvaluateDim(*i, values));
      out.Set(name, v);
    } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
      TC_ASSIGN_OR_RETURN(Shape v, SpecializeShape(*ints, values));
      out.Set(name, std::move(v));
    } else {
      out.Set(name, value);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Graph> Specialized(const Graph& graph, const SymbolValues& values) {
  Graph out;
  absl::flat_hash_map<const Value*, Value*> map;
  for (Value* p : graph.placeholders()) {
    TC_ASSIGN_OR_RETURN(Shape shape, SpecializeShape(p->type().shape, values));
    Value* q = out.AddPlaceholder(p->name(), {p->type().dtype, std::move(shape)});
    out.SetLayout(q, p->layout());
    map[p] = q;
  }
  for (const Node* node : graph.nodes()) {
    std::vector<Value*> inputs, results;
    std::vector<std::string> names;
    for (Value* v : node->inputs()) inputs.push_back(map.at(v));
    for (Value* r : node->results()) names.push_back(r->name());
    if (node->body() != nullptr) {
      TC_ASSIGN_OR_RETURN(Graph body, Specialized(*node->body(), values));
      TC_ASSIGN_OR_RETURN(
          results, out.AddRegionNode(node->op(), inputs, std::move(body), node->source(), names));
    } else {
      TC_ASSIGN_OR_RETURN(Attrs attrs, SpecializeAttrs(node->attrs(), values));
      OpKind op = node->op();
      if (op == OpKind::kSizeScalar) {
        attrs = Attrs{{"shape", std::vector<int64_t>{}},
                      {"value", static_cast<double>(attrs.Int("size"))},
                      {"dtype", attrs.Dtype("dtype")}};
        op = OpKind::kFull;
      }
      TC_ASSIGN_OR_RETURN(results,
                          out.AddNode(op, inputs, std::move(attrs), node->source(), names));
      for (size_t i = 0; i < results.size(); ++i) {
        out.SetLayout(results[i], node->result(i)->layout());
      }
    }
    for (size_t i = 0; i < results.size(); ++i) map[node->result(i)] = results[i];
  }
  std::vector<Value*> outputs;
  for (Value* v : graph.outputs()) outputs.push_back(map.at(v));
  TC_RETURN_IF_ERROR(out.SetOutputs(std::move(outputs)));
  return out;
}

namespace {

void AddSymbols(int64_t dim, absl::btree_set<int64_t>& symbols) {
  if (!IsSymbolic(dim)) return;
  for (int64_t s : SymbolsOf(dim)) symbols.insert(s);
}

void AddSymbols(const Graph& graph, absl::btree_set<int64_t>& symbols) {
  for (const Value* p : graph.placeholders()) {
    for (int64_t d : p->type().shape) AddSymbols(d, symbols);
  }
  for (const Node* node : graph.nodes()) {
    for (const auto& [name, value] : node->attrs().entries()) {
      if (const auto* i = std::get_if<int64_t>(&value)) AddSymbols(*i, symbols);
      if (const auto* v = std::get_if<std::vector<int64_t>>(&value)) {
        for (int64_t d : *v) AddSymbols(d, symbols);
      }
    }
    if (node->body() != nullptr) AddSymbols(*node->body(), symbols);
    for (const Value* r : node->results()) {
      for (int64_t d : r->type().shape) AddSymbols(d, symbols);
    }
  }
}

// Whether an attribute holds a symbolic dim.
bool SymbolicAttr(const AttrValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return IsSymbolic(*i);
  if (const auto* v = std::get_if<std::vector<int64_t>>(&value)) return HasSymbolic(*v);
  return false;
}

}  // namespace

bool HasSymbolicDims(const Graph& graph) {
  for (const Value* p : graph.placeholders()) {
    if (HasSymbolic(p->type().shape)) return true;
  }
  for (const Node* node : graph.nodes()) {
    for (const auto& [name, value] : node->attrs().entries()) {
      if (SymbolicAttr(value)) return true;
    }
    if (node->body() != nullptr && HasSymbolicDims(*node->body())) return true;
    for (const Value* r : node->results()) {
      if (HasSymbolic(r->type().shape)) return true;
    }
  }
  return false;
}

std::vector<int64_t> GraphSymbols(const Graph& graph) {
  absl::btree_set<int64_t> symbols;
  AddSymbols(graph, symbols);
  return {symbols.begin(), symbols.end()};
}

Pass SpecializeSymbols(SymbolValues values) {
  return {"specialize-symbols", [values = std::move(values)](Graph& graph) -> absl::StatusOr<bool> {
            if (!HasSymbolicDims(graph)) return false;
            TC_ASSIGN_OR_RETURN(graph, Specialized(graph, values));
            return true;
          }};
}

}  // namespace tc
