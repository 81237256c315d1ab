// Activation layers and their functional forms, as torch.nn's: ReLU, GELU,
// Sigmoid, Tanh, SiLU, LeakyReLU, ELU, Hardtanh, Softplus, Softmax and
// LogSoftmax, with PyTorch's arguments, defaults and gradients at the kinks
// (LeakyReLU's and ELU's at 0 are their negative branch's; Hardtanh's is 0
// at and beyond its bounds). Each is composed from ops of the op table.
//
//   Tensor y = nn::leaky_relu(x, 0.2);
//   auto act = std::make_shared<nn::Softplus>(/*beta=*/2.0);
#ifndef TENSORCUT_NN_ACTIVATIONS_H_
#define TENSORCUT_NN_ACTIVATIONS_H_

#include <cstdint>
#include <string>
#include <utility>

#include "nn/module.h"

namespace tc::nn {

// x * sigmoid(x).
Tensor silu(const Tensor& x);
// x for x > 0, else negative_slope * x.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// x for x > 0, else alpha * (exp(x) - 1).
Tensor elu(const Tensor& x, double alpha = 1);
// x clamped to [min_val, max_val].
Tensor hardtanh(const Tensor& x, double min_val = -1, double max_val = 1);
// log(1 + exp(beta x)) / beta, and x where beta x > threshold.
Tensor softplus(const Tensor& x, double beta = 1, double threshold = 20);

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override { return relu(x); }
  using Module::forward;
};

// approximate: "none" (erf form) or "tanh".
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none") : approximate_(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override { return gelu(x, approximate_); }
  using Module::forward;
  std::string extra_repr() const override;

 private:
  std::string approximate_;
};

class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) override { return sigmoid(x); }
  using Module::forward;
};

class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) override { return tanh(x); }
  using Module::forward;
};

class SiLU : public Module {
 public:
  Tensor forward(const Tensor& x) override { return silu(x); }
  using Module::forward;
};

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope_(negative_slope) {}
  Tensor forward(const Tensor& x) override { return leaky_relu(x, negative_slope_); }
  using Module::forward;
  std::string extra_repr() const override;

 private:
  double negative_slope_;
};

class ELU : public Module {
 public:
  explicit ELU(double alpha = 1) : alpha_(alpha) {}
  Tensor forward(const Tensor& x) override { return elu(x, alpha_); }
  using Module::forward;
  std::string extra_repr() const override;

 private:
  double alpha_;
};

// min_val < max_val.
class Hardtanh : public Module {
 public:
  explicit Hardtanh(double min_val = -1, double max_val = 1);
  Tensor forward(const Tensor& x) override { return hardtanh(x, min_val_, max_val_); }
  using Module::forward;
  std::string extra_repr() const override;

 private:
  double min_val_, max_val_;
};

class Softplus : public Module {
 public:
  explicit Softplus(double beta = 1, double threshold = 20) : beta_(beta), threshold_(threshold) {}
  Tensor forward(const Tensor& x) override { return softplus(x, beta_, threshold_); }
  using Module::forward;
  std::string extra_repr() const override;

 private:
  double beta_, threshold_;
};

// Over dim `dim` (negative counts from the end).
class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : dim_(dim) {}
  Tensor forward(const Tensor& x) override { return softmax(x, dim_); }
  using Module::forward;
  std::string extra_repr() const override;

 private:
  int64_t dim_;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : dim_(dim) {}
  Tensor forward(const Tensor& x) override { return log_softmax(x, dim_); }
  using Module::forward;
  std::string extra_repr() const override;

 private:
  int64_t dim_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_ACTIVATIONS_H_
