#include "nn/onnx/imported_module.h"

#include <utility>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/error.h"

namespace tc::onnx {
namespace {

absl::Status NodeError(absl::string_view source, const Node& node, int64_t opset,
                       absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": node '", node.name, "' (", node.op_type,
                                                 ", opset ", opset, "): ", what));
}

// Inputs that set how an operator computes rather than what it computes on:
// an initializer read only here is a constant, not a parameter.
bool IsSettingInput(absl::string_view op_type, size_t input) {
  return ((op_type == "Clip" || op_type == "Dropout") && (input == 1 || input == 2)) ||
         (op_type == "Pow" && input == 1) || (op_type == "Pad" && input == 2);
}

// Known integers are kept within +-2^61: beyond, a number would read as a
// symbolic dim (graph/symbolic.h). Slice bounds such as INT64_MIN and
// INT64_MAX keep their meaning ("from the start", "to the end").
constexpr int64_t kLargestKnown = int64_t{1} << 61;

// An integer tensor of rank 0 or 1 as a known value, else the tensor.
void AddKnown(const std::string& name, Tensor value, KnownValues& known) {
  if (value.dtype() == DType::kI64 && value.dim() <= 1) {
    std::vector<int64_t> values = value.to_vector<int64_t>();
    for (int64_t& v : values) v = std::clamp(v, -kLargestKnown, kLargestKnown);
    known.ints.emplace(name, IntValue{std::move(values), value.dim() == 0});
  } else {
    known.constants.emplace(name, std::move(value));
  }
}

// A child module of an imported one: a scope of dotted names.
class Scope : public nn::Module {
 public:
  std::string type_name() const override { return "Scope"; }
  using nn::Module::register_buffer;
  using nn::Module::register_module;
  using nn::Module::register_parameter;
};

// Constant folding makes no constant above this many elements: a large one
// (ConstantOfShape, Expand) is made when the forward runs, as any value.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 22;

// Whether `node`, whose inputs are all known, is worth running at import.
bool Foldable(const Node& node, const KnownValues& known) {
  if (node.op_type == "Dropout" || node.op_type == "BatchNormalization") return false;
  // A known integer above the cap (a pad, a repeat count) may make as large
  // an output, whatever the operator.
  for (const std::string& input : node.inputs) {
    const auto it = known.ints.find(input);
    if (it != known.ints.end() &&
        absl::c_any_of(it->second.values, [](int64_t v) { return v > kMaxFoldedElements; })) {
      return false;
    }
  }
  const size_t shape_input = node.op_type == "ConstantOfShape" ? 0
                             : node.op_type == "Expand"        ? 1
                                                               : node.inputs.size();
  if (shape_input >= node.inputs.size()) return true;
  const auto it = known.ints.find(node.inputs[shape_input]);
  if (it == known.ints.end()) return false;
  int64_t elements = 1;
  for (int64_t d : it->second.values) {
    if (d < 0 || (d > 0 && elements > kMaxFoldedElements / d)) return false;
    elements *= d;
  }
  return true;
}

std::string TypeText(const ValueInfo& info) {
  std::vector<std::string> dims;
  for (const Dim& d : info.shape) {
    dims.push_back(!d.name.empty() ? d.name : d.size >= 0 ? absl::StrCat(d.size) : "?");
  }
  return absl::StrCat(DTypeName(info.dtype), "[", absl::StrJoin(dims, ","), "]");
}

}  // namespace

absl::StatusOr<std::shared_ptr<ImportedModule>> ImportedModule::Create(Model model,
                                                                       absl::string_view source) {
  std::shared_ptr<ImportedModule> module(new ImportedModule());
  // Running statistics are buffers; the other floating initializers are
  // parameters; integers and booleans are constants (shapes, axes).
  absl::flat_hash_set<std::string> statistics, read_as_data;
  for (const Node& node : model.nodes) {
    const Operator* op = FindOperator(node.op_type);
    if (op == nullptr) {
      return NodeError(source, node, model.opset,
                       absl::StrCat("operator ", node.op_type, " is not supported; ",
                                    "tensorcut runs ", absl::StrJoin(SupportedOperators(), ", ")));
    }
    for (const auto& [name, value] : node.attributes) {
      if (!absl::c_linear_search(op->attributes, name)) {
        return NodeError(source, node, model.opset,
                         absl::StrCat("attribute '", name, "' is not supported"));
      }
    }
    module->operators_.push_back(op);
    if (node.op_type == "BatchNormalization" && node.inputs.size() == 5) {
      statistics.insert(node.inputs[3]);
      statistics.insert(node.inputs[4]);
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!IsSettingInput(node.op_type, i)) read_as_data.insert(node.inputs[i]);
    }
  }
  for (const ValueInfo& output : model.outputs) read_as_data.insert(output.name);
  for (auto& [name, tensor] : model.initializers) {
    // Integers, and floats read only as settings (Clip's bounds, Pow's
    // exponent), are constants; the other floats, state to train.
    if (!IsFloating(tensor.dtype()) || !read_as_data.contains(name)) {
      module->initializers_.emplace_back(name, tensor);
      AddKnown(name, std::move(tensor), module->known_);
    } else {
      const Tensor handle = module->Register(name, std::move(tensor), statistics.contains(name));
      module->state_.emplace(name, handle);
      module->initializers_.emplace_back(name, handle);
    }
  }
  model.initializers.clear();
  // Constant folding: a node that reads only known values (Constant nodes,
  // integer initializers, what folded before it) runs once, here, unless it
  // draws random numbers or holds state.
  KnownValues& known = module->known_;
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    const Node& node = model.nodes[n];
    const bool foldable = absl::c_all_of(node.inputs,
                                         [&](const std::string& name) {
                                           return name.empty() || known.ints.contains(name) ||
                                                  known.constants.contains(name);
                                         }) &&
                          Foldable(node, known);
    module->folded_.push_back(foldable);
    if (!foldable) continue;
    std::vector<Tensor> inputs;
    for (const std::string& name : node.inputs) {
      inputs.push_back(name.empty()                ? Tensor()
                       : known.ints.contains(name) ? Materialize(known.ints.at(name))
                                                   : known.constants.at(name));
    }
    absl::StatusOr<std::vector<Tensor>> values = CatchErrors([&] {
      return module->operators_[n]->run(NodeCall(node, model.opset, false, inputs, known));
    });
    if (!values.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", values.status().message()));
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o].empty()) continue;
      if (o < values->size()) {
        AddKnown(node.outputs[o], (*values)[o], known);
      } else {
        module->unmade_.emplace(node.outputs[o], n);
      }
    }
  }
  module->model_ = std::move(model);
  return module;
}

Tensor ImportedModule::Register(const std::string& name, Tensor value, bool buffer) {
  const std::vector<std::string> path = absl::StrSplit(name, '.');
  // Nested unless a part is empty or a tensor already holds a prefix's name;
  // then the name stays whole at the top.
  bool nested = absl::c_none_of(path, [](const std::string& part) { return part.empty(); });
  for (size_t depth = 1; nested && depth < path.size(); ++depth) {
    nested = !state_.contains(absl::StrJoin(path.begin(), path.begin() + depth, "."));
  }
  Scope* scope = nullptr;  // nullptr: this module
  for (size_t depth = 0; nested && depth + 1 < path.size(); ++depth) {
    const nn::Module& parent = scope != nullptr ? static_cast<const nn::Module&>(*scope) : *this;
    std::shared_ptr<Scope> child;
    for (const auto& [child_name, module] : parent.named_children()) {
      if (child_name == path[depth]) child = std::static_pointer_cast<Scope>(module);
    }
    if (child == nullptr) {
      child = std::make_shared<Scope>();
      if (scope != nullptr) {
        scope->register_module(path[depth], child);
      } else {
        register_module(path[depth], child);
      }
    }
    scope = child.get();
  }
  const std::string leaf = nested ? path.back() : name;
  if (scope == nullptr) {
    return buffer ? register_buffer(leaf, std::move(value))
                  : register_parameter(leaf, std::move(value));
  }
  return buffer ? scope->register_buffer(leaf, std::move(value))
                : scope->register_parameter(leaf, std::move(value));
}

DynamicDims ImportedModule::named_dims(const std::string& placeholder) const {
  DynamicDims dims;
  for (const ValueInfo& input : model_.inputs) {
    std::vector<int64_t> named;
    for (size_t d = 0; d < input.shape.size(); ++d) {
      if (!input.shape[d].name.empty()) named.push_back(static_cast<int64_t>(d));
    }
    if (named.empty()) continue;
    dims[model_.inputs.size() == 1 ? placeholder : absl::StrCat(placeholder, "_", input.name)] =
        std::move(named);
  }
  return dims;
}

Model ImportedModule::Snapshot() const {
  Model model = model_;
  for (const auto& [name, value] : initializers_) {
    model.initializers.emplace_back(name, value.detach());
  }
  return model;
}

std::string ImportedModule::extra_repr() const {
  std::vector<std::string> ins, outs;
  for (const ValueInfo& v : model_.inputs) ins.push_back(absl::StrCat(v.name, ": ", TypeText(v)));
  for (const ValueInfo& v : model_.outputs) outs.push_back(absl::StrCat(v.name, ": ", TypeText(v)));
  return absl::StrCat("opset=", model_.opset, ", nodes=", model_.nodes.size(), ", inputs=(",
                      absl::StrJoin(ins, ", "), "), outputs=(", absl::StrJoin(outs, ", "), ")");
}

std::optional<DType> ImportedModule::FloatingDType() const {
  for (const auto& [name, t] : state_) {
    if (IsFloating(t.dtype())) return t.dtype();
  }
  return std::nullopt;
}

std::vector<Tensor> ImportedModule::Arguments(const TensorTree& input) const {
  const std::vector<ValueInfo>& declared = model_.inputs;
  std::vector<Tensor> given;
  if (input.is_leaf() && declared.size() == 1) {
    given.push_back(input.leaf());
  } else if (input.kind() == TreeKind::kDict) {
    for (const ValueInfo& info : declared) {
      const TensorTree* entry = input.Find(info.name);
      if (entry == nullptr || !entry->is_leaf()) {
        throw Error(absl::InvalidArgumentError(
            absl::StrCat("ImportedModule: input '", info.name, "' is not given (a tensor)")));
      }
      given.push_back(entry->leaf());
    }
  } else if ((input.kind() == TreeKind::kTuple || input.kind() == TreeKind::kList) &&
             input.items().size() == declared.size() &&
             absl::c_all_of(input.items(), [](const TensorTree& t) { return t.is_leaf(); })) {
    for (const TensorTree& item : input.items()) given.push_back(item.leaf());
  } else {
    std::vector<std::string> names;
    for (const ValueInfo& info : declared) names.push_back(info.name);
    throw Error(absl::InvalidArgumentError(absl::StrCat(
        "ImportedModule: expected ", declared.size() == 1 ? "one tensor" : "a dict or a tuple",
        " of the model's inputs (", absl::StrJoin(names, ", "), ")")));
  }
  const std::optional<DType> floating = FloatingDType();
  for (size_t i = 0; i < declared.size(); ++i) {
    ValueInfo info = declared[i];
    if (IsFloating(info.dtype) && floating.has_value()) info.dtype = *floating;
    const Tensor& t = given[i];
    bool matches = t.dtype() == info.dtype &&
                   (info.shape.empty() || t.dim() == static_cast<int64_t>(info.shape.size()));
    for (size_t d = 0; matches && d < info.shape.size(); ++d) {
      const int64_t size = info.shape[d].size;
      matches = size < 0 || t.size(static_cast<int64_t>(d)) == size;
    }
    if (!matches) {
      throw Error(absl::InvalidArgumentError(absl::StrCat("ImportedModule: input '", info.name,
                                                          "': expected ", TypeText(info), ", got ",
                                                          t.type().ToString())));
    }
  }
  return given;
}

TensorTree ImportedModule::forward(const TensorTree& input) {
  const std::vector<Tensor> arguments = Arguments(input);
  absl::flat_hash_map<std::string, Tensor> values = state_;
  for (size_t i = 0; i < arguments.size(); ++i) values[model_.inputs[i].name] = arguments[i];
  KnownValues known = known_;  // and the shape arithmetic of this call
  const std::optional<DType> floating = FloatingDType();
  // Optional outputs a kernel does not make, with the node that did not.
  absl::flat_hash_map<std::string, const Node*> not_made;
  for (const auto& [name, n] : unmade_) not_made.emplace(name, &model_.nodes[n]);
  auto tensor = [&](const std::string& name) -> Tensor {
    if (name.empty()) return Tensor();
    if (const auto it = not_made.find(name); it != not_made.end()) {
      const Node& node = *it->second;
      const size_t index = absl::c_find(node.outputs, name) - node.outputs.begin();
      NodeCall(node, model_.opset, is_training(), {}, known)
          .Fail(absl::StrCat("output ", index, " ('", name, "') is read but not supported"));
    }
    if (const auto it = values.find(name); it != values.end()) return it->second;
    if (const auto it = known.ints.find(name); it != known.ints.end()) {
      return Materialize(it->second);
    }
    // ParseModel checked that each input is defined.
    const Tensor& constant = known.constants.at(name);
    if (floating.has_value() && IsFloating(constant.dtype()) && constant.dtype() != *floating) {
      return cast(constant, *floating);
    }
    return constant;
  };
  for (size_t n = 0; n < model_.nodes.size(); ++n) {
    const Node& node = model_.nodes[n];
    if (folded_[n]) continue;
    std::vector<Tensor> computed;  // what the graph computed, without known values
    for (const std::string& name : node.inputs) {
      const auto it = values.find(name);
      computed.push_back(it != values.end() ? it->second : Tensor());
    }
    const NodeCall probe(node, model_.opset, is_training(), std::move(computed), known);
    if (std::optional<std::vector<IntValue>> ints = EvaluateShapeArithmetic(probe)) {
      for (size_t o = 0; o < node.outputs.size() && o < ints->size(); ++o) {
        known.ints[node.outputs[o]] = (*ints)[o];
      }
      continue;
    }
    std::vector<Tensor> inputs;
    for (const std::string& name : node.inputs) inputs.push_back(tensor(name));
    // Floating values made from no floating input (ConstantOfShape, a Cast
    // of integers) follow the module's dtype, as its folded constants do.
    const bool made_here = absl::c_none_of(
        inputs, [](const Tensor& t) { return t.defined() && IsFloating(t.dtype()); });
    const NodeCall call(node, model_.opset, is_training(), std::move(inputs), known);
    std::vector<Tensor> outputs = operators_[n]->run(call);
    if (floating.has_value() && made_here) {
      for (Tensor& out : outputs) {
        if (out.defined() && IsFloating(out.dtype()) && out.dtype() != *floating) {
          out = cast(out, *floating);
        }
      }
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o].empty()) continue;
      if (o < outputs.size()) {
        values[node.outputs[o]] = outputs[o];
      } else {
        not_made.emplace(node.outputs[o], &node);
      }
    }
  }
  if (model_.outputs.size() == 1) return TensorTree::MakeLeaf(tensor(model_.outputs[0].name));
  std::vector<std::pair<std::string, TensorTree>> entries;
  for (const ValueInfo& info : model_.outputs) {
    entries.emplace_back(info.name, TensorTree::MakeLeaf(tensor(info.name)));
  }
  return TensorTree::Dict(std::move(entries));
}

Tensor ImportedModule::forward(const Tensor& input) {
  const TensorTree out = forward(TensorTree::MakeLeaf(input));
  if (!out.is_leaf()) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("ImportedModule: the model has ", model_.outputs.size(),
                     " outputs; call forward(TensorTree) for the dict of them")));
  }
  return out.leaf();
}

}  // namespace tc::onnx
