// Multi-head attention, as torch.nn.MultiheadAttention without key/value
// biases, its attention weights dropped out with probability `dropout` in
// training (0 by default): parameters in_proj_weight [3E, E] (xavier-uniform),
// in_proj_bias [3E] (zeros) and the child "out_proj", a Linear(E, E) with a
// zero bias. Rows [0, E), [E, 2E), [2E, 3E) of the input projection make the
// queries, keys and values. Batch first unless batch_first is false (then
// query, key and value are [S, B, E], as PyTorch's default).
//
//   nn::MultiheadAttention attn(256, 4, /*causal=*/true);
//   Tensor y = attn(x);                   // self-attention, x [B, S, 256]
//   Tensor z = attn.attend(q, k, v);      // q [B, S, E], k and v [B, T, E]
//   Tensor p = attn.attend(x, x, x, pad);  // pad bool [B, S]: true keys are padding
//   auto [out, w] = attn.attend_with_weights(q, k, v);  // w [B, S, T], the heads' mean
//   // In a Sequential, masks come with the input as a dict:
//   y = attn(TensorTree::Dict({{"query", x}, {"key_padding_mask", pad}})).leaf();
#ifndef TENSORCUT_NN_ATTENTION_H_
#define TENSORCUT_NN_ATTENTION_H_

#include <cstdint>
#include <memory>

#include "nn/layers.h"
#include "nn/module.h"

namespace tc::nn {

struct MultiheadAttentionOptions {
  bool causal = false;  // query i attends only to keys j <= i (needs S == T)
  double dropout = 0;
  bool batch_first = true;
};

// What attend_with_weights returns: the output and the attention weights,
// [B, S, T] averaged over the heads or [B, H, S, T] (batch first whatever
// batch_first is, as PyTorch's).
struct AttentionWithWeights {
  Tensor output, weights;
};

class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, bool causal = false,
                     Generator* gen = nullptr, double dropout = 0);
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, const MultiheadAttentionOptions& options,
                     Generator* gen = nullptr);

  // Self-attention: attend(x, x, x).
  Tensor forward(const Tensor& x) override { return attend(x, x, x); }
  // A leaf: self-attention. A dict: "query", and optionally "key" and
  // "value" (else the query) and the masks "key_padding_mask" and
  // "attn_mask", as attend's; returns the output as a leaf.
  TensorTree forward(const TensorTree& input) override;
  // softmax(Q_h K_h^T / sqrt(E / H) + M) V_h per head h, concatenated and
  // projected, as PyTorch's: M adds -inf where key_padding_mask (bool [B, T])
  // or attn_mask (bool [S, T]) is true, or their values where they are
  // floating (of the query's dtype), and the causal mask when set. A query
  // whose keys are all masked gets NaN weights, as in PyTorch.
  Tensor attend(const Tensor& query, const Tensor& key, const Tensor& value,
                const Tensor& key_padding_mask = Tensor(), const Tensor& attn_mask = Tensor());
  // The same, with the attention weights (after dropout, as PyTorch returns
  // them): written out rather than fused, since they are materialised.
  AttentionWithWeights attend_with_weights(const Tensor& query, const Tensor& key,
                                           const Tensor& value,
                                           const Tensor& key_padding_mask = Tensor(),
                                           const Tensor& attn_mask = Tensor(),
                                           bool average_attn_weights = true);

  const Tensor& in_proj_weight() const { return in_proj_weight_; }
  const Tensor& in_proj_bias() const { return in_proj_bias_; }
  const std::shared_ptr<Linear>& out_proj() const { return out_proj_; }

 private:
  AttentionWithWeights Attend(const Tensor& query, const Tensor& key, const Tensor& value,
                              const Tensor& key_padding_mask, const Tensor& attn_mask,
                              bool need_weights, bool average_attn_weights);

  int64_t embed_dim_, num_heads_;
  MultiheadAttentionOptions options_;
  Tensor in_proj_weight_, in_proj_bias_;
  std::shared_ptr<Linear> out_proj_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_ATTENTION_H_
