// Each ONNX operator as tensorcut ops, following the ONNX operator specs for
// opsets 13 to 17; where PyTorch and the spec differ (a running variance
// updated with the unbiased batch variance), PyTorch's behaviour is kept,
// since that is what an exported model was trained with.
#include "nn/onnx/operators.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/symbolic.h"
#include "nn/activations.h"
#include "nn/module.h"
#include "nn/pooling.h"
#include "runtime/autograd_meta.h"
#include "runtime/ops.h"

namespace tc::onnx {
namespace {

using Outputs = std::vector<Tensor>;

int64_t Axis(const NodeCall& call, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    call.Fail(absl::StrCat("axis ", axis, " is outside a rank-", rank, " input"));
  }
  return axis < 0 ? axis + rank : axis;
}

// ---- elementwise

template <Tensor (*F)(const Tensor&, const Tensor&)>
Outputs Binary(const NodeCall& call) {
  const Tensor &a = call.input(0), &b = call.input(1);
  if (a.dtype() != b.dtype()) {
    call.Fail(absl::StrCat("inputs must have one type, got ", a.type().ToString(), " and ",
                           b.type().ToString()));
  }
  return {F(a, b)};
}

template <Tensor (*F)(const Tensor&)>
Outputs Unary(const NodeCall& call) {
  return {F(call.input(0))};
}

Outputs Identity(const NodeCall& call) { return {call.input(0)}; }

Outputs Reciprocal(const NodeCall& call) { return {1.0 / call.input(0)}; }

// Max and Min of two inputs (the variadic forms' common case).
template <Tensor (*F)(const Tensor&, const Tensor&)>
Outputs Extreme(const NodeCall& call) {
  if (call.node().inputs.size() != 2) call.Fail("only two inputs are supported");
  return Binary<F>(call);
}

Outputs Pow(const NodeCall& call) { return {pow(call.input(0), call.constant_scalar(1))}; }

Outputs LeakyRelu(const NodeCall& call) {
  return {nn::leaky_relu(call.input(0), call.attr_float("alpha", 0.01))};
}

Outputs Softmax(const NodeCall& call) {
  const Tensor& x = call.input(0);
  return {softmax(x, Axis(call, call.attr_int("axis", -1), x.dim()))};
}

Outputs LogSoftmax(const NodeCall& call) {
  const Tensor& x = call.input(0);
  return {log_softmax(x, Axis(call, call.attr_int("axis", -1), x.dim()))};
}

// ---- products

Outputs Gemm(const NodeCall& call) {
  Tensor a = call.input(0), b = call.input(1);
  if (a.dim() != 2 || b.dim() != 2) {
    call.Fail(absl::StrCat("A and B must be 2-d, got ", a.type().ToString(), " and ",
                           b.type().ToString()));
  }
  const double alpha = call.attr_float("alpha", 1), beta = call.attr_float("beta", 1);
  if (call.attr_int("transA", 0) != 0) a = transpose(a, 0, 1);
  const bool trans_b = call.attr_int("transB", 0) != 0;
  // PyTorch's Linear exports as Gemm with transB = 1: linear() is its product.
  Tensor y = trans_b ? linear(a, b) : matmul(a, b);
  if (alpha != 1) y = y * alpha;
  if (call.has_input(2) && beta != 0) y = y + (beta == 1 ? call.input(2) : call.input(2) * beta);
  return {y};
}

Outputs MatMul(const NodeCall& call) { return {matmul(call.input(0), call.input(1))}; }

// ---- convolution and pooling (2-d)

// pads [top, left, bottom, right] as symmetric padding; auto_pad only NOTSET
// or VALID (no padding).
std::array<int64_t, 2> Padding(const NodeCall& call) {
  const std::string auto_pad = call.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    call.Fail(absl::StrCat("auto_pad ", auto_pad, " is not supported (NOTSET and VALID are)"));
  }
  const std::vector<int64_t> pads = call.attr_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) {
    call.Fail(absl::StrCat("pads [", absl::StrJoin(pads, ","),
                           "] must be 4 values, the same at both ends of each dim"));
  }
  return {pads[0], pads[1]};
}

std::array<int64_t, 2> Pair(const NodeCall& call, absl::string_view name) {
  const std::vector<int64_t> v = call.attr_ints(name, {1, 1});
  if (v.size() != 2) {
    call.Fail(absl::StrCat(name, " [", absl::StrJoin(v, ","), "] must be 2 values (2-d only)"));
  }
  return {v[0], v[1]};
}

void Require4d(const NodeCall& call, const Tensor& x) {
  if (x.dim() != 4) {
    call.Fail(absl::StrCat("only 2-d spatial inputs [N, C, H, W] are supported, got ",
                           x.type().ToString()));
  }
}

Outputs Conv(const NodeCall& call) {
  const Tensor &x = call.input(0), &w = call.input(1);
  Require4d(call, x);
  const Conv2dOptions options{.stride = Pair(call, "strides"),
                              .padding = Padding(call),
                              .dilation = Pair(call, "dilations"),
                              .groups = call.attr_int("group", 1)};
  return {call.has_input(2) ? conv2d(x, w, call.input(2), options) : conv2d(x, w, options)};
}

// The transposed convolution is the data gradient of the convolution whose
// weight this is, [C_in, C_out / group, kH, kW], as nn::ConvTranspose2d.
Outputs ConvTranspose(const NodeCall& call) {
  const Tensor &x = call.input(0), &w = call.input(1);
  Require4d(call, x);
  if (w.dim() != 4)
    call.Fail(absl::StrCat("W must be [C, M / group, kH, kW], got ", w.type().ToString()));
  if (IsSymbolic(x.size(2)) || IsSymbolic(x.size(3))) call.Fail("spatial dims must be fixed");
  if (call.node().attributes.count("output_shape") != 0) call.Fail("output_shape is not supported");
  const Conv2dOptions options{.stride = Pair(call, "strides"),
                              .padding = Padding(call),
                              .dilation = Pair(call, "dilations"),
                              .groups = call.attr_int("group", 1)};
  const std::vector<int64_t> extra = call.attr_ints("output_padding", {0, 0});
  if (extra.size() != 2) call.Fail("output_padding must be 2 values");
  std::vector<int64_t> out_shape = {x.size(0), w.size(1) * options.groups, 0, 0};
  for (int d = 0; d < 2; ++d) {
    out_shape[2 + d] = (x.size(2 + d) - 1) * options.stride[d] - 2 * options.padding[d] +
                       options.dilation[d] * (w.size(2 + d) - 1) + extra[d] + 1;
  }
  Tensor y = conv2d_backward_data(x, w, out_shape, options);
  if (call.has_input(2)) y = y + reshape(call.input(2), {1, -1, 1, 1});
  return {y};
}

// The window a pooling node reads, as nn::MaxPool2d and nn::AvgPool2d take it.
struct Window {
  nn::IntPair kernel, stride, padding;
  bool ceil_mode;
};

Window PoolWindow(const NodeCall& call) {
  const std::vector<int64_t> kernel = call.attr_ints("kernel_shape", {});
  if (kernel.size() != 2) {
    call.Fail(absl::StrCat("kernel_shape [", absl::StrJoin(kernel, ","), "] must be 2 values"));
  }
  const std::array<int64_t, 2> stride = Pair(call, "strides"), padding = Padding(call);
  return {{kernel[0], kernel[1]},
          {stride[0], stride[1]},
          {padding[0], padding[1]},
          call.attr_int("ceil_mode", 0) != 0};
}

Outputs MaxPool(const NodeCall& call) {
  Require4d(call, call.input(0));
  if (call.attr_int("storage_order", 0) != 0) call.Fail("storage_order 1 is not supported");
  const Window w = PoolWindow(call);
  const std::array<int64_t, 2> dilation = Pair(call, "dilations");
  return {nn::max_pool2d(call.input(0), {.kernel_size = w.kernel,
                                         .stride = w.stride,
                                         .padding = w.padding,
                                         .dilation = {dilation[0], dilation[1]},
                                         .ceil_mode = w.ceil_mode})};
}

Outputs AveragePool(const NodeCall& call) {
  Require4d(call, call.input(0));
  const Window w = PoolWindow(call);
  const bool count_include_pad = call.attr_int("count_include_pad", 0) != 0;
  return {nn::AvgPool2d(w.kernel, w.stride, w.padding, w.ceil_mode, count_include_pad)
              .forward(call.input(0))};
}

Outputs GlobalAveragePool(const NodeCall& call) {
  const Tensor& x = call.input(0);
  if (x.dim() < 3) call.Fail(absl::StrCat("expected [N, C, ...], got ", x.type().ToString()));
  std::vector<int64_t> spatial;
  for (int64_t d = 2; d < x.dim(); ++d) spatial.push_back(d);
  return {mean(x, spatial, /*keepdim=*/true)};
}

// ---- normalization and dropout

// Running statistics are updated in place (the inputs are the module's
// buffers) in training, with PyTorch's unbiased batch variance.
Outputs BatchNormalization(const NodeCall& call) {
  const Tensor& x = call.input(0);
  const Tensor &scale = call.input(1), &bias = call.input(2);
  const Tensor &running_mean = call.input(3), &running_var = call.input(4);
  const double eps = call.attr_float("epsilon", 1e-5);
  const double momentum = call.attr_float("momentum", 0.9);
  // Training-mode nodes: opset 13's extra outputs, training_mode from 14.
  const bool exported_for_training =
      call.opset() >= 14 ? call.attr_int("training_mode", 0) != 0 : call.node().outputs.size() > 1;
  if (x.dim() < 2 || x.dim() > 4) {
    call.Fail(
        absl::StrCat("expected [N, C], [N, C, L] or [N, C, H, W], got ", x.type().ToString()));
  }
  std::vector<int64_t> shape(x.shape().begin(), x.shape().end());
  const Tensor x4 =
      x.dim() == 4 ? x : reshape(x, {x.size(0), x.size(1), x.dim() == 3 ? x.size(2) : 1, 1});
  auto back = [&](const Tensor& y) { return x.dim() == 4 ? y : reshape(y, shape); };
  if (!(exported_for_training && call.training())) {
    const Tensor y = back(batch_norm_inference(x4, scale, bias, running_mean, running_var, eps));
    return {y, running_mean, running_var};
  }
  const std::optional<int64_t> per_channel =
      x4.size(1) == 0 ? std::nullopt : DimDivide(x4.numel(), x4.size(1));
  if (!per_channel.has_value() || (!IsSymbolic(*per_channel) && *per_channel < 2)) {
    call.Fail(absl::StrCat("expected more than 1 value per channel in training, got ",
                           x.type().ToString()));
  }
  NormResult r = batch_norm(x4, scale, bias, eps);
  {
    NoGradGuard no_grad;
    const int64_t n = *per_channel;
    const Tensor unbiased =
        IsSymbolic(n) ? r.var * size_scalar(n, x.dtype()) / size_scalar(DimSub(n, 1), x.dtype())
                      : r.var * (static_cast<double>(n) / static_cast<double>(n - 1));
    nn::AssignInPlace(running_mean, running_mean * momentum + r.mean * (1 - momentum));
    nn::AssignInPlace(running_var, running_var * momentum + unbiased * (1 - momentum));
  }
  return {back(r.y), running_mean, running_var};
}

Outputs Dropout(const NodeCall& call) {
  const Tensor& x = call.input(0);
  const double ratio = call.has_input(1) ? call.constant_scalar(1) : 0.5;
  const bool training_mode = call.has_input(2) && call.constant_scalar(2) != 0;
  if (!(training_mode && call.training()) || ratio == 0) return {x};
  if (!(ratio > 0 && ratio < 1)) call.Fail(absl::StrCat("ratio ", ratio, " is outside [0, 1)"));
  return {dropout(x, ratio)};
}

// ---- recurrent

// One direction of an LSTM over x [T, N, I] from h, c [N, H]: the outputs
// [T, N, H] (in x's order) and the last h and c. ONNX's gate order is
// input, output, forget, cell.
struct LstmRun {
  Tensor y, h, c;
};

LstmRun LstmDirection(const Tensor& x, const Tensor& w, const Tensor& r, const Tensor& bias,
                      Tensor h, Tensor c, bool reverse) {
  const int64_t steps = x.size(0), hidden = r.size(1);
  const Tensor projected = matmul(x, transpose(w, 0, 1)) + bias;  // [T, N, 4H]
  const Tensor r_t = transpose(r, 0, 1);
  std::vector<Tensor> outputs(static_cast<size_t>(steps));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = reverse ? steps - 1 - s : s;
    const Tensor gates = select(projected, 0, t) + matmul(h, r_t);
    auto gate = [&](int64_t k) { return slice(gates, 1, k * hidden, (k + 1) * hidden); };
    c = sigmoid(gate(2)) * c + sigmoid(gate(0)) * tanh(gate(3));
    h = sigmoid(gate(1)) * tanh(c);
    outputs[static_cast<size_t>(t)] = h;
  }
  return {stack(outputs, 0), h, c};
}

Outputs Lstm(const NodeCall& call) {
  if (call.has_input(4)) call.Fail("sequence_lens is not supported (all sequences full length)");
  if (call.has_input(7)) call.Fail("peephole weights (P) are not supported");
  if (call.attr_int("input_forget", 0) != 0) call.Fail("input_forget 1 is not supported");
  const auto& attributes = call.node().attributes;
  for (const char* name : {"clip", "activations", "activation_alpha", "activation_beta"}) {
    if (attributes.count(name) != 0) {
      call.Fail(absl::StrCat(name, " is not supported (sigmoid, tanh, tanh without clipping)"));
    }
  }
  const bool batch_first = call.attr_int("layout", 0) != 0;
  const Tensor x = batch_first ? transpose(call.input(0), 0, 1) : call.input(0);
  const Tensor &w = call.input(1), &r = call.input(2);
  const std::string direction = call.attr_string("direction", "forward");
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    call.Fail(absl::StrCat("direction '", direction,
                           "' is not one of forward, reverse, "
                           "bidirectional"));
  }
  if (x.dim() != 3 || w.dim() != 3 || r.dim() != 3) {
    call.Fail(absl::StrCat("X, W and R must be 3-d, got ", x.type().ToString(), ", ",
                           w.type().ToString(), ", ", r.type().ToString()));
  }
  const int64_t hidden = call.attr_int("hidden_size", r.size(2));
  if (w.size(0) != directions || w.size(1) != 4 * hidden || r.size(1) != 4 * hidden ||
      r.size(2) != hidden) {
    call.Fail(absl::StrCat("expected X [T, N, I], W [", directions, ", ", 4 * hidden, ", I], R [",
                           directions, ", ", 4 * hidden, ", ", hidden, "], got ",
                           x.type().ToString(), ", ", w.type().ToString(), ", ",
                           r.type().ToString()));
  }
  if (IsSymbolic(x.size(0))) call.Fail("the sequence length must be fixed, not a symbol");
  // Initial states are [dirs, N, H], or [N, dirs, H] batch first.
  const Tensor zero_state = zeros({directions, x.size(1), hidden}, x.dtype());
  auto state = [&](size_t i) {
    if (!call.has_input(i)) return zero_state;
    const Tensor& s = call.input(i);
    if (s.dim() != 3)
      call.Fail(absl::StrCat("initial states must be 3-d, got ", s.type().ToString()));
    return batch_first ? transpose(s, 0, 1) : s;
  };
  const Tensor h0 = state(5), c0 = state(6);
  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < directions; ++d) {
    Tensor bias = zeros({4 * hidden}, x.dtype());
    if (call.has_input(3)) {
      const Tensor b = select(call.input(3), 0, d);  // [8H]: W's bias, then R's
      bias = slice(b, 0, 0, 4 * hidden) + slice(b, 0, 4 * hidden, 8 * hidden);
    }
    const LstmRun run = LstmDirection(x, select(w, 0, d), select(r, 0, d), bias, select(h0, 0, d),
                                      select(c0, 0, d), direction == "reverse" || d == 1);
    ys.push_back(run.y);
    hs.push_back(run.h);
    cs.push_back(run.c);
  }
  const Tensor y = stack(ys, 1);  // [T, dirs, N, H]
  if (!batch_first) return {y, stack(hs, 0), stack(cs, 0)};
  return {permute(y, {2, 0, 1, 3}), stack(hs, 1), stack(cs, 1)};  // [N, T, dirs, H], [N, dirs, H]
}

// ---- layout

Outputs Flatten(const NodeCall& call) {
  const Tensor& x = call.input(0);
  const int64_t axis = call.attr_int("axis", 1);
  if (axis < -x.dim() || axis > x.dim()) {
    call.Fail(absl::StrCat("axis ", axis, " is outside a rank-", x.dim(), " input"));
  }
  const int64_t a = axis < 0 ? axis + x.dim() : axis;
  int64_t inner = 1;
  for (int64_t d = a; d < x.dim(); ++d) inner = DimMul(inner, x.size(d));
  return {reshape(x, {-1, inner})};
}

Outputs Reshape(const NodeCall& call) {
  const Tensor& x = call.input(0);
  std::vector<int64_t> shape = call.constant_ints(1);
  const bool allow_zero = call.attr_int("allowzero", 0) != 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allow_zero) {
      if (static_cast<int64_t>(d) >= x.dim()) {
        call.Fail(absl::StrCat("shape dim ", d, " is 0 (copy the input's) but the input is ",
                               x.type().ToString()));
      }
      shape[d] = x.size(static_cast<int64_t>(d));
    }
  }
  return {reshape(x, shape)};
}

Outputs Transpose(const NodeCall& call) {
  const Tensor& x = call.input(0);
  std::vector<int64_t> reversed(static_cast<size_t>(x.dim()));
  for (int64_t d = 0; d < x.dim(); ++d) reversed[static_cast<size_t>(d)] = x.dim() - 1 - d;
  return {permute(x, call.attr_ints("perm", reversed))};
}

Outputs Concat(const NodeCall& call) {
  std::vector<Tensor> parts;
  for (size_t i = 0; i < call.node().inputs.size(); ++i) parts.push_back(call.input(i));
  if (parts.empty()) call.Fail("expected at least one input");
  return {concat(parts, Axis(call, call.attr_int("axis", 0), parts[0].dim()))};
}

Outputs Unsqueeze(const NodeCall& call) {
  Tensor x = call.input(0);
  std::vector<int64_t> axes = call.constant_ints(1);
  const int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  for (int64_t& a : axes) a = Axis(call, a, rank);
  absl::c_sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) call.Fail("axes repeat");
  for (int64_t a : axes) x = unsqueeze(x, a);
  return {x};
}

Outputs Squeeze(const NodeCall& call) {
  Tensor x = call.input(0);
  if (!call.has_input(1)) return {squeeze(x)};
  std::vector<int64_t> axes = call.constant_ints(1);
  for (int64_t& a : axes) a = Axis(call, a, x.dim());
  absl::c_sort(axes, std::greater<>());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) call.Fail("axes repeat");
  for (int64_t a : axes) {
    if (x.size(a) != 1) call.Fail(absl::StrCat("axis ", a, " has size ", x.size(a), ", not 1"));
    x = squeeze(x, a);
  }
  return {x};
}

Outputs Constant(const NodeCall& call) {
  const auto& attributes = call.node().attributes;
  if (attributes.size() != 1) call.Fail("expected exactly one value attribute");
  const auto& [name, value] = *attributes.begin();
  if (const Tensor* t = std::get_if<Tensor>(&value); t != nullptr && name == "value") return {*t};
  if (const double* f = std::get_if<double>(&value); f != nullptr && name == "value_float") {
    return {scalar(*f)};
  }
  if (const int64_t* i = std::get_if<int64_t>(&value); i != nullptr && name == "value_int") {
    return {from_vector<int64_t>({*i}, {})};
  }
  if (const auto* v = std::get_if<std::vector<int64_t>>(&value); v && name == "value_ints") {
    return {from_vector(*v, {static_cast<int64_t>(v->size())})};
  }
  if (const auto* v = std::get_if<std::vector<double>>(&value); v && name == "value_floats") {
    return {cast(from_vector(*v, {static_cast<int64_t>(v->size())}), DType::kF32)};
  }
  call.Fail(absl::StrCat("attribute '", name, "' of the wrong type"));
}

// ---- reductions

Outputs Reduce(const NodeCall& call, std::vector<int64_t> axes) {
  const Tensor& x = call.input(0);
  const bool keepdims = call.attr_int("keepdims", 1) != 0;
  if (axes.empty()) {
    if (call.attr_int("noop_with_empty_axes", 0) != 0) return {x};
    for (int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
  }
  for (int64_t& a : axes) a = Axis(call, a, x.dim());
  const std::string& op = call.node().op_type;
  if (op == "ReduceMean") return {mean(x, axes, keepdims)};
  if (op == "ReduceMax") return {max(x, axes, keepdims)};
  if (op == "ReduceMin") return {min(x, axes, keepdims)};
  return {sum(x, axes, keepdims)};
}

Outputs ArgMax(const NodeCall& call) {
  const Tensor& x = call.input(0);
  if (call.attr_int("select_last_index", 0) != 0) call.Fail("select_last_index 1 is not supported");
  return {
      argmax(x, Axis(call, call.attr_int("axis", 0), x.dim()), call.attr_int("keepdims", 1) != 0)};
}

// Constant padding; pads [x1_begin, x2_begin, ..., x1_end, x2_end, ...].
Outputs Pad(const NodeCall& call) {
  const Tensor& x = call.input(0);
  if (call.attr_string("mode", "constant") != "constant")
    call.Fail("only mode constant is supported");
  if (call.has_input(3)) call.Fail("the axes input is not supported");
  const std::vector<int64_t> pads = call.constant_ints(1);
  const size_t rank = static_cast<size_t>(x.dim());
  if (pads.size() != 2 * rank) {
    call.Fail(absl::StrCat("pads has ", pads.size(), " values for a rank-", rank, " input"));
  }
  std::vector<int64_t> pairs;
  for (size_t d = 0; d < rank; ++d) {
    pairs.push_back(pads[d]);
    pairs.push_back(pads[rank + d]);
  }
  return {pad(x, pairs, call.has_input(2) ? call.constant_scalar(2) : 0.0)};
}

// Opset 13: ReduceMean's, ReduceMax's and ReduceMin's axes are an
// attribute, ReduceSum's an input.
Outputs ReduceMean(const NodeCall& call) { return Reduce(call, call.attr_ints("axes", {})); }
Outputs ReduceSum(const NodeCall& call) {
  return Reduce(call, call.has_input(1) ? call.constant_ints(1) : std::vector<int64_t>{});
}

// ---- indexing, types and broadcasting

DType DTypeOfOnnx(const NodeCall& call, int64_t onnx_type) {
  switch (onnx_type) {
    case 1:
      return DType::kF32;
    case 11:
      return DType::kF64;
    case 6:
    case 7:
      return DType::kI64;
    case 9:
      return DType::kBool;
    default:
      call.Fail(absl::StrCat("casting to ", OnnxTypeName(static_cast<int32_t>(onnx_type)),
                             " is not supported (FLOAT, DOUBLE, INT32, INT64 and BOOL are)"));
  }
}

Outputs Cast(const NodeCall& call) {
  return {cast(call.input(0), DTypeOfOnnx(call, call.attr_int("to", 0)))};
}

// Known indices pick slices (select); indices computed by the graph gather
// rows along axis 0 (embedding).
Outputs Gather(const NodeCall& call) {
  const Tensor& data = call.input(0);
  const int64_t axis = Axis(call, call.attr_int("axis", 0), data.dim());
  const int64_t size = data.size(axis);
  if (const IntValue* known = call.known_ints(1); known != nullptr) {
    std::vector<Tensor> picked;
    for (int64_t i : known->values) {
      if (IsSymbolic(size) || i < -size || i >= size) {
        call.Fail(absl::StrCat("index ", i, " is outside a dim of size ", size));
      }
      picked.push_back(select(data, axis, i < 0 ? i + size : i));
    }
    if (picked.empty()) call.Fail("an empty list of indices is not supported");
    return {known->scalar ? picked[0] : stack(picked, axis)};
  }
  const Tensor& indices = call.input(1);
  if (axis != 0 || indices.dtype() != DType::kI64) {
    call.Fail("indices computed by the graph must be integers gathering along axis 0");
  }
  if (IsSymbolic(size)) call.Fail("gathering along a symbolic dim is not supported");
  // Negative indices count from the end, as ONNX's.
  const Tensor wrapped = where(lt(indices, scalar(0, DType::kI64)),
                               indices + scalar(static_cast<double>(size), DType::kI64), indices);
  std::vector<int64_t> rest(data.shape().begin() + 1, data.shape().end());
  int64_t row = 1;
  for (int64_t d : rest) row = DimMul(row, d);
  std::vector<int64_t> shape(indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), rest.begin(), rest.end());
  return {reshape(embedding(reshape(data, {size, row}), wrapped), shape)};
}

Outputs Slice(const NodeCall& call) {
  Tensor x = call.input(0);
  const std::vector<int64_t> starts = call.constant_ints(1), ends = call.constant_ints(2);
  std::vector<int64_t> axes(starts.size()), steps(starts.size(), 1);
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (call.has_input(3)) axes = call.constant_ints(3);
  if (call.has_input(4)) steps = call.constant_ints(4);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    call.Fail("starts, ends, axes and steps must have one length");
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = Axis(call, axes[i], x.dim());
    const int64_t size = x.size(axis);
    if (steps[i] < 1) call.Fail(absl::StrCat("step ", steps[i], " is not supported (only >= 1)"));
    // INT64_MAX and beyond mean "to the end"; negatives count from it.
    auto bound = [&](int64_t v) {
      if (v < 0) return IsSymbolic(size) ? v : std::max<int64_t>(v + size, 0);
      return IsSymbolic(size) || v < size ? v : size;
    };
    const int64_t begin = bound(starts[i]);
    const int64_t end = ends[i] >= std::numeric_limits<int32_t>::max() ? size : bound(ends[i]);
    x = slice(x, axis, begin, end, steps[i]);
  }
  return {x};
}

Outputs Split(const NodeCall& call) {
  const Tensor& x = call.input(0);
  const int64_t axis = Axis(call, call.attr_int("axis", 0), x.dim());
  const int64_t size = x.size(axis);
  const int64_t parts = static_cast<int64_t>(call.node().outputs.size());
  if (parts == 0) call.Fail("expected at least one output");
  std::vector<int64_t> lengths = call.has_input(1) ? call.constant_ints(1) : std::vector<int64_t>{};
  if (call.has_input(1) && static_cast<int64_t>(lengths.size()) != parts) {
    call.Fail(absl::StrCat("split has ", lengths.size(), " lengths for ", parts, " outputs"));
  }
  if (absl::c_any_of(lengths, [](int64_t l) { return l < 0; })) {
    call.Fail("split lengths must not be negative");
  }
  if (lengths.empty()) {
    if (IsSymbolic(size) || size % parts != 0) {
      call.Fail(absl::StrCat("a dim of size ", size, " does not split into ", parts, " parts"));
    }
    lengths.assign(static_cast<size_t>(parts), size / parts);
  }
  Outputs out;
  int64_t begin = 0;
  for (int64_t length : lengths) {
    out.push_back(slice(x, axis, begin, begin + length));
    begin += length;
  }
  if (begin != size) {
    call.Fail(absl::StrCat("split lengths add up to ", begin, ", the dim has ", size));
  }
  return out;
}

// ONNX's Expand broadcasts both ways: a 1 in the shape keeps the input's dim.
Outputs Expand(const NodeCall& call) {
  Tensor x = call.input(0);
  std::vector<int64_t> shape = call.constant_ints(1);
  const size_t rank = std::max<size_t>(shape.size(), static_cast<size_t>(x.dim()));
  shape.insert(shape.begin(), rank - shape.size(), 1);
  std::vector<int64_t> given(x.shape().begin(), x.shape().end());
  given.insert(given.begin(), rank - given.size(), 1);
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] == 1) {
      shape[d] = given[d];
    } else if (given[d] != 1 && given[d] != shape[d]) {
      call.Fail(absl::StrCat("dim ", d, " of size ", given[d], " cannot expand to ", shape[d]));
    }
  }
  return {expand(reshape(x, given), shape)};
}

Outputs ConstantOfShape(const NodeCall& call) {
  const std::vector<int64_t> shape = call.constant_ints(0);
  const auto it = call.node().attributes.find("value");
  if (it == call.node().attributes.end()) return {zeros(shape)};
  const Tensor* value = std::get_if<Tensor>(&it->second);
  if (value == nullptr || value->numel() != 1) call.Fail("value must be a one-element tensor");
  return {full(shape, value->to_vector<double>()[0], value->dtype())};
}

// Shape always runs as shape arithmetic; as a tensor, its dims. Shape
// arithmetic declines a node without its input, which is refused here.
Outputs Shape(const NodeCall& call) {
  const std::optional<std::vector<IntValue>> dims = EvaluateShapeArithmetic(call);
  if (!dims.has_value() || dims->empty()) {
    call.Fail("expected one input, the tensor whose shape it gives");
  }
  return {Materialize(dims->front())};
}

Outputs Where(const NodeCall& call) { return {where(call.input(0), call.input(1), call.input(2))}; }

// Between min and max (inputs, each optional); the gradient passes where x is
// inside, bounds included, as PyTorch's clamp.
Outputs Clip(const NodeCall& call) {
  Tensor x = call.input(0);
  if (call.has_input(1)) {
    const Tensor low = full({}, call.constant_scalar(1), x.dtype());
    x = where(lt(x, low), low, x);
  }
  if (call.has_input(2)) {
    const Tensor high = full({}, call.constant_scalar(2), x.dtype());
    x = where(gt(x, high), high, x);
  }
  return {x};
}

Outputs LayerNormalization(const NodeCall& call) {
  const Tensor& x = call.input(0);
  const int64_t axis = Axis(call, call.attr_int("axis", -1), x.dim());
  const Tensor& scale = call.input(1);
  const Tensor bias = call.has_input(2) ? call.input(2) : zeros(scale.shape(), scale.dtype());
  return {layer_norm(x, scale, bias, axis, call.attr_float("epsilon", 1e-5)).y};
}

const std::vector<Operator>& Table() {
  static const auto* table = new std::vector<Operator>{
      {"Abs", {}, Unary<abs>},
      {"ArgMax", {"axis", "keepdims", "select_last_index"}, ArgMax},
      {"Add", {}, Binary<add>},
      {"AveragePool",
       {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"},
       AveragePool},
      {"BatchNormalization", {"epsilon", "momentum", "training_mode"}, BatchNormalization},
      {"Cast", {"to"}, Cast},
      {"Clip", {}, Clip},
      {"Concat", {"axis"}, Concat},
      {"Constant", {"value", "value_float", "value_floats", "value_int", "value_ints"}, Constant},
      {"ConstantOfShape", {"value"}, ConstantOfShape},
      {"Conv", {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}, Conv},
      {"ConvTranspose",
       {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads",
        "strides"},
       ConvTranspose},
      {"Div", {}, Binary<div>},
      {"Dropout", {}, Dropout},
      {"Equal", {}, Binary<eq>},
      {"Erf", {}, Unary<erf>},
      {"Exp", {}, Unary<exp>},
      {"Expand", {}, Expand},
      {"Flatten", {"axis"}, Flatten},
      {"Gather", {"axis"}, Gather},
      {"Gemm", {"alpha", "beta", "transA", "transB"}, Gemm},
      {"GlobalAveragePool", {}, GlobalAveragePool},
      {"Greater", {}, Binary<gt>},
      {"GreaterOrEqual", {}, Binary<ge>},
      {"Identity", {}, Identity},
      {"LSTM",
       {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size",
        "input_forget", "layout"},
       Lstm},
      {"LayerNormalization", {"axis", "epsilon"}, LayerNormalization},
      {"LeakyRelu", {"alpha"}, LeakyRelu},
      {"Less", {}, Binary<lt>},
      {"LessOrEqual", {}, Binary<le>},
      {"Log", {}, Unary<log>},
      {"LogSoftmax", {"axis"}, LogSoftmax},
      {"MatMul", {}, MatMul},
      {"Max", {}, Extreme<maximum>},
      {"MaxPool",
       {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"},
       MaxPool},
      {"Min", {}, Extreme<minimum>},
      {"Mul", {}, Binary<mul>},
      {"Neg", {}, Unary<neg>},
      {"Pad", {"mode"}, Pad},
      {"Pow", {}, Pow},
      {"Reciprocal", {}, Reciprocal},
      {"ReduceMax", {"axes", "keepdims"}, ReduceMean},
      {"ReduceMean", {"axes", "keepdims"}, ReduceMean},
      {"ReduceMin", {"axes", "keepdims"}, ReduceMean},
      {"ReduceSum", {"keepdims", "noop_with_empty_axes"}, ReduceSum},
      {"Relu", {}, Unary<relu>},
      {"Reshape", {"allowzero"}, Reshape},
      {"Shape", {"end", "start"}, Shape},
      {"Sigmoid", {}, Unary<sigmoid>},
      {"Sign", {}, Unary<sign>},
      {"Slice", {}, Slice},
      {"Softmax", {"axis"}, Softmax},
      {"Split", {"axis"}, Split},
      {"Sqrt", {}, Unary<sqrt>},
      {"Squeeze", {}, Squeeze},
      {"Sub", {}, Binary<sub>},
      {"Tanh", {}, Unary<tanh>},
      {"Transpose", {"perm"}, Transpose},
      {"Unsqueeze", {}, Unsqueeze},
      {"Where", {}, Where},
  };
  return *table;
}

}  // namespace

const Operator* FindOperator(absl::string_view op_type) {
  for (const Operator& op : Table()) {
    if (op.op_type == op_type) return &op;
  }
  return nullptr;
}

std::vector<std::string> SupportedOperators() {
  std::vector<std::string> names;
  for (const Operator& op : Table()) names.emplace_back(op.op_type);
  absl::c_sort(names);
  return names;
}

}  // namespace tc::onnx
