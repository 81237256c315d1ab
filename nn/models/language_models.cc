#include "nn/models/language_models.h"

#include "absl/status/status.h"
#include "nn/init.h"
#include "nn/losses.h"
#include "runtime/error.h"
#include "runtime/ops.h"

namespace tc::nn {

Gpt::Gpt(const Config& config, Generator* gen)
    : wte_(register_module(
          "wte", std::make_shared<Embedding>(config.vocab, config.d_model, std::nullopt, gen))),
      wpe_(register_module("wpe", std::make_shared<Embedding>(config.block_size, config.d_model,
                                                              std::nullopt, gen))),
      h_(register_module("h", std::make_shared<ModuleList>())),
      ln_f_(register_module("ln_f",
                            std::make_shared<LayerNorm>(std::vector<int64_t>{config.d_model}))) {
  for (int64_t i = 0; i < config.num_layers; ++i) {
    h_->push_back(std::make_shared<TransformerBlock>(config.d_model, config.num_heads,
                                                     4 * config.d_model, gen, /*dropout=*/0,
                                                     /*causal=*/true));
  }
  // GPT-2's initialisation of the embeddings: the logits come from wte, so
  // N(0, 1) rows would start them at a loss far above log(vocab).
  init::normal_(wte_->weight(), 0, 0.02, gen);
  init::normal_(wpe_->weight(), 0, 0.02, gen);
}

Tensor Gpt::forward(const Tensor& tokens) {
  if (tokens.dim() != 2 || tokens.size(1) > wpe_->weight().size(0)) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("Gpt: expected tokens [B, T] with T at most ", wpe_->weight().size(0),
                     ", got ", ShapeToString(tokens.shape()))));
  }
  Tensor x = (*wte_)(tokens) + (*wpe_)(arange(tokens.size(1)));
  for (const std::shared_ptr<Module>& block : *h_) x = (*block)(x);
  return matmul((*ln_f_)(x), transpose(wte_->weight(), 0, 1));
}

LstmLanguageModel::LstmLanguageModel(int64_t vocab, int64_t embedding_dim, int64_t hidden_size,
                                     int64_t num_layers, Generator* gen)
    : encoder_(register_module(
          "encoder", std::make_shared<Embedding>(vocab, embedding_dim, std::nullopt, gen))),
      rnn_(register_module("rnn", std::make_shared<LSTM>(embedding_dim, hidden_size, num_layers,
                                                         true, false, 0, gen))),
      decoder_(
          register_module("decoder", std::make_shared<Linear>(hidden_size, vocab, true, gen))) {}

Tensor LstmLanguageModel::forward(const Tensor& tokens) {
  return (*decoder_)((*rnn_)((*encoder_)(tokens)));
}

Tensor LanguageModelLoss(const TensorTree& outputs, const TensorTree& targets) {
  if (!outputs.is_leaf() || !targets.is_leaf()) {
    throw Error(absl::InvalidArgumentError(
        "LanguageModelLoss: expected one logits tensor and one targets tensor"));
  }
  const Tensor& logits = outputs.leaf();
  return cross_entropy(reshape(logits, {-1, logits.size(logits.dim() - 1)}),
                       reshape(targets.leaf(), {-1}));
}

}  // namespace tc::nn
