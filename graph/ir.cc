#include "graph/ir.h"

#include <algorithm>
#include <atomic>
#include <iterator>

#include "absl/container/flat_hash_map.h"
#include "absl/memory/memory.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace tc {
namespace {

bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.'; }

}  // namespace

void Value::RemoveUse(const Use& use) { uses_.erase(std::find(uses_.begin(), uses_.end(), use)); }

std::vector<Node*> Value::users() const {
  std::vector<Node*> out;
  for (const Use& u : uses_) {
    if (std::find(out.begin(), out.end(), u.user) == out.end()) out.push_back(u.user);
  }
  return out;
}

absl::Status Node::SetInput(int i, Value* value) {
  if (value == nullptr || value->graph_id_ != graph_id_) {
    return absl::InvalidArgumentError(
        absl::StrCat(def().name, ": operand ", i, " is not a value of this graph"));
  }
  inputs_[i]->RemoveUse(Use{this, i});
  inputs_[i] = value;
  value->uses_.push_back(Use{this, i});
  return absl::OkStatus();
}

uint64_t Graph::Id::Next() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

std::string Graph::UniqueName(absl::string_view hint) {
  std::string name(hint);
  for (char& c : name) {
    if (!IsNameChar(c)) c = '_';
  }
  if (name.empty()) {
    while (taken_names_.contains(absl::StrCat(next_number_))) ++next_number_;
    name = absl::StrCat(next_number_++);
  } else if (taken_names_.contains(name)) {
    int suffix = 1;
    while (taken_names_.contains(absl::StrCat(name, "_", suffix))) ++suffix;
    absl::StrAppend(&name, "_", suffix);
  }
  // A numeric name (e.g. from the parser) moves automatic numbering past it,
  // so nodes added later continue the sequence. Numbers from 2^53 up, which
  // no graph numbers its values to, are names like any other: numbering
  // past INT64_MAX would overflow.
  int64_t number;
  if (absl::SimpleAtoi(name, &number) && number >= next_number_ && number < (int64_t{1} << 53) &&
      absl::StrCat(number) == name) {
    next_number_ = number + 1;
  }
  taken_names_.insert(name);
  return name;
}

absl::Status Graph::CheckOperand(const Value* value, absl::string_view what) const {
  if (!Owns(value)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not a value of this graph"));
  }
  if (value->producer() != nullptr && value->producer()->removed()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " (%", value->name(), ") was removed from the graph"));
  }
  return absl::OkStatus();
}

Value* Graph::AddPlaceholder(absl::string_view name, TensorType type) {
  values_.push_back(absl::WrapUnique(new Value(id_.id, UniqueName(name), std::move(type), nullptr,
                                               static_cast<int>(placeholders_.size()))));
  placeholders_.push_back(values_.back().get());
  return placeholders_.back();
}

absl::StatusOr<std::vector<TensorType>> Graph::CheckNodeInputs(OpKind op,
                                                               absl::Span<Value* const> inputs,
                                                               absl::string_view source) const {
  const absl::string_view op_name = OpName(op);
  std::vector<TensorType> types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TC_RETURN_IF_ERROR(CheckOperand(inputs[i], absl::StrCat(op_name, ": operand ", i)));
    types.push_back(inputs[i]->type());
  }
  if (source.find_first_of("\r\n") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(op_name, ": source must be a single line, got \"", source, "\""));
  }
  return types;
}

absl::StatusOr<std::vector<Value*>> Graph::AddNode(OpKind op, absl::Span<Value* const> inputs,
                                                   Attrs attrs, std::string source,
                                                   absl::Span<const std::string> names) {
  TC_ASSIGN_OR_RETURN(const std::vector<TensorType> types, CheckNodeInputs(op, inputs, source));
  absl::StatusOr<std::vector<TensorType>> out = InferTypes(op, types, attrs);
  if (!out.ok()) {
    if (source.empty()) return out.status();
    return absl::Status(out.status().code(),
                        absl::StrCat(out.status().message(), " (at ", source, ")"));
  }
  return Append(op, inputs, std::move(attrs), nullptr, std::move(source), names, *std::move(out));
}

absl::StatusOr<std::vector<Value*>> Graph::AddRegionNode(OpKind op, absl::Span<Value* const> inputs,
                                                         Graph body, std::string source,
                                                         absl::Span<const std::string> names) {
  return AddRegion(op, inputs, std::make_shared<const Graph>(std::move(body)), std::move(source),
                   names);
}

absl::StatusOr<std::vector<Value*>> Graph::AddCopyOf(const Node& node,
                                                     absl::Span<Value* const> inputs,
                                                     absl::Span<const std::string> names) {
  TC_ASSIGN_OR_RETURN(std::vector<Value*> results,
                      node.body_ != nullptr
                          ? AddRegion(node.op(), inputs, node.body_, node.source(), names)
                          : AddNode(node.op(), inputs, node.attrs(), node.source(), names));
  if (node.body_ == nullptr) {  // a region's results take its body's layouts
    for (size_t i = 0; i < results.size(); ++i) results[i]->layout_ = node.result(i)->layout_;
  }
  return results;
}

absl::StatusOr<std::vector<Value*>> Graph::AddRegion(OpKind op, absl::Span<Value* const> inputs,
                                                     std::shared_ptr<const Graph> body,
                                                     std::string source,
                                                     absl::Span<const std::string> names) {
  const absl::string_view op_name = OpName(op);
  if (!GetOpDef(op).Has(kTraitRegion)) {
    return absl::InvalidArgumentError(absl::StrCat(op_name, " is not a region op"));
  }
  TC_ASSIGN_OR_RETURN(const std::vector<TensorType> types, CheckNodeInputs(op, inputs, source));
  const std::vector<Value*>& params = body->placeholders();
  if (params.size() != inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op_name, ": ", inputs.size(), " inputs, but its body takes ", params.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (params[i]->type() != types[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          op_name, ": operand ", i, " is ", types[i].ToString(), ", its body's placeholder %",
          params[i]->name(), " ", params[i]->type().ToString()));
    }
  }
  std::vector<TensorType> results;
  for (const Value* v : body->outputs()) results.push_back(v->type());
  const std::shared_ptr<const Graph> kept = body;
  TC_ASSIGN_OR_RETURN(
      std::vector<Value*> values,
      Append(op, inputs, {}, std::move(body), std::move(source), names, std::move(results)));
  for (size_t i = 0; i < values.size(); ++i) values[i]->layout_ = kept->outputs()[i]->layout_;
  return values;
}

absl::Status Graph::SetBody(Node* node, Graph body) {
  if (!Owns(node) || node->removed() || node->body_ == nullptr) {
    return absl::InvalidArgumentError("SetBody: not a live region node of this graph");
  }
  auto types = [](absl::Span<Value* const> values) {
    std::vector<TensorType> t;
    for (const Value* v : values) t.push_back(v->type());
    return t;
  };
  const Graph& old = *node->body_;
  if (types(body.placeholders()) != types(old.placeholders()) ||
      types(body.outputs()) != types(old.outputs())) {
    return absl::InvalidArgumentError(
        "SetBody: the new body takes or returns other types than the old one");
  }
  for (int i = 0; i < node->num_results(); ++i) {
    node->results_[i]->layout_ = body.outputs()[i]->layout_;
  }
  node->body_ = std::make_shared<const Graph>(std::move(body));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Value*>> Graph::Append(OpKind op, absl::Span<Value* const> inputs,
                                                  Attrs attrs, std::shared_ptr<const Graph> body,
                                                  std::string source,
                                                  absl::Span<const std::string> names,
                                                  std::vector<TensorType> types) {
  if (!names.empty() && names.size() != types.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        OpName(op), ": ", names.size(), " result names given for ", types.size(), " results"));
  }
  auto node = absl::WrapUnique(new Node(id_.id, op, std::move(attrs), std::move(source)));
  node->body_ = std::move(body);
  for (size_t i = 0; i < inputs.size(); ++i) {
    node->inputs_.push_back(inputs[i]);
    inputs[i]->uses_.push_back(Use{node.get(), static_cast<int>(i)});
  }
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string name = UniqueName(names.empty() ? "" : names[i]);
    values_.push_back(absl::WrapUnique(
        new Value(id_.id, name, std::move(types[i]), node.get(), static_cast<int>(i))));
    node->results_.push_back(values_.back().get());
  }
  nodes_.push_back(std::move(node));
  return nodes_.back()->results_;
}

absl::Status Graph::SetOutputs(std::vector<Value*> outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!Owns(outputs[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("output ", i, " is not a value of this graph"));
    }
  }
  for (Value* v : outputs_) --v->output_count_;
  outputs_ = std::move(outputs);
  for (Value* v : outputs_) ++v->output_count_;
  return absl::OkStatus();
}

absl::Status Graph::ReplaceAllUsesWith(Value* from, Value* to) {
  if (!Owns(from) || !Owns(to)) {
    return absl::InvalidArgumentError("ReplaceAllUsesWith: value of another graph");
  }
  if (from->type() != to->type()) {
    return absl::InvalidArgumentError(absl::StrCat("ReplaceAllUsesWith: %", from->name(), ": ",
                                                   from->type().ToString(), " by %", to->name(),
                                                   ": ", to->type().ToString()));
  }
  if (from == to) return absl::OkStatus();
  for (const Use& u : from->uses_) {
    u.user->inputs_[u.operand] = to;
    to->uses_.push_back(u);
  }
  from->uses_.clear();
  for (Value*& v : outputs_) {
    if (v == from) v = to;
  }
  to->output_count_ += from->output_count_;
  from->output_count_ = 0;
  return absl::OkStatus();
}

absl::Status Graph::RemoveNode(Node* node) {
  if (!Owns(node) || node->removed()) {
    return absl::InvalidArgumentError("RemoveNode: not a node of this graph");
  }
  for (const Value* v : node->results_) {
    if (v->has_uses()) {
      return absl::FailedPreconditionError(
          absl::StrCat("RemoveNode: %", v->name(), " still has uses"));
    }
  }
  for (int i = 0; i < node->num_inputs(); ++i) node->inputs_[i]->RemoveUse(Use{node, i});
  node->removed_ = true;
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [node](const std::unique_ptr<Node>& n) { return n.get() == node; });
  removed_.push_back(std::move(*it));
  nodes_.erase(it);
  return absl::OkStatus();
}

absl::Status Graph::MoveBefore(Node* node, const Node* position) {
  auto find = [&](const Node* n) {
    return std::find_if(nodes_.begin(), nodes_.end(),
                        [n](const std::unique_ptr<Node>& p) { return p.get() == n; });
  };
  auto from = find(node), to = find(position);
  if (from == nodes_.end() || to == nodes_.end()) {
    return absl::InvalidArgumentError("MoveBefore: not a live node of this graph");
  }
  // Rotate the node into place: every other node keeps its relative order.
  if (from > to) {
    std::rotate(to, from, from + 1);
  } else if (from < to) {
    std::rotate(from, from + 1, to);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Value*>> Graph::ReplaceNode(Node* node, OpKind op,
                                                       absl::Span<Value* const> inputs,
                                                       Attrs attrs) {
  TC_ASSIGN_OR_RETURN(std::vector<Value*> results,
                      AddNode(op, inputs, std::move(attrs), node->source()));
  if (results.size() != node->results_.size()) {
    TC_RETURN_IF_ERROR(RemoveNode(results[0]->producer()));  // the graph stays as it was
    return absl::InvalidArgumentError(absl::StrCat("ReplaceNode: ", OpName(node->op()), " has ",
                                                   node->results_.size(), " results, ", OpName(op),
                                                   " ", results.size()));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    TC_RETURN_IF_ERROR(ReplaceAllUsesWith(node->results_[i], results[i]));
  }
  TC_RETURN_IF_ERROR(MoveBefore(results[0]->producer(), node));
  std::vector<std::string> names;
  for (const Value* v : node->results_) names.push_back(v->name());
  TC_RETURN_IF_ERROR(RemoveNode(node));
  for (size_t i = 0; i < results.size(); ++i) RenameValue(results[i], names[i]);
  return results;
}

int Graph::RemoveDeadNodes() {
  int removed = 0;
  // Walking backwards sees every user before its operands' producers, so one
  // sweep removes whole dead chains.
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Node* node = it->get();
    const bool dead = std::none_of(node->results_.begin(), node->results_.end(),
                                   [](const Value* v) { return v->has_uses(); });
    if (!dead) continue;
    for (int i = 0; i < node->num_inputs(); ++i) node->inputs_[i]->RemoveUse(Use{node, i});
    node->removed_ = true;
    ++removed;
  }
  auto live = std::stable_partition(nodes_.begin(), nodes_.end(),
                                    [](const std::unique_ptr<Node>& n) { return !n->removed(); });
  std::move(live, nodes_.end(), std::back_inserter(removed_));
  nodes_.erase(live, nodes_.end());
  return removed;
}

void Graph::RenameValue(Value* value, absl::string_view name) {
  value->name_ = std::string(name);
  taken_names_.insert(value->name_);
}

Graph Graph::Clone() const {
  Graph g;
  g.taken_names_ = taken_names_;
  g.next_number_ = next_number_;
  absl::flat_hash_map<const Value*, Value*> map;
  auto copy_value = [&](const Value* v, Node* producer) {
    g.values_.push_back(
        absl::WrapUnique(new Value(g.id_.id, v->name(), v->type(), producer, v->index())));
    g.values_.back()->layout_ = v->layout_;
    return map[v] = g.values_.back().get();
  };
  auto copy_node = [&](const Node& n) {
    auto node = absl::WrapUnique(new Node(g.id_.id, n.op(), n.attrs(), n.source()));
    node->body_ = n.body_;
    node->removed_ = n.removed_;
    for (const Value* r : n.results_) node->results_.push_back(copy_value(r, node.get()));
    return node;
  };
  for (const Value* p : placeholders_) g.placeholders_.push_back(copy_value(p, nullptr));
  // Values first, operands second: even a graph that fails Verify (an operand
  // used before its definition, or removed) is copied exactly. Tombstones are
  // copied too, since a live operand may still point at one.
  for (const auto& n : nodes_) g.nodes_.push_back(copy_node(*n));
  for (const auto& n : removed_) g.removed_.push_back(copy_node(*n));
  auto wire = [&](const std::vector<std::unique_ptr<Node>>& from,
                  std::vector<std::unique_ptr<Node>>& to) {
    for (size_t k = 0; k < from.size(); ++k) {
      Node* node = to[k].get();
      for (int i = 0; i < from[k]->num_inputs(); ++i) {
        Value* in = map.at(from[k]->input(i));
        node->inputs_.push_back(in);
        if (!node->removed_) in->uses_.push_back(Use{node, i});
      }
    }
  };
  wire(nodes_, g.nodes_);
  wire(removed_, g.removed_);
  for (const Value* v : outputs_) {
    g.outputs_.push_back(map.at(v));
    ++g.outputs_.back()->output_count_;
  }
  return g;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

Value* Graph::FindValue(absl::string_view name) const {
  for (Value* p : placeholders_) {
    if (p->name() == name) return p;
  }
  for (const auto& n : nodes_) {
    for (Value* r : n->results_) {
      if (r->name() == name) return r;
    }
  }
  return nullptr;
}

}  // namespace tc
