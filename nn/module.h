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
#ifndef TENSORCUT_NN_MODULE_H_
#define TENSORCUT_NN_MODULE_H_

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
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;

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
  Tensor register_buffer(std::string name, Tensor value);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    module->name_ = name;
    children_.emplace_back(std::move(name), module);
    return module;
  }

 private:
  void Collect(const std::string& prefix, bool buffers, NamedTensors& out) const;

  NamedTensors parameters_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
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

}  // namespace nn
}  // namespace tc

#endif  // TENSORCUT_NN_MODULE_H_
