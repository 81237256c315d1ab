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
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "nn/onnx/model.h"
#include "runtime/tensor.h"

namespace tc::onnx {

// An integer value known while the forward is built rather than computed by
// it: what a Constant node or an integer initializer holds, and the shape
// arithmetic over them (Shape -> Gather -> Concat -> Reshape). Dims of a
// symbolic shape stay symbols (graph/symbolic.h), so a model exported with a
// dynamic batch reshapes by the batch it is called with.
struct IntValue {
  std::vector<int64_t> values;
  bool scalar = false;  // 0-d, else 1-d
};

// What a NodeCall can read without running the graph, by value name.
struct KnownValues {
  absl::flat_hash_map<std::string, IntValue> ints;
  absl::flat_hash_map<std::string, Tensor> constants;  // floating Constant outputs
};

// An integer value as an i64 tensor; symbolic dims become size_scalar nodes.
Tensor Materialize(const IntValue& value);

class NodeCall {
 public:
  // `inputs[i]` is undefined where the node leaves optional input i out.
  NodeCall(const Node& node, int64_t opset, bool training, std::vector<Tensor> inputs,
           const KnownValues& known);

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  // The module's mode: batch statistics and dropout apply in training only.
  bool training() const { return training_; }

  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  // Input i; an error when the node leaves it out.
  const Tensor& input(size_t i) const;
  // Input i as a known integer value, or nullptr.
  const IntValue* known_ints(size_t i) const;
  // The values of input i, which must be known (a constant or shape
  // arithmetic); constant_scalar's must hold one number, not a symbol.
  std::vector<int64_t> constant_ints(size_t i) const;
  double constant_scalar(size_t i) const;

  int64_t attr_int(absl::string_view name, int64_t fallback) const;
  double attr_float(absl::string_view name, double fallback) const;
  std::string attr_string(absl::string_view name, absl::string_view fallback) const;
  std::vector<int64_t> attr_ints(absl::string_view name, std::vector<int64_t> fallback) const;

  // Throws tc::Error: "node 'conv1' (Conv, opset 13): <what>".
  [[noreturn]] void Fail(absl::string_view what) const;

 private:
  [[noreturn]] void FailNotKnown(size_t i) const;
  template <typename T>
  const T* Find(absl::string_view name) const;

  const Node& node_;
  int64_t opset_;
  bool training_;
  std::vector<Tensor> inputs_;
  const KnownValues& known_;
};

struct Operator {
  absl::string_view op_type;
  std::vector<absl::string_view> attributes;  // every attribute it reads
  // The node's outputs, in order. Trailing optional ones (Dropout's mask,
  // MaxPool's indices) may be left out; reading one is an error.
  std::vector<Tensor> (*run)(const NodeCall& call);
};

// nullptr for an operator tensorcut does not run.
const Operator* FindOperator(absl::string_view op_type);

// Runs `call`'s node over known integers when it is shape arithmetic (Shape,
// Gather, Concat, Slice, Unsqueeze, Squeeze, integer Add/Sub/Mul/Div, Cast to
// an integer) and every input it reads is known (Shape reads only a shape):
// its outputs, else nullopt and the node runs as tensor ops.
std::optional<std::vector<IntValue>> EvaluateShapeArithmetic(const NodeCall& call);
// Every supported operator's name, sorted (the README's table).
std::vector<std::string> SupportedOperators();

}  // namespace tc::onnx

#endif  // TENSORCUT_NN_ONNX_OPERATORS_H_
