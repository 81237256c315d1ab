// tc::onnx::ImportedModule: an ONNX model as an nn::Module. Its parameters
// and buffers are the model's floating-point initializers under their ONNX
// names (for a model exported from PyTorch, its state_dict names; running
// statistics of BatchNormalization are buffers), so checkpoints, optimizers,
// tc::compile and TrainStep treat it as any native module. forward() runs the
// nodes in order as tensorcut ops (nn/onnx/operators.h).
//
// Inputs: one tensor when the model has one input, else a dict by input name
// (or a tuple in the model's order). Outputs: one tensor, or a dict by output
// name. Each input is checked against its declared type; a dim with a name
// (dim_param) takes any size.
#ifndef TENSORCUT_NN_ONNX_IMPORTED_MODULE_H_
#define TENSORCUT_NN_ONNX_IMPORTED_MODULE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nn/module.h"
#include "nn/onnx/model.h"
#include "nn/onnx/operators.h"

namespace tc::onnx {

class ImportedModule : public nn::Module {
 public:
  // Refuses a node whose operator tensorcut does not run, or that sets an
  // attribute the operator does not read: the error names the node, the
  // operator, the opset and the attribute. `source` starts every error.
  static absl::StatusOr<std::shared_ptr<ImportedModule>> Create(Model model,
                                                                absl::string_view source);

  TensorTree forward(const TensorTree& input) override;
  Tensor forward(const Tensor& input) override;

  const std::vector<ValueInfo>& inputs() const { return model_.inputs; }
  const std::vector<ValueInfo>& outputs() const { return model_.outputs; }
  int64_t opset() const { return model_.opset; }
  // The inputs' named dims (dim_param, "N") as the symbolic dims of a
  // capture, for the placeholder `placeholder` of the module's input: "arg0"
  // where the input is the first leaf of TrainStep's (inputs, targets),
  // "arg" for tc::compile's single tensor; a model of several inputs (a
  // dict) gives "arg0_<name>" for each.
  //   TrainStepOptions{.dynamic_dims = model->named_dims("arg0")} (+ {"arg1", {0}})
  DynamicDims named_dims(const std::string& placeholder) const;

  // The model as imported, its initializers holding the module's parameters
  // and buffers as they are now (trained), in the file's order.
  Model Snapshot() const;
  std::string type_name() const override { return "ImportedModule"; }
  std::string extra_repr() const override;

 private:
  ImportedModule() = default;
  // Registers an initializer under its ONNX name, in child modules by its
  // dotted path ("layer1.0.conv1.weight"), as PyTorch's state_dict nests.
  Tensor Register(const std::string& name, Tensor value, bool buffer);
  // The tensors given, by input name, checked against the declared types.
  std::vector<Tensor> Arguments(const TensorTree& input) const;
  // The dtype of the floating state (f64 after to(kF64)): what floating
  // inputs and constants are taken and computed in; none without such state.
  std::optional<DType> FloatingDType() const;

  Model model_;  // its initializers moved into the module's state
  // Every initializer in the file's order: the floating ones are the
  // module's handles, the others the values read.
  std::vector<std::pair<std::string, Tensor>> initializers_;
  KnownValues known_;         // integer initializers and what constant folding made
  std::vector<bool> folded_;  // per node: its outputs are in known_
  // Outputs of folded nodes that their kernels did not make, by node index.
  absl::flat_hash_map<std::string, size_t> unmade_;
  absl::flat_hash_map<std::string, Tensor> state_;  // initializer name -> registered handle
  std::vector<const Operator*> operators_;          // one per node
};

}  // namespace tc::onnx

#endif  // TENSORCUT_NN_ONNX_IMPORTED_MODULE_H_
