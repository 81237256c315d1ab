// The standard layers, as their torch.nn namesakes: same parameter and buffer
// names, same default initialisation, same training/eval behaviour. Each
// constructor that draws initial values takes an optional Generator (nullptr:
// the default generator), so a model built from a seeded Generator is
// reproducible. Inputs are NCHW for the 2-D layers.
//
//   auto net = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
//       std::make_shared<nn::Linear>(784, 512, true, &gen), std::make_shared<nn::ReLU>(),
//       std::make_shared<nn::Linear>(512, 10, true, &gen)});
//   Tensor logits = (*net)(x);  // parameters "0.weight", "0.bias", "2.weight", "2.bias"
//
// The attention layer is in nn/attention.h.
#ifndef TENSORCUT_NN_LAYERS_H_
#define TENSORCUT_NN_LAYERS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"

namespace tc::nn {

// y = x W^T + b; weight [out, in], bias [out]. Any input rank >= 1.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // undefined without bias

 private:
  Tensor weight_, bias_;
};

// 2-D convolution with a square kernel; weight [out, in / groups, k, k],
// bias [out] added as a broadcast over (N, H, W).
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
         int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1, bool bias = true,
         Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // undefined without bias
  const Conv2dOptions& options() const { return options_; }

 private:
  Conv2dOptions options_;
  Tensor weight_, bias_;
};

// Batch normalisation over (N, H, W) per channel. Parameters weight (ones)
// and bias (zeros); buffers running_mean (zeros), running_var (ones) and
// num_batches_tracked (i64 scalar). Training normalises by the batch
// statistics and updates the buffers in place, outside autograd:
//   running_mean = (1 - momentum) running_mean + momentum mean
//   running_var  = (1 - momentum) running_var  + momentum var * n / (n - 1)
// with n = N*H*W; eval normalises by the running statistics.
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }
  const Tensor& running_mean() const { return running_mean_; }
  const Tensor& running_var() const { return running_var_; }
  const Tensor& num_batches_tracked() const { return num_batches_tracked_; }

 private:
  double eps_, momentum_;
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
};

// Layer normalisation over the trailing dims `normalized_shape`; weight
// (ones) and bias (zeros) of that shape.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  std::vector<int64_t> normalized_shape_;
  double eps_;
  Tensor weight_, bias_;
};

// A lookup table: weight [num_embeddings, embedding_dim] drawn from N(0, 1);
// forward takes i64 indices of any shape.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator* gen = nullptr);
  Tensor forward(const Tensor& indices) override;
  using Module::forward;

  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_;
};

// In training, zeroes each element with probability p (drawing from the
// default generator) and scales the rest by 1 / (1 - p); identity in eval.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  double p_;
};

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

// Square windows; the stride defaults to the kernel size, as in PyTorch.
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                     int64_t padding = 0);
  Tensor forward(const Tensor& x) override { return max_pool2d(x, options_); }
  using Module::forward;

 private:
  Pool2dOptions options_;
};

// Padding counts in the divisor (count_include_pad=True).
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                     int64_t padding = 0);
  Tensor forward(const Tensor& x) override { return avg_pool2d(x, options_); }
  using Module::forward;

 private:
  Pool2dOptions options_;
};

// Merges dims [start_dim, end_dim] (negative dims count from the end).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim_(start_dim), end_dim_(end_dim) {}
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  int64_t start_dim_, end_dim_;
};

// Runs its children in order; they are named "0", "1", ... by position.
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);

  TensorTree forward(const TensorTree& input) override;
  Tensor forward(const Tensor& x) override;

  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return modules_[i]; }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_LAYERS_H_
