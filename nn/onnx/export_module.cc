// A native module as ONNX: its forward traced in eval mode (nn/module.h's
// TraceModule) and each op of the traced graph written as ONNX nodes of
// opset 17. Parameters and buffers become initializers under their FQNs;
// constants the trace lifted, initializers of their own.
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "base/version.h"
#include "graph/ir.h"
#include "graph/symbolic.h"
#include "nn/module.h"
#include "nn/onnx/export.h"
#include "nn/onnx/model.h"
#include "runtime/ops.h"

namespace tc::onnx {
namespace {

constexpr int64_t kExportOpset = 17;  // LayerNormalization's first

// Writes ONNX nodes into a Model, naming what it makes "tensorcut::...", which
// no FQN (letters, digits, '_' and '.') can be.
class Emitter {
 public:
  explicit Emitter(Model& model) : model_(model) {}

  // A new initializer holding `value`.
  std::string Constant(const Tensor& value) {
    std::string name = absl::StrCat("tensorcut::constant_", constants_++);
    model_.initializers.emplace_back(name, value);
    return name;
  }
  std::string Ints(const std::vector<int64_t>& values) {
    return Constant(from_vector(values, {static_cast<int64_t>(values.size())}));
  }
  std::string Scalar(double value, DType dtype) { return Constant(full({}, value, dtype)); }

  // A node writing `outputs`; returns outputs[0].
  std::string Op(const std::string& op_type, std::vector<std::string> inputs,
                 std::vector<std::string> outputs, std::map<std::string, Attribute> attrs = {}) {
    model_.nodes.push_back(Node{.name = absl::StrCat(op_type, "_", model_.nodes.size()),
                                .op_type = op_type,
                                .inputs = std::move(inputs),
                                .outputs = std::move(outputs),
                                .attributes = std::move(attrs)});
    return model_.nodes.back().outputs.at(0);
  }
  // A node writing one new value.
  std::string Temp(const std::string& op_type, std::vector<std::string> inputs,
                   std::map<std::string, Attribute> attrs = {}) {
    return Op(op_type, std::move(inputs), {absl::StrCat("tensorcut::t", temps_++)},
              std::move(attrs));
  }

 private:
  Model& model_;
  int constants_ = 0, temps_ = 0;
};

absl::Status Unsupported(const tc::Node& node, absl::string_view why = "") {
  return absl::UnimplementedError(absl::StrCat(
      "export: op ", node.def().name, node.source().empty() ? "" : " (in ", node.source(),
      node.source().empty() ? "" : ")", " has no ONNX form here", why.empty() ? "" : ": ", why));
}

std::vector<int64_t> Axes(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> axes;
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t d : dims) axes.push_back(d < 0 ? d + rank : d);
  return axes;
}

// Writes `node`, whose inputs are named `in` and results `out`.
absl::Status EmitNode(const tc::Node& node, const std::vector<std::string>& in,
                      const std::vector<std::string>& out, Emitter& e) {
  const Attrs& a = node.attrs();
  const std::string name(node.def().name);
  const TensorType& x = node.num_inputs() > 0 ? node.input(0)->type() : node.result(0)->type();
  auto simple = [&](const std::string& op_type) { e.Op(op_type, in, {out[0]}); };
  static const auto* kSame = new std::map<std::string, std::string>{
      {"add", "Add"},    {"sub", "Sub"},           {"mul", "Mul"},
      {"div", "Div"},    {"maximum", "Max"},       {"minimum", "Min"},
      {"eq", "Equal"},   {"lt", "Less"},           {"le", "LessOrEqual"},
      {"gt", "Greater"}, {"ge", "GreaterOrEqual"}, {"where", "Where"},
      {"neg", "Neg"},    {"exp", "Exp"},           {"log", "Log"},
      {"sqrt", "Sqrt"},  {"abs", "Abs"},           {"sign", "Sign"},
      {"relu", "Relu"},  {"sigmoid", "Sigmoid"},   {"tanh", "Tanh"},
      {"erf", "Erf"},    {"matmul", "MatMul"},     {"stop_gradient", "Identity"}};
  if (const auto it = kSame->find(name); it != kSame->end()) {
    simple(it->second);
    return absl::OkStatus();
  }
  if (name == "log1p") {
    e.Op("Log", {e.Temp("Add", {in[0], e.Scalar(1, x.dtype)})}, {out[0]});
  } else if (name == "rsqrt") {
    e.Op("Reciprocal", {e.Temp("Sqrt", {in[0]})}, {out[0]});
  } else if (name == "pow") {
    e.Op("Pow", {in[0], e.Scalar(a.Float("exponent"), x.dtype)}, {out[0]});
  } else if (name == "gelu") {
    const std::string& x0 = in[0];
    if (a.Str("approximate") == "tanh") {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const std::string cube = e.Temp("Pow", {x0, e.Scalar(3, x.dtype)});
      const std::string inner =
          e.Temp("Mul", {e.Temp("Add", {x0, e.Temp("Mul", {cube, e.Scalar(0.044715, x.dtype)})}),
                         e.Scalar(std::sqrt(2 / M_PI), x.dtype)});
      e.Op("Mul",
           {e.Temp("Mul", {x0, e.Scalar(0.5, x.dtype)}),
            e.Temp("Add", {e.Temp("Tanh", {inner}), e.Scalar(1, x.dtype)})},
           {out[0]});
    } else {
      // 0.5 x (1 + erf(x / sqrt(2))), as PyTorch exports GELU
      const std::string erf = e.Temp("Erf", {e.Temp("Div", {x0, e.Scalar(M_SQRT2, x.dtype)})});
      e.Op(
          "Mul",
          {e.Temp("Mul", {x0, e.Scalar(0.5, x.dtype)}), e.Temp("Add", {erf, e.Scalar(1, x.dtype)})},
          {out[0]});
    }
  } else if (name == "cast") {
    const DType to = a.Dtype("dtype");
    const int64_t onnx_type = OnnxTypeOf(to);
    if (onnx_type == 0) return Unsupported(node, absl::StrCat("cast to ", DTypeName(to)));
    e.Op("Cast", in, {out[0]}, {{"to", onnx_type}});
  } else if (name == "full") {
    e.Op("Identity", {e.Constant(full(a.Ints("shape"), a.Float("value"), a.Dtype("dtype")))},
         {out[0]});
  } else if (name == "arange") {
    e.Op("Identity",
         {e.Constant(arange(a.Float("start"), a.Float("end"), a.Float("step"), a.Dtype("dtype")))},
         {out[0]});
  } else if (name == "size_scalar") {
    e.Op("Identity", {e.Scalar(static_cast<double>(a.Int("size")), a.Dtype("dtype"))}, {out[0]});
  } else if (name == "sum" || name == "mean" || name == "max" || name == "min") {
    const std::vector<int64_t> axes = Axes(a.Ints("dims"), x.rank());
    const int64_t keepdims = a.Bool("keepdim") ? 1 : 0;
    if (name == "sum") {
      // A bool tensor's sum counts (i64); ONNX's ReduceSum takes numbers.
      const std::string summed =
          x.dtype == DType::kBool
              ? e.Temp("Cast", {in[0]}, {{"to", int64_t{OnnxTypeOf(DType::kI64)}}})
              : in[0];
      e.Op("ReduceSum", {summed, e.Ints(axes)}, {out[0]}, {{"keepdims", keepdims}});
    } else {
      const std::string op = name == "mean"  ? "ReduceMean"
                             : name == "max" ? "ReduceMax"
                                             : "ReduceMin";
      e.Op(op, in, {out[0]}, {{"axes", axes}, {"keepdims", keepdims}});
    }
  } else if (name == "argmax") {
    e.Op("ArgMax", in, {out[0]},
         {{"axis", a.Int("dim")}, {"keepdims", int64_t{a.Bool("keepdim")}}});
  } else if (name == "softmax" || name == "log_softmax") {
    e.Op(name == "softmax" ? "Softmax" : "LogSoftmax", in, {out[0]}, {{"axis", a.Int("dim")}});
  } else if (name == "linear") {
    const std::string wt = e.Temp("Transpose", {in[1]}, {{"perm", std::vector<int64_t>{1, 0}}});
    if (node.num_inputs() < 3) {
      e.Op("MatMul", {in[0], wt}, {out[0]});
    } else {
      e.Op("Add", {e.Temp("MatMul", {in[0], wt}), in[2]}, {out[0]});
    }
  } else if (name == "permute") {
    e.Op("Transpose", in, {out[0]}, {{"perm", a.Ints("dims")}});
  } else if (name == "reshape") {
    const Shape& target = node.result(0)->type().shape;
    std::map<std::string, Attribute> attrs;
    if (absl::c_linear_search(target, 0)) attrs["allowzero"] = int64_t{1};  // a 0 is a size
    e.Op("Reshape", {in[0], e.Ints(target)}, {out[0]}, std::move(attrs));
  } else if (name == "expand") {
    e.Op("Expand", {in[0], e.Ints(a.Ints("shape"))}, {out[0]});
  } else if (name == "slice") {
    e.Op("Slice",
         {in[0], e.Ints({a.Int("start")}), e.Ints({a.Int("end")}), e.Ints({a.Int("dim")}),
          e.Ints({a.Int("step")})},
         {out[0]});
  } else if (name == "concat") {
    e.Op("Concat", in, {out[0]}, {{"axis", a.Int("dim")}});
  } else if (name == "pad") {
    const std::vector<int64_t>& pairs = a.Ints("pads");  // [lo0, hi0, lo1, hi1, ...]
    std::vector<int64_t> pads(pairs.size());
    const size_t rank = pairs.size() / 2;
    for (size_t d = 0; d < rank; ++d) {
      pads[d] = pairs[2 * d];
      pads[rank + d] = pairs[2 * d + 1];
    }
    e.Op("Pad", {in[0], e.Ints(pads), e.Scalar(a.Float("value"), x.dtype)}, {out[0]});
  } else if (name == "conv2d") {
    const std::vector<int64_t> padding = a.Ints("padding");
    std::vector<std::string> inputs = {in[0], in[1]};
    if (node.num_inputs() > 2) {
      inputs.push_back(
          node.input(2)->type().rank() == 1 ? in[2] : e.Temp("Reshape", {in[2], e.Ints({-1})}));
    }
    e.Op("Conv", inputs, {out[0]},
         {{"strides", a.Ints("stride")},
          {"pads", std::vector<int64_t>{padding[0], padding[1], padding[0], padding[1]}},
          {"dilations", a.Ints("dilation")},
          {"group", a.Int("groups")}});
  } else if (name == "conv2d_backward_data") {
    // A transposed convolution (nn::ConvTranspose2d): the output padding is
    // what the input shape holds beyond the strided span.
    const std::vector<int64_t> padding = a.Ints("padding"), stride = a.Ints("stride"),
                               dilation = a.Ints("dilation"), shape = a.Ints("input_shape");
    const Shape& w = node.input(1)->type().shape;
    std::vector<int64_t> extra(2);
    for (int d = 0; d < 2; ++d) {
      extra[d] = shape[2 + d] - ((x.shape[2 + d] - 1) * stride[d] - 2 * padding[d] +
                                 dilation[d] * (w[2 + d] - 1) + 1);
    }
    e.Op("ConvTranspose", in, {out[0]},
         {{"strides", stride},
          {"pads", std::vector<int64_t>{padding[0], padding[1], padding[0], padding[1]}},
          {"dilations", dilation},
          {"group", a.Int("groups")},
          {"output_padding", extra}});
  } else if (name == "max_pool2d" || name == "avg_pool2d") {
    const std::vector<int64_t> padding = a.Ints("padding");
    std::map<std::string, Attribute> attrs = {
        {"kernel_shape", a.Ints("kernel")},
        {"strides", a.Ints("stride")},
        {"pads", std::vector<int64_t>{padding[0], padding[1], padding[0], padding[1]}}};
    if (name == "avg_pool2d") attrs["count_include_pad"] = int64_t{1};
    if (a.Has("dilation")) attrs["dilations"] = a.Ints("dilation");
    e.Op(name == "max_pool2d" ? "MaxPool" : "AveragePool", in, {out[0]}, std::move(attrs));
  } else if (name == "batch_norm_inference") {
    e.Op("BatchNormalization", in, {out[0]}, {{"epsilon", a.Float("eps")}});
  } else if (name == "layer_norm") {
    for (int r = 1; r < node.num_results(); ++r) {
      if (node.result(r)->has_uses()) return Unsupported(node, "its mean or variance is read");
    }
    e.Op("LayerNormalization", in, {out[0]},
         {{"axis", a.Int("axis")}, {"epsilon", a.Float("eps")}});
  } else if (name == "embedding") {
    e.Op("Gather", {in[0], in[1]}, {out[0]}, {{"axis", int64_t{0}}});
  } else if (name == "sdpa") {
    for (int r = 1; r < node.num_results(); ++r) {
      if (node.result(r)->has_uses()) return Unsupported(node, "its log-sum-exp is read");
    }
    const int64_t rank = node.input(1)->type().rank();
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
    std::swap(perm[rank - 1], perm[rank - 2]);
    const DType dtype = node.input(0)->type().dtype;
    std::string scores =
        e.Temp("Mul", {e.Temp("MatMul", {in[0], e.Temp("Transpose", {in[1]}, {{"perm", perm}})}),
                       e.Scalar(a.Float("scale"), dtype)});
    const Shape& q = node.input(0)->type().shape;
    const Shape& k = node.input(1)->type().shape;
    const int64_t s = q[q.size() - 2], t = k[k.size() - 2];
    if (a.Bool("causal")) {
      Tensor keep = Tensor::Empty({s, t}, DType::kBool);
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t j = 0; j < t; ++j) keep.data<bool>()[i * t + j] = j <= i;
      }
      scores = e.Temp("Where", {e.Constant(keep), scores,
                                e.Scalar(-std::numeric_limits<double>::infinity(), dtype)});
    }
    if (node.num_inputs() > 3) {
      scores = node.input(3)->type().dtype == DType::kBool
                   ? e.Temp("Where", {in[3], scores,
                                      e.Scalar(-std::numeric_limits<double>::infinity(), dtype)})
                   : e.Temp("Add", {scores, in[3]});
    }
    e.Op("MatMul", {e.Temp("Softmax", {scores}, {{"axis", int64_t{-1}}}), in[2]}, {out[0]});
  } else {
    return Unsupported(node);
  }
  return absl::OkStatus();
}

ValueInfo InfoOf(const std::string& name, const TensorType& type) {
  ValueInfo info{.name = name, .dtype = type.dtype};
  for (int64_t d : type.shape) info.shape.push_back(Dim{.size = d});
  return info;
}

}  // namespace

absl::StatusOr<std::string> ExportToString(nn::Module& module, const TensorTree& example) {
  const bool training = module.is_training();
  module.eval();
  absl::StatusOr<nn::TracedModule> traced = nn::TraceModule(module, example);
  module.train(training);
  if (!traced.ok()) return traced.status();
  const Graph& graph = traced->program.graph;
  const std::vector<InputDescriptor>& descriptors = traced->program.inputs;
  absl::flat_hash_map<std::string, Tensor> state;
  for (const auto& [name, t] : module.state_dict()) state.emplace(name, t);
  for (const auto& [name, t] : module.named_buffers()) state.emplace(name, t);

  Model model;
  model.opset = kExportOpset;
  Emitter e(model);
  absl::flat_hash_map<const Value*, std::string> names;
  int user_inputs = 0;
  for (const Value* v : graph.placeholders()) {
    if (OnnxTypeOf(v->type().dtype) == 0) {
      return absl::UnimplementedError(
          absl::StrCat("export: ", DTypeName(v->type().dtype), " tensors have no ONNX form here"));
    }
    const InputDescriptor& d = descriptors.at(static_cast<size_t>(v->index()));
    if (HasSymbolic(v->type().shape)) {
      return absl::UnimplementedError("export: symbolic dims are not exported yet");
    }
    switch (d.kind) {
      case InputDescriptor::Kind::kParameter:
      case InputDescriptor::Kind::kBuffer:
        names[v] = d.name;
        model.initializers.emplace_back(d.name, state.at(d.name).detach());
        break;
      case InputDescriptor::Kind::kConstant:
        names[v] = e.Constant(traced->program.constants.at(static_cast<size_t>(d.constant_index)));
        break;
      case InputDescriptor::Kind::kUserInput:
        names[v] = absl::StrCat("input_", user_inputs++);
        model.inputs.push_back(InfoOf(names[v], v->type()));
        break;
      default:
        return absl::UnimplementedError(
            "export: the forward draws random numbers in eval mode; nothing to export them as");
    }
  }
  if (user_inputs == 1) {
    model.inputs[0].name = "input";
    for (auto& [v, n] : names) {
      if (n == "input_0") n = "input";
    }
  }
  for (const tc::Node* node : graph.nodes()) {
    std::vector<std::string> in, out;
    for (const Value* v : node->inputs()) in.push_back(names.at(v));
    for (const Value* v : node->results()) {
      names[v] = absl::StrCat("tensorcut::", v->name());
      out.push_back(names[v]);
    }
    TC_RETURN_IF_ERROR(EmitNode(*node, in, out, e));
  }
  const size_t user_outputs = graph.outputs().size() - traced->mutated_buffers.size();
  for (size_t i = 0; i < user_outputs; ++i) {
    const Value* v = graph.outputs()[i];
    const std::string name = user_outputs == 1 ? "output" : absl::StrCat("output_", i);
    e.Op("Identity", {names.at(v)}, {name});
    model.outputs.push_back(InfoOf(name, v->type()));
  }
  return SerializeModel(model, version());
}

absl::Status Export(nn::Module& module, const TensorTree& example, const std::string& path) {
  TC_ASSIGN_OR_RETURN(const std::string bytes, ExportToString(module, example));
  return WriteAtomically(path, "model", bytes);
}

}  // namespace tc::onnx
