// nn::Module: the base of every layer and model, as torch.nn.Module.
//
// A module owns named parameters, buffers and child modules, kept in
// registration order; fully qualified names join the path with dots
// ("encoder.0.linear.weight"). Tensors are handles, so a layer keeps its
// parameters as members and the registry holds the same handles: updates in
// place (optimizers, checkpoint loads, to(dtype)) are seen by both.
//
//   class Mlp : public nn::Module {
//    public:
//     Mlp() : fc1_(register_module("fc1", std::make_shared<nn::Linear>(784, 512))),
//             fc2_(register_module("fc2", std::make_shared<nn::Linear>(512, 10))) {}
//     Tensor forward(const Tensor& x) override { return (*fc2_)(relu((*fc1_)(x))); }
//    private:
//     std::shared_ptr<nn::Linear> fc1_, fc2_;
//   };
//
// The state a checkpoint holds is state_dict(): parameters and persistent
// buffers, module by module (its own, then its children's), as PyTorch orders
// them; load_state_dict copies values back into the same handles.
#ifndef TENSORCUT_NN_MODULE_H_
#define TENSORCUT_NN_MODULE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/tree.h"
#include "runtime/ops.h"
#include "runtime/trace.h"

namespace tc {

using TensorTree = Tree<Tensor>;

namespace nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module;
using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

// What a non-strict load_state_dict did not match, by FQN, as PyTorch's
// _IncompatibleKeys: the module's keys the dict lacks, and the dict's keys the
// module lacks, each in its source's order.
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

// Called after a module's forward with its input and output (summaries,
// shape probes); see register_forward_hook.
using ForwardHook =
    std::function<void(const Module& module, const TensorTree& input, const TensorTree& output)>;

class Module {
 public:
  virtual ~Module() = default;

  // Structured form: the default passes a single-tensor input to the tensor
  // form. Override this one for dict/tuple inputs or outputs.
  virtual TensorTree forward(const TensorTree& input);
  // Single-tensor form; the default throws (a module must override one form).
  virtual Tensor forward(const Tensor& input);

  TensorTree operator()(const TensorTree& input);
  Tensor operator()(const Tensor& input);

  // Recursively, in registration order, with fully qualified names.
  NamedTensors named_parameters() const;
  NamedTensors named_buffers() const;
  std::vector<Tensor> parameters() const;
  const NamedModules& named_children() const { return children_; }
  // This module (named "") and every descendant, depth first in registration
  // order, as torch's named_modules; each module once even if registered twice.
  std::vector<std::pair<std::string, Module*>> named_modules();
  std::vector<std::pair<std::string, const Module*>> named_modules() const;
  // Calls fn on every descendant, children before parents, then on this module.
  void apply(const std::function<void(Module&)>& fn);
  // The number of parameter elements (shared parameters counted once).
  int64_t num_parameters() const;

  // Parameters and persistent buffers by FQN, each module's own before its
  // children's. The tensors share storage with the module's (detached).
  NamedTensors state_dict() const;
  // Copies `state` into the module's tensors by FQN, converting dtypes as
  // PyTorch's copy_ does. A key whose shape differs is always an error. With
  // `strict`, so is a missing or unexpected key; without, they are returned.
  // On error nothing changes.
  absl::StatusOr<IncompatibleKeys> load_state_dict(const NamedTensors& state, bool strict = true);

  // The class name ("Linear"; for a user's class its unqualified C++ name).
  virtual std::string type_name() const;
  // The constructor arguments, as torch's extra_repr ("in_features=784, ...").
  virtual std::string extra_repr() const { return ""; }
  // The module tree as torch's repr prints it.
  virtual std::string ToString() const;

  // `hook` runs after every call through operator() of this module; the id
  // removes it again.
  int register_forward_hook(ForwardHook hook);
  void remove_forward_hook(int id);

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Clears the .grad of every parameter.
  void zero_grad();
  // Converts floating parameters and buffers in place (handles stay valid).
  void to(DType dtype);

 protected:
  // Registers `value` as a parameter (it is made to require grad) and returns
  // the same handle, to keep as a member.
  Tensor register_parameter(std::string name, Tensor value);
  // A non-persistent buffer is state of the forward (a constant mask, a
  // cache) that state_dict and checkpoints leave out.
  Tensor register_buffer(std::string name, Tensor value, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    module->name_ = name;
    children_.emplace_back(std::move(name), module);
    return module;
  }

 private:
  void Collect(const std::string& prefix, bool buffers, NamedTensors& out) const;
  // state_dict's entries; `detach` gives views without autograd, else the
  // live handles (which load_state_dict writes into).
  void CollectState(const std::string& prefix, bool detach, NamedTensors& out) const;
  void RunForwardHooks(const TensorTree& input, const TensorTree& output) const;

  NamedTensors parameters_;
  NamedTensors buffers_;
  std::vector<std::string> non_persistent_buffers_;
  NamedModules children_;
  std::vector<std::pair<int, ForwardHook>> forward_hooks_;
  int next_hook_id_ = 0;
  std::string name_;  // the name its parent registered it under; the trace scope
  bool training_ = true;
};

// A module traced with example inputs: the program's placeholders are the
// parameters and buffers (by FQN, in registration order), then the flattened
// inputs; its outputs are the flattened user outputs, then the new value of
// each buffer the forward replaced (BatchNorm's running statistics in
// training), named in `mutated_buffers`. Each node's source is the FQN of the
// module that produced it. The module itself is left exactly as it was.
struct TracedModule {
  TracedProgram program;
  std::vector<std::string> mutated_buffers;
};
// `dynamic` marks user-input dims symbolic (runtime/trace.h's DynamicDims).
absl::StatusOr<TracedModule> TraceModule(Module& module, const TensorTree& inputs,
                                         const DynamicDims& dynamic = {});

// Replaces the data, dtype and layout of `dst` with those of `src`, keeping
// `dst`'s handle (and so every member that shares it) and its requires_grad.
void AssignInPlace(const Tensor& dst, const Tensor& src);

// Copies `src`'s values into `dst`'s storage (same dtype and shape, checked by
// the caller), keeping `dst`'s handle and every view that shares its storage.
void CopyValues(const Tensor& dst, const Tensor& src);

}  // namespace nn
}  // namespace tc

#endif  // TENSORCUT_NN_MODULE_H_
