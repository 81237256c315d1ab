// LSTM and GRU: PyTorch's parameter names, shapes and initialisation, a
// hand-worked step, the cells written out step by step, gradients against
// finite differences, the compiled function against eager, errors.
#include "nn/recurrent.h"

#include <cmath>

#include "catch2/catch.hpp"
#include "tests/nn/layer_check.h"
#include "tests/nn/nn_test_util.h"

namespace tc {
namespace {

using testing::Names;
using testing::Random;

template <typename M, typename... Args>
testing::ModuleFactory Factory(Args... args) {
  return [=] {
    Generator gen(3);
    auto m = std::make_shared<M>(args..., &gen);
    m->to(DType::kF64);
    return m;
  };
}

TEST_CASE("LSTM and GRU have PyTorch's parameters per layer") {
  nn::LSTM lstm(3, 4, 2);
  CHECK(Names(lstm.named_parameters()) ==
        std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                 "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"});
  CHECK(lstm.named_parameters()[0].second.shape() == Shape{16, 3});
  CHECK(lstm.named_parameters()[4].second.shape() == Shape{16, 4});
  nn::GRU gru(3, 5, 1, /*bias=*/false);
  CHECK(Names(gru.named_parameters()) == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0"});
  CHECK(gru.named_parameters()[1].second.shape() == Shape{15, 5});
  // U(-1/sqrt(H), 1/sqrt(H)).
  const std::vector<float> w = lstm.named_parameters()[1].second.to_vector<float>();
  CHECK(*std::max_element(w.begin(), w.end()) <= 0.5f);
  CHECK(*std::min_element(w.begin(), w.end()) >= -0.5f);
  CHECK(lstm.ToString() == "LSTM(3, 4, num_layers=2)");
  CHECK(gru.ToString() == "GRU(3, 5, bias=False)");
}

TEST_CASE("one LSTM step by hand") {
  nn::LSTM lstm(1, 1);
  for (const auto& [name, p] : lstm.named_parameters()) nn::CopyValues(p, zeros(p.shape()));
  // Only the cell gate g reads the input: i = f = o = sigmoid(0) = 1/2.
  nn::CopyValues(lstm.named_parameters()[0].second, from_vector<float>({0, 0, 1, 0}, {4, 1}));
  const TensorTree out = lstm(TensorTree::MakeLeaf(from_vector<float>({2}, {1, 1, 1})));
  const double c = 0.5 * std::tanh(2.0), h = 0.5 * std::tanh(c);
  CHECK(out[0].leaf().item<float>() == Approx(h));
  CHECK(out[1][0].leaf().item<float>() == Approx(h));
  CHECK(out[1][1].leaf().item<float>() == Approx(c));
}

// The LSTM cell over [T, N, in] for one layer, each gate its own slice.
std::pair<Tensor, std::pair<Tensor, Tensor>> ReferenceLstm(const nn::NamedTensors& p, int l,
                                                           const Tensor& x, Tensor h, Tensor c) {
  const Tensor &wi = p[4 * l].second, &wh = p[4 * l + 1].second;
  const Tensor &bi = p[4 * l + 2].second, &bh = p[4 * l + 3].second;
  const int64_t hs = wh.size(1);
  auto gate = [&](const Tensor& xt, int k) {
    return matmul(xt, transpose(slice(wi, 0, k * hs, (k + 1) * hs), 0, 1)) +
           slice(bi, 0, k * hs, (k + 1) * hs) +
           matmul(h, transpose(slice(wh, 0, k * hs, (k + 1) * hs), 0, 1)) +
           slice(bh, 0, k * hs, (k + 1) * hs);
  };
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < x.size(0); ++t) {
    const Tensor xt = reshape(slice(x, 0, t, t + 1), {x.size(1), x.size(2)});
    const Tensor i = sigmoid(gate(xt, 0)), f = sigmoid(gate(xt, 1)), g = tanh(gate(xt, 2)),
                 o = sigmoid(gate(xt, 3));
    c = f * c + i * g;
    h = o * tanh(c);
    outs.push_back(reshape(h, {1, h.size(0), hs}));
  }
  return {concat(outs, 0), {h, c}};
}

TEST_CASE("a two-layer LSTM equals its cells written out, from given initial states") {
  nn::LSTM lstm(3, 4, 2);
  lstm.to(DType::kF64);
  const Tensor x = Random({5, 2, 3}, DType::kF64, 1).requires_grad_();
  const Tensor h0 = Random({2, 2, 4}, DType::kF64, 2), c0 = Random({2, 2, 4}, DType::kF64, 3);
  const TensorTree out = lstm(
      TensorTree::Tuple({TensorTree::MakeLeaf(x),
                         TensorTree::Tuple({TensorTree::MakeLeaf(h0), TensorTree::MakeLeaf(c0)})}));
  const nn::NamedTensors p = lstm.named_parameters();
  auto layer0 = ReferenceLstm(p, 0, x, reshape(slice(h0, 0, 0, 1), {2, 4}),
                              reshape(slice(c0, 0, 0, 1), {2, 4}));
  auto layer1 = ReferenceLstm(p, 1, layer0.first, reshape(slice(h0, 0, 1, 2), {2, 4}),
                              reshape(slice(c0, 0, 1, 2), {2, 4}));
  testing::RequireSameValueAndGrads(out[0].leaf(), layer1.first, testing::ParamsAnd(lstm, {x}));
  REQUIRE_TENSORS_CLOSE(
      out[1][1].leaf(),
      concat({reshape(layer0.second.second, {1, 2, 4}), reshape(layer1.second.second, {1, 2, 4})},
             0),
      1e-12, 1e-12);
}

TEST_CASE("a GRU step by hand: h' = (1 - z) n + z h") {
  nn::GRU gru(1, 1);
  for (const auto& [name, p] : gru.named_parameters()) nn::CopyValues(p, zeros(p.shape()));
  // r = z = 1/2; n = tanh(x + r * b_hn) with b_hn = 1 (bias_hh's third part).
  nn::CopyValues(gru.named_parameters()[0].second, from_vector<float>({0, 0, 1}, {3, 1}));
  nn::CopyValues(gru.named_parameters()[3].second, from_vector<float>({0, 0, 1}, {3}));
  const TensorTree out =
      gru(TensorTree::Tuple({TensorTree::MakeLeaf(from_vector<float>({2}, {1, 1, 1})),
                             TensorTree::MakeLeaf(full({1, 1, 1}, 0.4))}));
  const double n = std::tanh(2 + 0.5 * 1), h = 0.5 * n + 0.5 * 0.4;
  CHECK(out[0].leaf().item<float>() == Approx(h));
  CHECK(out[1].leaf().item<float>() == Approx(h));
}

TEST_CASE("LSTM and GRU gradients and compiled results") {
  testing::CheckLayer(Factory<nn::LSTM>(int64_t{3}, int64_t{4}, int64_t{2}, true, false, 0.0),
                      testing::RandomInput({4, 2, 3}, 4));
  testing::CheckLayer(Factory<nn::GRU>(int64_t{3}, int64_t{4}, int64_t{2}, true, true, 0.0),
                      testing::RandomInput({2, 4, 3}, 5));
  const TensorTree with_state =
      TensorTree::Tuple({testing::RandomInput({3, 2, 3}, 6), testing::RandomInput({1, 2, 4}, 7)});
  testing::CheckLayer(Factory<nn::GRU>(int64_t{3}, int64_t{4}, int64_t{1}, false, false, 0.0),
                      with_state);
}

TEST_CASE("recurrent layers name the layer, what they expected and what came") {
  nn::LSTM lstm(3, 4);
  CHECK_THROWS_WITH(lstm(zeros({5, 2, 2})),
                    "LSTM: expected input [T, N, 3] of a floating dtype, got f32[5,2,2]");
  CHECK_THROWS_WITH(lstm(TensorTree::Tuple({TensorTree::MakeLeaf(zeros({5, 2, 3})),
                                            TensorTree::MakeLeaf(zeros({1, 2, 4}))})),
                    "LSTM: expected initial state (h_0, c_0), each f32[1,2,4], got f32[1,2,4]");
  nn::GRU gru(3, 4, 1, true, /*batch_first=*/true);
  CHECK_THROWS_WITH(gru(zeros({2, 3})),
                    "GRU: expected input [N, T, 3] of a floating dtype, got f32[2,3]");
  CHECK_THROWS_WITH(nn::GRU(3, 4, 1, true, false, 1.0), "GRU: dropout must be in [0, 1), got 1");
  CHECK_THROWS_WITH(nn::GRU(3, 4)(TensorTree::Tuple({TensorTree::MakeLeaf(zeros({5, 2, 3})),
                                                     TensorTree::MakeLeaf(zeros({2, 2, 4}))})),
                    "GRU: expected initial state h_0 f32[1,2,4], got f32[2,2,4]");
}

}  // namespace
}  // namespace tc
