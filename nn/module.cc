#include "nn/module.h"

#include "absl/strings/str_cat.h"
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
  return forward(input);
}
Tensor Module::operator()(const Tensor& input) {
  ScopedTraceScope scope(name_);
  return forward(input);
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

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
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

Tensor Module::register_buffer(std::string name, Tensor value) {
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
