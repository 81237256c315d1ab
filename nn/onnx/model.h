// An ONNX model as tensorcut reads it: the graph's inputs and outputs with
// their types, its initializers as tensors, and its nodes with their
// attributes decoded, all checked against what the file claims (every tensor's
// bytes fill its shape, every node input is defined before it is used, the
// default domain's opset is one tensorcut reads). Protobuf stays inside
// model.cc; the rest of nn/onnx sees only these structs.
//
//   TC_ASSIGN_OR_RETURN(onnx::Model model, onnx::ParseModel(bytes, "model.onnx"));
//   model.nodes[0].op_type;  // "Conv"
#ifndef TENSORCUT_NN_ONNX_MODEL_H_
#define TENSORCUT_NN_ONNX_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/tensor.h"

namespace tc::onnx {

// The default domain's opsets tensorcut reads.
inline constexpr int64_t kMinOpset = 13;
inline constexpr int64_t kMaxOpset = 17;

// One dim of a declared input or output: a size, or a name (`dim_param`,
// "N") that stands for a size given at run time; empty when neither is set.
struct Dim {
  int64_t size = -1;
  std::string name;
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<Dim> shape;
};

// An attribute's value: int, float, string, ints, floats or a tensor.
using Attribute =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, Tensor>;

struct Node {
  std::string name;                 // the file's, or "<op_type>_<index>" where it has none
  std::string op_type;              // of the default domain
  std::vector<std::string> inputs;  // "" for an optional input left out
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;
};

struct Model {
  int64_t opset = 0;
  std::string producer;           // "pytorch 1.13.1"
  std::vector<ValueInfo> inputs;  // without the initializers some files list as inputs
  std::vector<ValueInfo> outputs;
  std::vector<std::pair<std::string, Tensor>> initializers;  // in the file's order
  std::vector<Node> nodes;  // in an order where each input is defined first
};

// Reads a serialized ModelProto. `source` (a path) starts every error.
absl::StatusOr<Model> ParseModel(absl::string_view bytes, absl::string_view source);

// `model` as a serialized ModelProto that ParseModel reads back to the same
// model (integers as INT64). Tensors must be f32, f64, i64 or bool (an ONNX
// INT32 reads as i64, so i32 is not written: it would not read back the same).
absl::StatusOr<std::string> SerializeModel(const Model& model, absl::string_view producer_version);

// The ONNX data type of a dtype (TensorProto's FLOAT, DOUBLE, INT64, BOOL),
// 0 (UNDEFINED) for bf16, which ONNX files here do not hold.
int32_t OnnxTypeOf(DType dtype);

// The ONNX name of a data type ("FLOAT", "FLOAT16") for errors.
std::string OnnxTypeName(int32_t data_type);

}  // namespace tc::onnx

#endif  // TENSORCUT_NN_ONNX_MODEL_H_
