// Recurrent layers, as torch.nn.LSTM and torch.nn.GRU: the same parameters
// per layer l ("weight_ih_l0" [G H, in], "weight_hh_l0" [G H, H],
// "bias_ih_l0" and "bias_hh_l0" [G H], with G = 4 gates i, f, g, o for the
// LSTM and 3 gates r, z, n for the GRU), the same initialisation
// (U(-1/sqrt(H), 1/sqrt(H)) everywhere) and formulas. The sequence is
// unrolled in the traced graph: one cell per time step, the input
// projections of all steps done as one matmul per layer.
//
//   nn::LSTM lstm(32, 64, /*num_layers=*/2);
//   TensorTree out = lstm(TensorTree::MakeLeaf(x));   // x [T, N, 32]
//   // out: (output [T, N, 64], (h_n [2, N, 64], c_n [2, N, 64]))
//   Tensor y = lstm(x);                                // just the output
//
// Inputs are [T, N, in] ([N, T, in] with batch_first); the structured call
// also takes (x, (h_0, c_0)) for the LSTM and (x, h_0) for the GRU, states
// [num_layers, N, H] (zeros when not given).
#ifndef TENSORCUT_NN_RECURRENT_H_
#define TENSORCUT_NN_RECURRENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nn/module.h"

namespace tc::nn {

// What LSTM and GRU share: the per-layer parameters, the argument checks,
// the unrolling over layers; a subclass supplies one time step of its cell.
class RecurrentBase : public Module {
 public:
  TensorTree forward(const TensorTree& input) override;
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

 protected:
  RecurrentBase(std::string layer, int64_t gates, int64_t states, int64_t input_size,
                int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first,
                double dropout, Generator* gen);

  struct Weights {
    Tensor ih, hh, b_ih, b_hh;  // the biases undefined without bias
  };
  // One step: `projected` is the input's projection x W_ih^T + b_ih [N, G H];
  // `state` the layer's states (h, and c for the LSTM), replaced by the new.
  virtual void Step(const Weights& w, const Tensor& projected,
                    std::vector<Tensor>& state) const = 0;

  int64_t hidden_size() const { return hidden_size_; }

 private:
  std::string layer_;
  int64_t gates_, states_, input_size_, hidden_size_, num_layers_;
  bool batch_first_;
  double dropout_;
  std::vector<Weights> weights_;
};

// c' = f c + i g, h' = o tanh(c'), with i, f, o = sigmoid and g = tanh of
// x W_ih^T + b_ih + h W_hh^T + b_hh split in four.
class LSTM : public RecurrentBase {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool bias = true,
       bool batch_first = false, double dropout = 0, Generator* gen = nullptr)
      : RecurrentBase("LSTM", 4, 2, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                      gen) {}

 private:
  void Step(const Weights& w, const Tensor& projected, std::vector<Tensor>& state) const override;
};

// r, z = sigmoid of the input and hidden projections' sums; n = tanh(x_n +
// r (h W_hn^T + b_hn)); h' = (1 - z) n + z h.
class GRU : public RecurrentBase {
 public:
  GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool bias = true,
      bool batch_first = false, double dropout = 0, Generator* gen = nullptr)
      : RecurrentBase("GRU", 3, 1, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                      gen) {}

 private:
  void Step(const Weights& w, const Tensor& projected, std::vector<Tensor>& state) const override;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_RECURRENT_H_
