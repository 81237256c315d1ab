// Builds ONNX models in a test, from C++: inputs, outputs, initializers from
// tensorcut tensors, and nodes with attributes, serialized as a file would
// hold them. Tests reach past it (proto()) to write what a damaged file holds.
#ifndef TENSORCUT_TESTS_NN_ONNX_ONNX_BUILDER_H_
#define TENSORCUT_TESTS_NN_ONNX_ONNX_BUILDER_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "onnx/onnx_pb.h"
#include "runtime/tensor.h"

namespace tc::testing {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 15);

  // A dim is a size or a name (dim_param).
  using Dim = std::variant<int64_t, std::string>;
  void Input(const std::string& name, DType dtype, const std::vector<Dim>& shape);
  void Output(const std::string& name, DType dtype);
  // f32, f64, i64 or bool, as raw_data.
  void Initializer(const std::string& name, const Tensor& value);

  class NodeRef {
   public:
    explicit NodeRef(::onnx::NodeProto* node) : node_(node) {}
    NodeRef& Int(const std::string& name, int64_t v);
    NodeRef& Float(const std::string& name, double v);
    NodeRef& Ints(const std::string& name, const std::vector<int64_t>& v);
    NodeRef& String(const std::string& name, const std::string& v);
    NodeRef& TensorValue(const std::string& name, const Tensor& v);

   private:
    ::onnx::NodeProto* node_;
  };
  NodeRef Node(const std::string& op_type, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs, const std::string& name = "");

  ::onnx::ModelProto& proto() { return model_; }
  std::string Bytes() const;

 private:
  ::onnx::ModelProto model_;
};

::onnx::TensorProto ToTensorProto(const std::string& name, const Tensor& value);

}  // namespace tc::testing

#endif  // TENSORCUT_TESTS_NN_ONNX_ONNX_BUILDER_H_
