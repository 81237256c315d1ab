#include "nn/recurrent.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nn/init.h"
#include "nn/layer_checks.h"

namespace tc::nn {
namespace {

using internal::PyFloat;
using internal::RequirePositive;
using internal::ThrowInvalid;

// x W^T (+ b) over the last dim, for any leading dims.
Tensor Project(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (b.defined()) return linear(x, w, b);
  return matmul(x, transpose(w, 0, 1));
}

// Gate k of G along dim 1 of [N, G H].
Tensor Gate(const Tensor& gates, int64_t k, int64_t h) {
  return slice(gates, 1, k * h, (k + 1) * h);
}

}  // namespace

RecurrentBase::RecurrentBase(std::string layer, int64_t gates, int64_t states, int64_t input_size,
                             int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first,
                             double dropout, Generator* gen)
    : layer_(std::move(layer)),
      gates_(gates),
      states_(states),
      input_size_(input_size),
      hidden_size_(hidden_size),
      num_layers_(num_layers),
      batch_first_(batch_first),
      dropout_(dropout) {
  RequirePositive(layer_, "input_size", input_size);
  RequirePositive(layer_, "hidden_size", hidden_size);
  RequirePositive(layer_, "num_layers", num_layers);
  if (!(dropout >= 0 && dropout < 1)) {
    ThrowInvalid(absl::StrCat(layer_, ": dropout must be in [0, 1), got ", dropout));
  }
  const double bound = 1 / std::sqrt(static_cast<double>(hidden_size));
  auto make = [&](const std::string& name, std::vector<int64_t> shape) {
    Tensor t = register_parameter(name, tc::empty(shape));
    init::uniform_(t, -bound, bound, gen);
    return t;
  };
  for (int64_t l = 0; l < num_layers; ++l) {
    const int64_t in = l == 0 ? input_size : hidden_size;
    Weights w;
    w.ih = make(absl::StrCat("weight_ih_l", l), {gates * hidden_size, in});
    w.hh = make(absl::StrCat("weight_hh_l", l), {gates * hidden_size, hidden_size});
    if (bias) {
      w.b_ih = make(absl::StrCat("bias_ih_l", l), {gates * hidden_size});
      w.b_hh = make(absl::StrCat("bias_hh_l", l), {gates * hidden_size});
    }
    weights_.push_back(std::move(w));
  }
}

TensorTree RecurrentBase::forward(const TensorTree& input) {
  // x, or (x, h_0) / (x, (h_0, c_0)).
  const bool with_state = !input.is_leaf();
  if (with_state && (input.items().size() != 2 || !input[0].is_leaf())) {
    ThrowInvalid(absl::StrCat(layer_, ": expected input x or (x, ",
                              states_ == 2 ? "(h_0, c_0)" : "h_0", "), got ",
                              input.ToString([](const Tensor& t) { return t.type().ToString(); })));
  }
  Tensor x = with_state ? input[0].leaf() : input.leaf();
  if (x.dim() != 3 || x.size(2) != input_size_ || !IsFloating(x.dtype())) {
    ThrowInvalid(absl::StrCat(layer_, ": expected input ", batch_first_ ? "[N, T, " : "[T, N, ",
                              input_size_, "] of a floating dtype, got ", x.type().ToString()));
  }
  if (batch_first_) x = transpose(x, 0, 1);
  const int64_t steps = x.size(0), batch = x.size(1), h = hidden_size_;
  const Shape state_shape = {num_layers_, batch, h};
  std::vector<Tensor> initial(states_);
  if (with_state) {
    const TensorTree& s = input[1];
    const bool shaped =
        states_ == 1 ? s.is_leaf()
                     : (!s.is_leaf() && s.items().size() == 2 && s[0].is_leaf() && s[1].is_leaf());
    if (shaped) {
      for (int64_t k = 0; k < states_; ++k) initial[k] = states_ == 1 ? s.leaf() : s[k].leaf();
    }
    for (const Tensor& t : initial) {
      if (!shaped || t.shape() != state_shape || t.dtype() != x.dtype()) {
        ThrowInvalid(absl::StrCat(layer_, ": expected initial state ",
                                  states_ == 2 ? "(h_0, c_0), each " : "h_0 ", DTypeName(x.dtype()),
                                  ShapeToString(state_shape), ", got ",
                                  s.ToString([](const Tensor& v) { return v.type().ToString(); })));
      }
    }
  }
  std::vector<std::vector<Tensor>> finals(states_);
  Tensor layer_input = x;
  for (int64_t l = 0; l < num_layers_; ++l) {
    const Weights& w = weights_[l];
    std::vector<Tensor> state(states_);
    for (int64_t k = 0; k < states_; ++k) {
      state[k] = with_state ? reshape(slice(initial[k], 0, l, l + 1), {batch, h})
                            : zeros({batch, h}, x.dtype());
    }
    // Every step's input projection at once: [T, N, G H].
    const Tensor projected = Project(layer_input, w.ih, w.b_ih);
    std::vector<Tensor> outputs;
    for (int64_t t = 0; t < steps; ++t) {
      Step(w, reshape(slice(projected, 0, t, t + 1), {batch, gates_ * h}), state);
      outputs.push_back(reshape(state[0], {1, batch, h}));
    }
    layer_input = concat(outputs, 0);
    if (l + 1 < num_layers_ && is_training() && dropout_ > 0) {
      layer_input = tc::dropout(layer_input, dropout_);
    }
    for (int64_t k = 0; k < states_; ++k) finals[k].push_back(reshape(state[k], {1, batch, h}));
  }
  const Tensor output = batch_first_ ? transpose(layer_input, 0, 1) : layer_input;
  std::vector<TensorTree> last;
  for (const auto& per_layer : finals) last.push_back(TensorTree::MakeLeaf(concat(per_layer, 0)));
  return TensorTree::Tuple(
      {TensorTree::MakeLeaf(output), states_ == 1 ? last[0] : TensorTree::Tuple(std::move(last))});
}

Tensor RecurrentBase::forward(const Tensor& x) {
  return forward(TensorTree::MakeLeaf(x))[0].leaf();
}

std::string RecurrentBase::extra_repr() const {
  std::string s = absl::StrCat(input_size_, ", ", hidden_size_);
  if (num_layers_ != 1) absl::StrAppend(&s, ", num_layers=", num_layers_);
  if (!weights_[0].b_ih.defined()) absl::StrAppend(&s, ", bias=False");
  if (batch_first_) absl::StrAppend(&s, ", batch_first=True");
  if (dropout_ != 0) absl::StrAppend(&s, ", dropout=", PyFloat(dropout_));
  return s;
}

void LSTM::Step(const Weights& w, const Tensor& projected, std::vector<Tensor>& state) const {
  const int64_t h = hidden_size();
  const Tensor gates = projected + Project(state[0], w.hh, w.b_hh);
  const Tensor i = sigmoid(Gate(gates, 0, h)), f = sigmoid(Gate(gates, 1, h));
  const Tensor g = tanh(Gate(gates, 2, h)), o = sigmoid(Gate(gates, 3, h));
  state[1] = f * state[1] + i * g;
  state[0] = o * tanh(state[1]);
}

void GRU::Step(const Weights& w, const Tensor& projected, std::vector<Tensor>& state) const {
  const int64_t h = hidden_size();
  const Tensor hidden = Project(state[0], w.hh, w.b_hh);
  const Tensor r = sigmoid(Gate(projected, 0, h) + Gate(hidden, 0, h));
  const Tensor z = sigmoid(Gate(projected, 1, h) + Gate(hidden, 1, h));
  const Tensor n = tanh(Gate(projected, 2, h) + r * Gate(hidden, 2, h));
  state[0] = (1.0 - z) * n + z * state[0];
}

}  // namespace tc::nn
