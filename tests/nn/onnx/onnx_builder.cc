#include "tests/nn/onnx/onnx_builder.h"

#include <stdexcept>

namespace tc::testing {
namespace {

int32_t ElemType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return ::onnx::TensorProto::FLOAT;
    case DType::kF64:
      return ::onnx::TensorProto::DOUBLE;
    case DType::kI64:
      return ::onnx::TensorProto::INT64;
    case DType::kBool:
      return ::onnx::TensorProto::BOOL;
    default:
      throw std::invalid_argument("OnnxBuilder: no ONNX type for this dtype");
  }
}

}  // namespace

::onnx::TensorProto ToTensorProto(const std::string& name, const Tensor& value) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(ElemType(value.dtype()));
  for (int64_t d : value.shape()) t.add_dims(d);
  const Tensor c = value.contiguous();
  t.set_raw_data(std::string(static_cast<const char*>(c.raw_data()),
                             static_cast<size_t>(c.numel() * ItemSize(c.dtype()))));
  return t;
}

OnnxBuilder::OnnxBuilder(int64_t opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("tensorcut-test");
  auto* import = model_.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

void OnnxBuilder::Input(const std::string& name, DType dtype, const std::vector<Dim>& shape) {
  auto* input = model_.mutable_graph()->add_input();
  input->set_name(name);
  auto* type = input->mutable_type()->mutable_tensor_type();
  type->set_elem_type(ElemType(dtype));
  auto* dims = type->mutable_shape();
  for (const Dim& d : shape) {
    auto* dim = dims->add_dim();
    if (const int64_t* size = std::get_if<int64_t>(&d)) {
      dim->set_dim_value(*size);
    } else {
      dim->set_dim_param(std::get<std::string>(d));
    }
  }
}

void OnnxBuilder::Output(const std::string& name, DType dtype) {
  auto* output = model_.mutable_graph()->add_output();
  output->set_name(name);
  output->mutable_type()->mutable_tensor_type()->set_elem_type(ElemType(dtype));
}

void OnnxBuilder::Initializer(const std::string& name, const Tensor& value) {
  *model_.mutable_graph()->add_initializer() = ToTensorProto(name, value);
}

OnnxBuilder::NodeRef OnnxBuilder::Node(const std::string& op_type,
                                       const std::vector<std::string>& inputs,
                                       const std::vector<std::string>& outputs,
                                       const std::string& name) {
  auto* node = model_.mutable_graph()->add_node();
  node->set_op_type(op_type);
  node->set_name(name);
  for (const auto& i : inputs) node->add_input(i);
  for (const auto& o : outputs) node->add_output(o);
  return NodeRef(node);
}

OnnxBuilder::NodeRef& OnnxBuilder::NodeRef::Int(const std::string& name, int64_t v) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
  return *this;
}

OnnxBuilder::NodeRef& OnnxBuilder::NodeRef::Float(const std::string& name, double v) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
  return *this;
}

OnnxBuilder::NodeRef& OnnxBuilder::NodeRef::Ints(const std::string& name,
                                                 const std::vector<int64_t>& v) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
  return *this;
}

OnnxBuilder::NodeRef& OnnxBuilder::NodeRef::String(const std::string& name, const std::string& v) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
  return *this;
}

OnnxBuilder::NodeRef& OnnxBuilder::NodeRef::TensorValue(const std::string& name, const Tensor& v) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::TENSOR);
  *a->mutable_t() = ToTensorProto("", v);
  return *this;
}

std::string OnnxBuilder::Bytes() const { return model_.SerializeAsString(); }

}  // namespace tc::testing
