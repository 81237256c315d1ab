#include "runtime/trace.h"

#include <algorithm>
#include <atomic>
#include <exception>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "runtime/autograd_meta.h"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "runtime/random.h"

namespace tc {
namespace {

thread_local std::vector<std::string> scopes;
// The scope an exception unwound through first (the innermost one open when
// it was thrown), kept for Trace's error message.
thread_local std::string failed_scope;

uint64_t NextTracerId() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

// One flattened user input: its placeholder name and its path for messages.
struct InputLeaf {
  std::string name;
  std::string path;
};

// Names each leaf of `tree` after its path (see Trace in the header).
void NameLeaves(const Tree<Tensor>& tree, std::vector<std::string>& parts, std::string path,
                std::vector<InputLeaf>& out) {
  if (tree.is_leaf()) {
    std::string name = absl::StrJoin(parts, "_");
    if (parts.empty() || absl::ascii_isdigit(name[0])) name = absl::StrCat("arg", name);
    out.push_back({std::move(name), std::move(path)});
    return;
  }
  for (size_t i = 0; i < tree.items().size(); ++i) {
    const bool dict = tree.kind() == TreeKind::kDict;
    parts.push_back(dict ? tree.keys()[i] : absl::StrCat(i));
    NameLeaves(tree[i], parts,
               dict ? absl::StrCat(path, "[", tree_internal::Quoted(tree.keys()[i]), "]")
                    : absl::StrCat(path, "[", i, "]"),
               out);
    parts.pop_back();
  }
}

// The user inputs' placeholder types: the examples', with the dims `dynamic`
// names made symbols, one per distinct example size.
absl::StatusOr<std::vector<TensorType>> InputTypes(const std::vector<InputLeaf>& leaves,
                                                   const std::vector<Tensor>& examples,
                                                   const DynamicDims& dynamic) {
  std::vector<TensorType> types;
  for (const Tensor& t : examples) types.push_back(t.type());
  for (const auto& [name, dims] : dynamic) {
    // Captured by an init-capture: C++17 lambdas cannot capture a structured binding.
    auto leaf = std::find_if(leaves.begin(), leaves.end(),
                             [&name = name](const InputLeaf& l) { return l.name == name; });
    if (leaf == leaves.end()) {
      std::vector<std::string> names;
      for (const InputLeaf& l : leaves) names.push_back(l.name);
      return absl::InvalidArgumentError(absl::StrCat("dynamic dims of \"", name,
                                                     "\": no such input; the inputs are ",
                                                     absl::StrJoin(names, ", ")));
    }
  }
  // In input order, so that symbols are numbered as the inputs are.
  absl::flat_hash_map<int64_t, int64_t> symbol_of_size;
  for (auto leaf = leaves.begin(); leaf != leaves.end(); ++leaf) {
    auto marked = dynamic.find(leaf->name);
    if (marked == dynamic.end()) continue;
    const std::vector<int64_t>& dims = marked->second;
    TensorType& type = types[leaf - leaves.begin()];
    for (int64_t dim : dims) {
      absl::StatusOr<int64_t> d = WrapDim(dim, type.rank());
      if (!d.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "dynamic dims of ", leaf->path, " ", type.ToString(), ": ", d.status().message()));
      }
      const int64_t size = type.shape[*d];
      if (IsSymbolic(size)) continue;
      if (size < 1) {
        return absl::InvalidArgumentError(absl::StrCat("dynamic dims of ", leaf->path, " ",
                                                       type.ToString(), ": dim ", *d, " has size ",
                                                       size, "; a symbol is >= 1"));
      }
      auto [it, made] = symbol_of_size.try_emplace(size, 0);
      if (made) it->second = NewSymbol(size);
      type.shape[*d] = it->second;
    }
  }
  return types;
}

std::string PlaceholderName(absl::string_view prefix, absl::string_view fqn) {
  return absl::StrCat(prefix, absl::StrReplaceAll(fqn, {{".", "_"}}));
}

}  // namespace

ScopedTraceScope::ScopedTraceScope(absl::string_view name)
    : pushed_(!name.empty()), uncaught_exceptions_(std::uncaught_exceptions()) {
  if (pushed_) scopes.emplace_back(name);
}

ScopedTraceScope::~ScopedTraceScope() {
  if (std::uncaught_exceptions() > uncaught_exceptions_ && failed_scope.empty()) {
    failed_scope = CurrentTraceScope();
  }
  if (pushed_) scopes.pop_back();
}

std::string CurrentTraceScope() { return absl::StrJoin(scopes, "."); }

Tracer::Tracer() : id_(NextTracerId()), hook_(this) {}

Tracer::~Tracer() {
  for (auto& [tensor, previous] : bound_) tensor.impl()->trace = std::move(previous);
}

Tensor Tracer::MakeTraced(Value* value) const {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = value->type().dtype;
  impl->shape = value->type().shape;
  impl->strides = ContiguousStrides(impl->shape);
  impl->trace = std::make_shared<TraceMeta>(TraceMeta{id_, value});
  return Tensor(std::move(impl));
}

Tensor Tracer::AddInput(absl::string_view name, const TensorType& type) {
  return MakeTraced(graph_.AddPlaceholder(name, type));
}

Value* Tracer::Bind(absl::string_view name, const Tensor& tensor) {
  Value* value = graph_.AddPlaceholder(name, tensor.type());
  bound_.emplace_back(tensor, tensor.impl()->trace);
  tensor.impl()->trace = std::make_shared<TraceMeta>(TraceMeta{id_, value});
  return value;
}

bool Tracer::IsTraced(const Tensor& tensor) const {
  const TraceMeta* meta = tensor.impl()->trace.get();
  return meta != nullptr && meta->tracer_id == id_;
}

absl::StatusOr<Value*> Tracer::ValueOf(const Tensor& tensor) {
  if (!tensor.defined()) return absl::InvalidArgumentError("an undefined tensor");
  if (IsTraced(tensor)) return tensor.impl()->trace->value;
  if (tensor.impl()->trace != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("a tensor ", tensor.type().ToString(),
                                                   " of another trace (one that has ended, or an "
                                                   "outer one)"));
  }
  auto [it, inserted] = lifted_.try_emplace(tensor.impl(), nullptr);
  if (inserted) {
    it->second = graph_.AddPlaceholder(absl::StrCat("c_", constants_.size()), tensor.type());
    constants_.push_back(tensor);  // keeps the impl, hence the map key, alive
    constant_placeholders_.push_back(it->second);
  }
  return it->second;
}

absl::StatusOr<TensorList> Tracer::Dispatch(OpKind op, absl::Span<const Tensor> inputs,
                                            const Attrs& attrs, absl::Span<const TensorType>,
                                            absl::FunctionRef<absl::StatusOr<TensorList>()> next) {
  bool record = GetOpDef(op).Has(kTraitCreation);
  for (const Tensor& t : inputs) record = record || t.impl()->trace != nullptr;
  if (!record) return next();

  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::StatusOr<Value*> v = ValueOf(inputs[i]);
    if (!v.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(OpName(op), ": input ", i, " is ", v.status().message()));
    }
    values.push_back(*v);
  }
  TC_ASSIGN_OR_RETURN(std::vector<Value*> results,
                      graph_.AddNode(op, values, attrs, CurrentTraceScope()));
  TensorList out;
  for (Value* r : results) out.push_back(MakeTraced(r));
  return out;
}

std::optional<RandomState> Tracer::RandomStateFor(Generator& gen, int64_t n) {
  if (&gen != &DefaultGenerator()) {
    throw Error(absl::InvalidArgumentError(
        "a traced random op draws from the default generator, not a generator of its own"));
  }
  if (random_seed_ == nullptr) {
    random_seed_ = graph_.AddPlaceholder("rng_seed", {DType::kI64, {}});
    random_offset_ = graph_.AddPlaceholder("rng_offset", {DType::kI64, {}});
  }
  RandomState state{MakeTraced(random_seed_), MakeTraced(random_offset_)};
  if (random_numbers_ != 0) {  // exact: counts stay far below 2^53
    state.offset = add(state.offset, size_scalar(random_numbers_, DType::kI64));
  }
  random_numbers_ = DimAdd(random_numbers_, n);
  return state;
}

absl::Status RandomInputs::Draw(absl::Span<Tensor> args, const SymbolValues& sizes) const {
  if (seed < 0) return absl::OkStatus();
  TC_ASSIGN_OR_RETURN(const int64_t n, EvaluateDim(numbers, sizes));
  Generator& gen = DefaultGenerator();
  *args[seed].data<int64_t>() = static_cast<int64_t>(gen.seed());
  *args[offset].data<int64_t>() = static_cast<int64_t>(gen.Advance(static_cast<uint64_t>(n)));
  return absl::OkStatus();
}

absl::StatusOr<TracedProgram> Trace(const std::function<Tree<Tensor>(const Tree<Tensor>&)>& fn,
                                    const Tree<Tensor>& example_inputs,
                                    const std::vector<std::pair<std::string, Tensor>>& params,
                                    const std::vector<std::pair<std::string, Tensor>>& buffers,
                                    const DynamicDims& dynamic) {
  using Kind = InputDescriptor::Kind;
  TracedProgram program;
  // The forward graph is what is traced; gradients come from autodiff/.
  NoGradGuard no_grad;
  Tracer tracer;
  for (const auto& [fqn, tensor] : params) {
    tracer.Bind(PlaceholderName("p_", fqn), tensor);
    program.inputs.push_back({Kind::kParameter, fqn});
  }
  for (const auto& [fqn, tensor] : buffers) {
    tracer.Bind(PlaceholderName("b_", fqn), tensor);
    program.inputs.push_back({Kind::kBuffer, fqn});
  }

  std::vector<InputLeaf> leaves;
  std::vector<std::string> parts;
  NameLeaves(example_inputs, parts, "inputs", leaves);
  auto [example_leaves, in_spec] = Flatten(example_inputs);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!example_leaves[i].defined()) {
      return absl::InvalidArgumentError(absl::StrCat(leaves[i].path, ": undefined tensor"));
    }
  }
  TC_ASSIGN_OR_RETURN(std::vector<TensorType> input_types,
                      InputTypes(leaves, example_leaves, dynamic));
  std::vector<Tensor> traced_inputs;
  for (size_t i = 0; i < leaves.size(); ++i) {
    traced_inputs.push_back(tracer.AddInput(leaves[i].name, input_types[i]));
    program.inputs.push_back({Kind::kUserInput, leaves[i].path});
  }
  program.in_spec = std::move(in_spec);

  failed_scope.clear();
  absl::StatusOr<Tree<Tensor>> result =
      CatchErrors([&] { return fn(*Unflatten(std::move(traced_inputs), program.in_spec)); });
  if (!result.ok()) {
    if (failed_scope.empty()) return result.status();
    return absl::Status(result.status().code(),
                        absl::StrCat(result.status().message(), " (at ", failed_scope, ")"));
  }

  auto [out_leaves, out_spec] = Flatten(*result);
  std::vector<Value*> outputs;
  for (size_t i = 0; i < out_leaves.size(); ++i) {
    absl::StatusOr<Value*> v = tracer.ValueOf(out_leaves[i]);
    if (!v.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("output ", i, " of ", ToString(out_spec), " is ", v.status().message()));
    }
    outputs.push_back(*v);
  }
  TC_RETURN_IF_ERROR(tracer.graph().SetOutputs(std::move(outputs)));
  program.out_spec = std::move(out_spec);

  // The placeholders made while tracing: lifted constants and the random
  // inputs, in the order of first use.
  const std::vector<Value*>& placeholders = tracer.graph().placeholders();
  int constant = 0;
  for (int i = static_cast<int>(program.inputs.size()); i < static_cast<int>(placeholders.size());
       ++i) {
    if (placeholders[i] == tracer.random_seed()) {
      program.inputs.push_back({Kind::kRandomSeed, "random seed"});
      program.random.seed = i;
    } else if (placeholders[i] == tracer.random_offset()) {
      program.inputs.push_back({Kind::kRandomOffset, "random offset"});
      program.random.offset = i;
    } else {
      program.inputs.push_back({Kind::kConstant, absl::StrCat("constant ", constant), constant});
      ++constant;
    }
  }
  program.random.numbers = tracer.random_numbers();
  program.constants = tracer.constants();
  program.graph = std::move(tracer.graph());
  return program;
}

bool FitsPlaceholder(const TensorType& got, const TensorType& want) {
  if (got.dtype != want.dtype || got.rank() != want.rank()) return false;
  for (int64_t d = 0; d < got.rank(); ++d) {
    if (!IsSymbolic(want.shape[d]) && want.shape[d] != got.shape[d]) return false;
  }
  return true;
}

absl::StatusOr<std::vector<Tensor>> GraphArguments(
    const TracedProgram& program, const Tree<Tensor>& inputs,
    const std::vector<std::pair<std::string, Tensor>>& params,
    const std::vector<std::pair<std::string, Tensor>>& buffers, SymbolValues* sizes) {
  using Kind = InputDescriptor::Kind;
  std::vector<Tensor> args;
  size_t next_param = 0, next_buffer = 0;
  for (const InputDescriptor& d : program.inputs) {
    const bool is_param = d.kind == Kind::kParameter;
    if (!is_param && d.kind != Kind::kBuffer) continue;
    const auto& list = is_param ? params : buffers;
    size_t& next = is_param ? next_param : next_buffer;
    const char* what = is_param ? "parameter" : "buffer";
    if (next >= list.size() || list[next].first != d.name) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " ", next, ": expected \"", d.name, "\", got ",
                       next < list.size() ? absl::StrCat("\"", list[next].first, "\"") : "none"));
    }
    args.push_back(list[next++].second);
  }
  if (next_param != params.size() || next_buffer != buffers.size()) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", next_param, " parameters and ",
                                                   next_buffer, " buffers, got ", params.size(),
                                                   " and ", buffers.size()));
  }
  const std::vector<Value*>& placeholders = program.graph.placeholders();
  const size_t first_input = args.size();
  bool symbolic = false;
  absl::Status s = CheckStructure<Tensor>(
      inputs, program.in_spec, "inputs", [&](const Tensor& t, int i) -> absl::Status {
        const TensorType& want = placeholders[first_input + i]->type();
        if (!t.defined()) {
          return absl::InvalidArgumentError(
              absl::StrCat("expected tensor ", want.ToString(), ", got an undefined tensor"));
        }
        symbolic = symbolic || HasSymbolic(want.shape);
        if (!FitsPlaceholder(t.type(), want)) {
          return absl::InvalidArgumentError(
              absl::StrCat("expected tensor ", want.ToString(), ", got ", t.type().ToString()));
        }
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  inputs.ForEachLeaf([&](const Tensor& t) { args.push_back(t); });
  if (sizes != nullptr || symbolic) {
    std::vector<ShapeToBind> shapes;
    for (size_t i = first_input; i < args.size(); ++i) {
      shapes.push_back({placeholders[i]->type().shape, args[i].shape(), program.inputs[i].name});
    }
    TC_ASSIGN_OR_RETURN(SymbolValues values, BindSymbols(shapes));
    if (sizes != nullptr) *sizes = std::move(values);
  }
  for (size_t i = args.size(); i < program.inputs.size(); ++i) {
    const InputDescriptor& d = program.inputs[i];
    args.push_back(d.kind == Kind::kConstant ? program.constants[d.constant_index]
                                             : zeros({}, DType::kI64));
  }
  return args;
}

}  // namespace tc
