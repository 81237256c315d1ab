// The zoo's language models, over a vocabulary of byte tokens:
//
//   Gpt             a GPT-style decoder: token and position embeddings
//                   ("wte", "wpe"), pre-LN blocks with causal self-attention
//                   ("h.0" ... , each models.h's TransformerBlock), a final
//                   LayerNorm ("ln_f") and logits from the token embedding
//                   itself (tied: no weight of their own); both embeddings
//                   drawn from N(0, 0.02) as GPT-2's. Tokens i64 [B, T]
//                   -> logits [B, T, vocab].
//   LstmLanguageModel  PyTorch's word-language-model example: "encoder"
//                   (Embedding), "rnn" (a multi-layer LSTM), "decoder"
//                   (Linear). Tokens i64 [T, N] -> logits [T, N, vocab].
//
//   auto gpt = std::make_shared<nn::Gpt>(nn::Gpt::Config{}, &gen);
//   Tensor logits = (*gpt)(tokens);
#ifndef TENSORCUT_NN_MODELS_LANGUAGE_MODELS_H_
#define TENSORCUT_NN_MODELS_LANGUAGE_MODELS_H_

#include <cstdint>
#include <memory>

#include "nn/layers.h"
#include "nn/models/models.h"
#include "nn/module.h"
#include "runtime/random.h"

namespace tc::nn {

class Gpt : public Module {
 public:
  struct Config {
    int64_t vocab = 256;
    int64_t block_size = 64;  // the longest sequence: rows of "wpe"
    int64_t d_model = 128;
    int64_t num_heads = 4;
    int64_t num_layers = 4;
  };
  explicit Gpt(const Config& config, Generator* gen = nullptr);
  Tensor forward(const Tensor& tokens) override;
  using Module::forward;

 private:
  std::shared_ptr<Embedding> wte_, wpe_;
  std::shared_ptr<ModuleList> h_;
  std::shared_ptr<LayerNorm> ln_f_;
};

class LstmLanguageModel : public Module {
 public:
  LstmLanguageModel(int64_t vocab, int64_t embedding_dim, int64_t hidden_size, int64_t num_layers,
                    Generator* gen = nullptr);
  Tensor forward(const Tensor& tokens) override;
  using Module::forward;

 private:
  std::shared_ptr<Embedding> encoder_;
  std::shared_ptr<LSTM> rnn_;
  std::shared_ptr<Linear> decoder_;
};

// Cross-entropy of logits [..., vocab] against next-token targets [...].
Tensor LanguageModelLoss(const TensorTree& outputs, const TensorTree& targets);

}  // namespace tc::nn

#endif  // TENSORCUT_NN_MODELS_LANGUAGE_MODELS_H_
