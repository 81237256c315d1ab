#include "nn/module.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <typeinfo>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "runtime/autograd_meta.h"

namespace tc::nn {

TensorTree Module::forward(const TensorTree& input) {
  if (!input.is_leaf()) {
    throw Error(absl::InvalidArgumentError(
        "Module::forward: this module takes a single tensor; override forward(const TensorTree&) "
        "for structured inputs"));
  }
  return TensorTree::MakeLeaf(forward(input.leaf()));
}

Tensor Module::forward(const Tensor&) {
  throw Error(absl::UnimplementedError(
      "Module::forward: the module overrides neither forward(Tensor) nor forward(TensorTree)"));
}

TensorTree Module::operator()(const TensorTree& input) {
  ScopedTraceScope scope(name_);
  TensorTree output = forward(input);
  RunForwardHooks(input, output);
  return output;
}
Tensor Module::operator()(const Tensor& input) {
  ScopedTraceScope scope(name_);
  Tensor output = forward(input);
  if (!forward_hooks_.empty()) {
    RunForwardHooks(TensorTree::MakeLeaf(input), TensorTree::MakeLeaf(output));
  }
  return output;
}

int Module::register_forward_hook(ForwardHook hook) {
  forward_hooks_.emplace_back(next_hook_id_, std::move(hook));
  return next_hook_id_++;
}

void Module::remove_forward_hook(int id) {
  forward_hooks_.erase(std::remove_if(forward_hooks_.begin(), forward_hooks_.end(),
                                      [id](const auto& entry) { return entry.first == id; }),
                       forward_hooks_.end());
}

void Module::RunForwardHooks(const TensorTree& input, const TensorTree& output) const {
  // A snapshot, so that a hook may add or remove hooks.
  const std::vector<std::pair<int, ForwardHook>> hooks = forward_hooks_;
  for (const auto& [id, hook] : hooks) hook(*this, input, output);
}

void Module::Collect(const std::string& prefix, bool buffers, NamedTensors& out) const {
  for (const auto& [name, t] : buffers ? buffers_ : parameters_) {
    out.emplace_back(prefix + name, t);
  }
  for (const auto& [name, child] : children_) {
    child->Collect(absl::StrCat(prefix, name, "."), buffers, out);
  }
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  Collect("", /*buffers=*/false, out);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  Collect("", /*buffers=*/true, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  absl::flat_hash_set<const Module*> seen;
  std::function<void(const std::string&, const Module&)> visit = [&](const std::string& prefix,
                                                                     const Module& m) {
    if (!seen.insert(&m).second) return;
    out.emplace_back(prefix, &m);
    for (const auto& [name, child] : m.children_) {
      visit(prefix.empty() ? name : absl::StrCat(prefix, ".", name), *child);
    }
  };
  visit("", *this);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  for (const auto& [name, m] : std::as_const(*this).named_modules()) {
    out.emplace_back(name, const_cast<Module*>(m));
  }
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (const auto& [name, child] : children_) child->apply(fn);
  fn(*this);
}

int64_t Module::num_parameters() const {
  absl::flat_hash_set<const TensorImpl*> seen;
  int64_t count = 0;
  for (const auto& [name, p] : named_parameters()) {
    if (seen.insert(p.impl()).second) count += p.numel();
  }
  return count;
}

void Module::CollectState(const std::string& prefix, bool detach, NamedTensors& out) const {
  for (const auto& [name, t] : parameters_) {
    out.emplace_back(prefix + name, detach ? t.detach() : t);
  }
  for (const auto& [name, t] : buffers_) {
    if (absl::c_linear_search(non_persistent_buffers_, name)) continue;
    out.emplace_back(prefix + name, detach ? t.detach() : t);
  }
  for (const auto& [name, child] : children_) {
    child->CollectState(absl::StrCat(prefix, name, "."), detach, out);
  }
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  CollectState("", /*detach=*/true, out);
  return out;
}

absl::StatusOr<IncompatibleKeys> Module::load_state_dict(const NamedTensors& state, bool strict) {
  // The live tensors (not state_dict's detached views) receive the values.
  NamedTensors own;
  CollectState("", /*detach=*/false, own);
  absl::flat_hash_map<absl::string_view, const Tensor*> given;
  for (const auto& [name, t] : state) {
    if (!given.emplace(name, &t).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("load_state_dict: key ", name, " appears more than once"));
    }
  }
  IncompatibleKeys keys;
  std::vector<std::string> mismatched;
  absl::flat_hash_set<absl::string_view> known;
  for (const auto& [name, t] : own) {
    known.insert(name);
    auto it = given.find(name);
    if (it == given.end()) {
      keys.missing_keys.push_back(name);
    } else if (it->second->shape() != t.shape()) {
      mismatched.push_back(absl::StrCat(name, " (module has ", t.type().ToString(), ", state has ",
                                        it->second->type().ToString(), ")"));
    }
  }
  for (const auto& [name, t] : state) {
    if (!known.contains(name)) keys.unexpected_keys.push_back(name);
  }
  std::vector<std::string> problems;
  if (!mismatched.empty()) {
    problems.push_back(absl::StrCat("size mismatch: ", absl::StrJoin(mismatched, ", ")));
  }
  if (strict && !keys.missing_keys.empty()) {
    problems.push_back(absl::StrCat("missing keys: ", absl::StrJoin(keys.missing_keys, ", ")));
  }
  if (strict && !keys.unexpected_keys.empty()) {
    problems.push_back(
        absl::StrCat("unexpected keys: ", absl::StrJoin(keys.unexpected_keys, ", ")));
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("load_state_dict: ", absl::StrJoin(problems, "; ")));
  }
  NoGradGuard no_grad;
  for (const auto& [name, t] : own) {
    auto it = given.find(name);
    if (it != given.end()) CopyValues(t, it->second->to(t.dtype()));
  }
  return keys;
}

std::string Module::type_name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 ? demangled : mangled;
  std::free(demangled);
  // The unqualified name, as Python prints a class.
  const size_t colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

std::string Module::ToString() const {
  const std::string args = extra_repr();
  if (children_.empty()) return absl::StrCat(type_name(), "(", args, ")");
  std::vector<std::string> lines;
  if (!args.empty()) lines.push_back(args);
  for (const auto& [name, child] : children_) {
    // The child's own lines, indented under this module's.
    lines.push_back(
        absl::StrCat("(", name, "): ", absl::StrReplaceAll(child->ToString(), {{"\n", "\n  "}})));
  }
  return absl::StrCat(type_name(), "(\n  ", absl::StrJoin(lines, "\n  "), "\n)");
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (const Tensor& p : parameters()) p.set_grad(Tensor());
}

void AssignInPlace(const Tensor& dst, const Tensor& src) {
  TensorImpl* d = dst.impl();
  const TensorImpl* s = src.impl();
  d->storage = s->storage;
  d->dtype = s->dtype;
  d->shape = s->shape;
  d->strides = s->strides;
  d->offset = s->offset;
  d->trace = s->trace;  // while tracing, dst now stands for src's graph value
}

void CopyValues(const Tensor& dst, const Tensor& src) {
  NoGradGuard no_grad;
  const Tensor source = src.contiguous();
  if (!dst.is_contiguous()) {
    // Rare (a module holding a strided view as a parameter): take over a copy of
    // the data instead; the handle still stays valid.
    AssignInPlace(dst, source.clone());
    return;
  }
  if (dst.bytes() > 0) std::memcpy(dst.raw_data(), source.raw_data(), dst.bytes());
}

void Module::to(DType dtype) {
  NoGradGuard no_grad;
  for (const NamedTensors& list : {named_parameters(), named_buffers()}) {
    for (const auto& [name, t] : list) {
      if (IsFloating(t.dtype()) && t.dtype() != dtype) AssignInPlace(t, cast(t.detach(), dtype));
    }
  }
  zero_grad();
}

Tensor Module::register_parameter(std::string name, Tensor value) {
  value.requires_grad_();
  parameters_.emplace_back(std::move(name), value);
  return value;
}

Tensor Module::register_buffer(std::string name, Tensor value, bool persistent) {
  if (!persistent) non_persistent_buffers_.push_back(name);
  buffers_.emplace_back(std::move(name), value);
  return value;
}

absl::StatusOr<TracedModule> TraceModule(Module& module, const TensorTree& inputs,
                                         const DynamicDims& dynamic) {
  const NamedTensors buffers = module.named_buffers();
  // Buffers a traced forward replaces (AssignInPlace of a traced value) are
  // put back afterwards; their traced values become extra outputs.
  std::vector<TensorImpl> saved;
  for (const auto& [name, t] : buffers) saved.push_back(*t.impl());
  TracedModule traced;
  std::vector<Value*> mutated_values;
  auto fn = [&](const TensorTree& in) {
    TensorTree out = module(in);
    for (size_t i = 0; i < buffers.size(); ++i) {
      const TensorImpl& now = *buffers[i].second.impl();
      if (now.storage != saved[i].storage && now.trace != nullptr) {
        traced.mutated_buffers.push_back(buffers[i].first);
        mutated_values.push_back(now.trace->value);
      }
    }
    return out;
  };
  absl::StatusOr<TracedProgram> program =
      Trace(fn, inputs, module.named_parameters(), buffers, dynamic);
  for (size_t i = 0; i < buffers.size(); ++i) *buffers[i].second.impl() = saved[i];
  if (!program.ok()) return program.status();
  std::vector<Value*> outputs = program->graph.outputs();
  outputs.insert(outputs.end(), mutated_values.begin(), mutated_values.end());
  TC_RETURN_IF_ERROR(program->graph.SetOutputs(std::move(outputs)));
  traced.program = *std::move(program);
  return traced;
}

}  // namespace tc::nn
