#include "nn/onnx/model.h"

#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "onnx/onnx_pb.h"

namespace tc::onnx {
namespace {

using ::onnx::AttributeProto;
using ::onnx::TensorProto;

// Where a part of the model sits, for errors: "model.onnx: initializer 'fc.weight'".
class Where {
 public:
  explicit Where(absl::string_view source) : source_(source) {}
  absl::Status Invalid(absl::string_view place, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": ", place, ": ", what));
  }

 private:
  std::string source_;
};

struct ElementCodec {
  DType dtype;
  int bytes;  // of one element in raw_data
};

// The ONNX data types tensorcut holds, and how: the narrower integers widen
// to i64.
std::optional<ElementCodec> CodecOf(int32_t data_type) {
  switch (data_type) {
    case TensorProto::FLOAT:
      return ElementCodec{DType::kF32, 4};
    case TensorProto::DOUBLE:
      return ElementCodec{DType::kF64, 8};
    case TensorProto::INT64:
      return ElementCodec{DType::kI64, 8};
    case TensorProto::INT32:
      return ElementCodec{DType::kI64, 4};
    case TensorProto::INT16:
      return ElementCodec{DType::kI64, 2};
    case TensorProto::INT8:
      return ElementCodec{DType::kI64, 1};
    case TensorProto::UINT8:
      return ElementCodec{DType::kI64, 1};
    case TensorProto::BOOL:
      return ElementCodec{DType::kBool, 1};
    default:
      return std::nullopt;
  }
}

// One little-endian raw element as double or int64.
template <typename T>
T ReadRaw(const char* p, int32_t data_type) {
  switch (data_type) {
    case TensorProto::FLOAT: {
      float v;
      std::memcpy(&v, p, 4);
      return static_cast<T>(v);
    }
    case TensorProto::DOUBLE: {
      double v;
      std::memcpy(&v, p, 8);
      return static_cast<T>(v);
    }
    case TensorProto::INT64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<T>(v);
    }
    case TensorProto::INT32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return static_cast<T>(v);
    }
    case TensorProto::INT16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return static_cast<T>(v);
    }
    case TensorProto::INT8:
      return static_cast<T>(static_cast<int8_t>(*p));
    default:
      return static_cast<T>(static_cast<uint8_t>(*p));  // UINT8, BOOL
  }
}

absl::StatusOr<Tensor> DecodeTensor(const TensorProto& proto, const Where& where,
                                    absl::string_view place) {
  if (proto.data_location() == TensorProto::EXTERNAL) {
    return where.Invalid(place, "data stored outside the model file is not supported");
  }
  const std::optional<ElementCodec> codec = CodecOf(proto.data_type());
  if (!codec.has_value()) {
    return where.Invalid(place, absl::StrCat("data type ", OnnxTypeName(proto.data_type()),
                                             " is not supported (FLOAT, DOUBLE, BOOL and "
                                             "the integers are)"));
  }
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && numel > std::numeric_limits<int64_t>::max() / 8 / d)) {
      return where.Invalid(place, absl::StrCat("dims [", absl::StrJoin(shape, ","),
                                               "] are not a shape tensorcut can hold"));
    }
    numel *= d;
  }
  // The values from raw_data or from the typed field the type uses.
  int64_t count = 0;
  const std::string& raw = proto.raw_data();
  const bool from_raw = proto.has_raw_data();
  if (from_raw) {
    if (static_cast<int64_t>(raw.size()) != numel * codec->bytes) {
      return where.Invalid(
          place,
          absl::StrCat("raw_data holds ", raw.size(), " bytes; dims [", absl::StrJoin(shape, ","),
                       "] of ", OnnxTypeName(proto.data_type()), " need ", numel * codec->bytes));
    }
    count = numel;
  } else {
    switch (proto.data_type()) {
      case TensorProto::FLOAT:
        count = proto.float_data_size();
        break;
      case TensorProto::DOUBLE:
        count = proto.double_data_size();
        break;
      case TensorProto::INT64:
        count = proto.int64_data_size();
        break;
      default:
        count = proto.int32_data_size();
        break;
    }
    if (count != numel) {
      return where.Invalid(place, absl::StrCat("holds ", count, " values; dims [",
                                               absl::StrJoin(shape, ","), "] need ", numel));
    }
  }
  Tensor t = Tensor::Empty(shape, codec->dtype);
  for (int64_t i = 0; i < numel; ++i) {
    const char* p = raw.data() + i * codec->bytes;
    switch (codec->dtype) {
      case DType::kF32:
        t.data<float>()[i] = from_raw ? ReadRaw<float>(p, proto.data_type()) : proto.float_data(i);
        break;
      case DType::kF64:
        t.data<double>()[i] =
            from_raw ? ReadRaw<double>(p, proto.data_type()) : proto.double_data(i);
        break;
      case DType::kI64:
        t.data<int64_t>()[i] = from_raw ? ReadRaw<int64_t>(p, proto.data_type())
                               : proto.data_type() == TensorProto::INT64 ? proto.int64_data(i)
                                                                         : proto.int32_data(i);
        break;
      default: {  // kBool
        const int64_t v = from_raw ? ReadRaw<int64_t>(p, proto.data_type()) : proto.int32_data(i);
        if (v != 0 && v != 1) {
          return where.Invalid(place,
                               absl::StrCat("element ", i, " is ", v, ", not a BOOL (0 or 1)"));
        }
        t.data<bool>()[i] = v == 1;
      }
    }
  }
  return t;
}

absl::StatusOr<ValueInfo> DecodeValueInfo(const ::onnx::ValueInfoProto& proto, const Where& where,
                                          absl::string_view role) {
  const std::string place = absl::StrCat(role, " '", proto.name(), "'");
  if (!proto.type().has_tensor_type()) return where.Invalid(place, "is not a tensor");
  const auto& type = proto.type().tensor_type();
  const std::optional<ElementCodec> codec = CodecOf(type.elem_type());
  if (!codec.has_value()) {
    return where.Invalid(
        place, absl::StrCat("data type ", OnnxTypeName(type.elem_type()), " is not supported"));
  }
  ValueInfo info{.name = proto.name(), .dtype = codec->dtype};
  for (const auto& dim : type.shape().dim()) {
    info.shape.push_back(Dim{.size = dim.has_dim_value() ? dim.dim_value() : -1,
                             .name = dim.has_dim_param() ? dim.dim_param() : ""});
  }
  return info;
}

absl::StatusOr<Attribute> DecodeAttribute(const AttributeProto& proto, const Where& where,
                                          absl::string_view node) {
  const std::string place = absl::StrCat("node '", node, "': attribute '", proto.name(), "'");
  switch (proto.type()) {
    case AttributeProto::INT:
      return Attribute(static_cast<int64_t>(proto.i()));
    case AttributeProto::FLOAT:
      return Attribute(static_cast<double>(proto.f()));
    case AttributeProto::STRING:
      return Attribute(proto.s());
    case AttributeProto::INTS:
      return Attribute(std::vector<int64_t>(proto.ints().begin(), proto.ints().end()));
    case AttributeProto::FLOATS:
      return Attribute(std::vector<double>(proto.floats().begin(), proto.floats().end()));
    case AttributeProto::TENSOR: {
      TC_ASSIGN_OR_RETURN(Tensor t, DecodeTensor(proto.t(), where, place));
      return Attribute(std::move(t));
    }
    default:
      return where.Invalid(place, absl::StrCat("attributes of type ",
                                               AttributeProto::AttributeType_Name(proto.type()),
                                               " are not supported"));
  }
}

// ---- writing

absl::Status EncodeTensor(const std::string& name, const Tensor& value, TensorProto& proto) {
  const int32_t type = OnnxTypeOf(value.dtype());
  if (type == TensorProto::UNDEFINED) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' is ",
                                                   DTypeName(value.dtype()),
                                                   "; ONNX models are written in f32, f64, i64 "
                                                   "and bool"));
  }
  proto.set_name(name);
  proto.set_data_type(type);
  for (int64_t d : value.shape()) proto.add_dims(d);
  const Tensor data = value.contiguous();
  proto.set_raw_data(
      std::string(static_cast<const char*>(data.raw_data()), static_cast<size_t>(data.bytes())));
  return absl::OkStatus();
}

absl::Status EncodeValueInfo(const ValueInfo& info, ::onnx::ValueInfoProto& proto) {
  if (OnnxTypeOf(info.dtype) == TensorProto::UNDEFINED) {
    return absl::InvalidArgumentError(absl::StrCat("value '", info.name, "' is ",
                                                   DTypeName(info.dtype),
                                                   "; ONNX models are written in f32, f64, i64 "
                                                   "and bool"));
  }
  proto.set_name(info.name);
  auto* type = proto.mutable_type()->mutable_tensor_type();
  type->set_elem_type(OnnxTypeOf(info.dtype));
  auto* shape = type->mutable_shape();
  for (const Dim& d : info.shape) {
    auto* dim = shape->add_dim();
    if (!d.name.empty()) {
      dim->set_dim_param(d.name);
    } else if (d.size >= 0) {
      dim->set_dim_value(d.size);
    }
  }
  return absl::OkStatus();
}

absl::Status EncodeAttribute(const std::string& name, const Attribute& value,
                             AttributeProto& proto) {
  proto.set_name(name);
  if (const int64_t* i = std::get_if<int64_t>(&value)) {
    proto.set_type(AttributeProto::INT);
    proto.set_i(*i);
  } else if (const double* f = std::get_if<double>(&value)) {
    proto.set_type(AttributeProto::FLOAT);
    proto.set_f(static_cast<float>(*f));  // read from a float: the same bits back
  } else if (const std::string* s = std::get_if<std::string>(&value)) {
    proto.set_type(AttributeProto::STRING);
    proto.set_s(*s);
  } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
    proto.set_type(AttributeProto::INTS);
    for (int64_t v : *ints) proto.add_ints(v);
  } else if (const auto* floats = std::get_if<std::vector<double>>(&value)) {
    proto.set_type(AttributeProto::FLOATS);
    for (double v : *floats) proto.add_floats(static_cast<float>(v));
  } else {
    proto.set_type(AttributeProto::TENSOR);
    return EncodeTensor("", std::get<Tensor>(value), *proto.mutable_t());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> SerializeModel(const Model& model, absl::string_view producer_version) {
  ::onnx::ModelProto proto;
  proto.set_ir_version(8);  // ONNX 1.10 to 1.12's, opsets up to 17
  proto.set_producer_name("tensorcut");
  proto.set_producer_version(std::string(producer_version));
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(model.opset);
  ::onnx::GraphProto& graph = *proto.mutable_graph();
  graph.set_name("tensorcut");
  for (const auto& [name, value] : model.initializers) {
    TC_RETURN_IF_ERROR(EncodeTensor(name, value, *graph.add_initializer()));
  }
  for (const ValueInfo& input : model.inputs) {
    TC_RETURN_IF_ERROR(EncodeValueInfo(input, *graph.add_input()));
  }
  for (const ValueInfo& output : model.outputs) {
    TC_RETURN_IF_ERROR(EncodeValueInfo(output, *graph.add_output()));
  }
  for (const Node& node : model.nodes) {
    ::onnx::NodeProto& out = *graph.add_node();
    out.set_name(node.name);
    out.set_op_type(node.op_type);
    for (const std::string& input : node.inputs) out.add_input(input);
    for (const std::string& output : node.outputs) out.add_output(output);
    for (const auto& [name, value] : node.attributes) {
      TC_RETURN_IF_ERROR(EncodeAttribute(name, value, *out.add_attribute()));
    }
  }
  return proto.SerializeAsString();
}

int32_t OnnxTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return TensorProto::FLOAT;
    case DType::kF64:
      return TensorProto::DOUBLE;
    case DType::kI64:
      return TensorProto::INT64;
    case DType::kBool:
      return TensorProto::BOOL;
    default:
      return TensorProto::UNDEFINED;
  }
}

std::string OnnxTypeName(int32_t data_type) {
  if (!TensorProto::DataType_IsValid(data_type)) return absl::StrCat("unknown (", data_type, ")");
  return absl::StrCat(TensorProto::DataType_Name(static_cast<TensorProto::DataType>(data_type)),
                      " (", data_type, ")");
}

absl::StatusOr<Model> ParseModel(absl::string_view bytes, absl::string_view source) {
  const Where where(source);
  ::onnx::ModelProto proto;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": not an ONNX model (the file does not parse as a ModelProto; truncated or "
                     "another format)"));
  }
  Model model;
  model.producer = absl::StrCat(proto.producer_name(), " ", proto.producer_version());
  for (const auto& opset : proto.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") model.opset = opset.version();
  }
  if (model.opset < kMinOpset || model.opset > kMaxOpset) {
    return where.Invalid(
        "opset_import",
        model.opset == 0 ? absl::StrCat("the model imports no opset of the default domain")
                         : absl::StrCat("opset ", model.opset, " of the default domain; ",
                                        "tensorcut reads opsets ", kMinOpset, " to ", kMaxOpset));
  }
  const ::onnx::GraphProto& graph = proto.graph();
  absl::flat_hash_set<std::string> defined;
  auto define = [&](const std::string& name, absl::string_view place) -> absl::Status {
    if (name.empty()) return where.Invalid(place, "has an empty name");
    if (!defined.insert(name).second) {
      return where.Invalid(place, absl::StrCat("defines '", name, "' a second time"));
    }
    return absl::OkStatus();
  };
  for (const TensorProto& init : graph.initializer()) {
    const std::string place = absl::StrCat("initializer '", init.name(), "'");
    TC_RETURN_IF_ERROR(define(init.name(), place));
    TC_ASSIGN_OR_RETURN(Tensor t, DecodeTensor(init, where, place));
    model.initializers.emplace_back(init.name(), std::move(t));
  }
  for (const auto& input : graph.input()) {
    if (defined.contains(input.name())) continue;  // an initializer listed as an input
    TC_ASSIGN_OR_RETURN(ValueInfo info, DecodeValueInfo(input, where, "input"));
    TC_RETURN_IF_ERROR(define(info.name, absl::StrCat("input '", info.name, "'")));
    model.inputs.push_back(std::move(info));
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const ::onnx::NodeProto& proto_node = graph.node(i);
    Node node{.name = proto_node.name().empty() ? absl::StrCat(proto_node.op_type(), "_", i)
                                                : proto_node.name(),
              .op_type = proto_node.op_type()};
    const std::string place = absl::StrCat("node '", node.name, "' (", node.op_type, ")");
    if (!proto_node.domain().empty() && proto_node.domain() != "ai.onnx") {
      return where.Invalid(place, absl::StrCat("domain '", proto_node.domain(),
                                               "' is not supported (only the default domain)"));
    }
    for (const std::string& input : proto_node.input()) {
      if (!input.empty() && !defined.contains(input)) {
        return where.Invalid(place, absl::StrCat("reads '", input,
                                                 "', which no earlier node, input or initializer "
                                                 "defines (a cycle, or nodes out of order)"));
      }
      node.inputs.push_back(input);
    }
    for (const std::string& output : proto_node.output()) {
      if (!output.empty()) TC_RETURN_IF_ERROR(define(output, place));
      node.outputs.push_back(output);
    }
    for (const AttributeProto& attribute : proto_node.attribute()) {
      TC_ASSIGN_OR_RETURN(Attribute value, DecodeAttribute(attribute, where, node.name));
      if (!node.attributes.emplace(attribute.name(), std::move(value)).second) {
        return where.Invalid(place,
                             absl::StrCat("attribute '", attribute.name(), "' is given twice"));
      }
    }
    model.nodes.push_back(std::move(node));
  }
  absl::flat_hash_set<std::string> output_names;
  for (const auto& output : graph.output()) {
    TC_ASSIGN_OR_RETURN(ValueInfo info, DecodeValueInfo(output, where, "output"));
    const std::string place = absl::StrCat("output '", info.name, "'");
    if (!defined.contains(info.name)) {
      return where.Invalid(place, "is defined by no node, input or initializer");
    }
    if (!output_names.insert(info.name).second) return where.Invalid(place, "is listed twice");
    model.outputs.push_back(std::move(info));
  }
  if (model.outputs.empty()) return where.Invalid("graph", "has no outputs");
  return model;
}

}  // namespace tc::onnx
