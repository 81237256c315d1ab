// The ONNX operators an imported module runs, each written as tensorcut ops,
// so that eager execution, tracing, autodiff and compilation see the same
// ops a native nn::Module would produce. An Operator names the attributes it
// reads: the importer refuses a node with any other, so nothing in a file is
// silently ignored. A NodeCall gives a kernel its node's inputs and decoded
// attributes, and turns a problem into an error naming the node, the
// operator and the opset.
#ifndef TENSORCUT_NN_ONNX_OPERATORS_H_
#define TENSORCUT_NN_ONNX_OPERATORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "nn/onnx/model.h"
#include "runtime/tensor.h"

namespace tc::onnx {

// Tensors known when the model is imported (Constant nodes' outputs and the
// integer initializers), by name: shapes, axes and exponents come from here.
using Constants = absl::flat_hash_map<std::string, Tensor>;

class NodeCall {
 public:
  // `inputs[i]` is undefined where the node leaves optional input i out.
  NodeCall(const Node& node, int64_t opset, bool training, std::vector<Tensor> inputs,
           const Constants& constants);

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  // The module's mode: batch statistics and dropout apply in training only.
  bool training() const { return training_; }

  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  // Input i; an error when the node leaves it out.
  const Tensor& input(size_t i) const;
  // The values of input i, which must be a constant known at import.
  std::vector<int64_t> constant_ints(size_t i) const;
  double constant_scalar(size_t i) const;

  int64_t attr_int(absl::string_view name, int64_t fallback) const;
  double attr_float(absl::string_view name, double fallback) const;
  std::string attr_string(absl::string_view name, absl::string_view fallback) const;
  std::vector<int64_t> attr_ints(absl::string_view name, std::vector<int64_t> fallback) const;

  // Throws tc::Error: "node 'conv1' (Conv, opset 13): <what>".
  [[noreturn]] void Fail(absl::string_view what) const;

 private:
  const Tensor& ConstantInput(size_t i) const;
  template <typename T>
  const T* Find(absl::string_view name) const;

  const Node& node_;
  int64_t opset_;
  bool training_;
  std::vector<Tensor> inputs_;
  const Constants& constants_;
};

struct Operator {
  absl::string_view op_type;
  std::vector<absl::string_view> attributes;  // every attribute it reads
  // The node's outputs, in order (trailing optional ones may be left out).
  std::vector<Tensor> (*run)(const NodeCall& call);
};

// nullptr for an operator tensorcut does not run.
const Operator* FindOperator(absl::string_view op_type);
// Every supported operator's name, sorted (the README's table).
std::vector<std::string> SupportedOperators();

}  // namespace tc::onnx

#endif  // TENSORCUT_NN_ONNX_OPERATORS_H_
