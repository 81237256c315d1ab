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
// This header holds Linear, Embedding and Dropout and brings in
// the rest: convolutions (nn/conv.h), normalisations (nn/normalization.h),
// pooling (nn/pooling.h), activations (nn/activations.h), containers
// (nn/containers.h), recurrent layers (nn/recurrent.h) and Upsample
// (nn/upsample.h). The attention layer is in
// nn/attention.h.
#ifndef TENSORCUT_NN_LAYERS_H_
#define TENSORCUT_NN_LAYERS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/activations.h"
#include "nn/containers.h"
#include "nn/conv.h"
#include "nn/module.h"
#include "nn/normalization.h"
#include "nn/pooling.h"
#include "nn/recurrent.h"
#include "nn/upsample.h"

namespace tc::nn {

// y = x W^T + b; weight [out, in], bias [out]. Any input rank >= 1.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // undefined without bias

 private:
  Tensor weight_, bias_;
};

// A lookup table: weight [num_embeddings, embedding_dim] drawn from N(0, 1);
// forward takes i64 or i32 indices of any shape.
class Embedding : public Module {
 public:
  // padding_idx (may count from the end): that row starts at zero and takes
  // no gradient, so training never moves it (PyTorch's padding_idx).
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt, Generator* gen = nullptr);
  Tensor forward(const Tensor& indices) override;
  using Module::forward;
  std::string extra_repr() const override;

  const Tensor& weight() const { return weight_; }
  std::optional<int64_t> padding_idx() const { return padding_idx_; }  // in [0, num_embeddings)

 private:
  Tensor weight_;
  std::optional<int64_t> padding_idx_;
};

// In training, zeroes each element with probability p (drawing from the
// default generator) and scales the rest by 1 / (1 - p); identity in eval.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

 private:
  double p_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_LAYERS_H_
