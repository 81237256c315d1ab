// Multi-head attention, as torch.nn.MultiheadAttention with batch_first=True
// and no key/value biases, its attention weights dropped out with
// probability `dropout` in training (0 by default): parameters in_proj_weight [3E, E]
// (xavier-uniform), in_proj_bias [3E] (zeros) and the child "out_proj", a
// Linear(E, E) with a zero bias. Rows [0, E), [E, 2E), [2E, 3E) of the input
// projection make the queries, keys and values.
//
//   nn::MultiheadAttention attn(256, 4, /*causal=*/true);
//   Tensor y = attn(x);                   // self-attention, x [B, S, 256]
//   Tensor z = attn.attend(q, k, v);      // q [B, S, E], k and v [B, T, E]
//   Tensor p = attn.attend(x, x, x, pad);  // pad bool [B, S]: true keys are padding
#ifndef TENSORCUT_NN_ATTENTION_H_
#define TENSORCUT_NN_ATTENTION_H_

#include <cstdint>
#include <memory>

#include "nn/layers.h"
#include "nn/module.h"

namespace tc::nn {

class MultiheadAttention : public Module {
 public:
  // causal: query i attends only to keys j <= i (needs S == T).
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, bool causal = false,
                     Generator* gen = nullptr, double dropout = 0);

  // Self-attention: attend(x, x, x).
  Tensor forward(const Tensor& x) override { return attend(x, x, x); }
  using Module::forward;
  // softmax(Q_h K_h^T / sqrt(E / H) + M) V_h per head h, concatenated and
  // projected, as PyTorch's: M adds -inf where key_padding_mask (bool [B, T])
  // or attn_mask (bool [S, T]) is true, or their values where they are
  // floating (of the query's dtype), and the causal mask when set. A query
  // whose keys are all masked gets NaN weights, as in PyTorch.
  Tensor attend(const Tensor& query, const Tensor& key, const Tensor& value,
                const Tensor& key_padding_mask = Tensor(), const Tensor& attn_mask = Tensor());

  const Tensor& in_proj_weight() const { return in_proj_weight_; }
  const Tensor& in_proj_bias() const { return in_proj_bias_; }
  const std::shared_ptr<Linear>& out_proj() const { return out_proj_; }

 private:
  int64_t embed_dim_, num_heads_;
  bool causal_;
  double dropout_;
  Tensor in_proj_weight_, in_proj_bias_;
  std::shared_ptr<Linear> out_proj_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_ATTENTION_H_
