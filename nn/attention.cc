#include "nn/attention.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "nn/init.h"
#include "nn/layer_checks.h"
#include "runtime/autograd_meta.h"

namespace tc::nn {
namespace {

using internal::ThrowInvalid;

// [B, S, E] -> [B, H, S, E / H].
Tensor SplitHeads(const Tensor& x, int64_t heads) {
  return permute(reshape(x, {x.size(0), x.size(1), heads, x.size(2) / heads}), {0, 2, 1, 3});
}

// 0 where key j may be seen from query i (j <= i), -inf elsewhere: [S, S].
Tensor CausalMask(int64_t s, DType dtype) {
  Tensor future = gt(reshape(arange(s), {1, s}), reshape(arange(s), {s, 1}));
  return where(future, full({}, -std::numeric_limits<double>::infinity(), dtype), zeros({}, dtype));
}

// A mask as a term added to the scores [B, H, S, T]: a bool mask's true
// entries become -inf (those keys get no weight), a floating one is added
// as given. `shape` is its expected shape, reshaped to `broadcast`.
Tensor AdditiveMask(absl::string_view what, const Tensor& mask, const Shape& shape,
                    std::vector<int64_t> broadcast, DType dtype) {
  const bool ok_dtype = mask.dtype() == DType::kBool || mask.dtype() == dtype;
  if (!ok_dtype || mask.shape() != shape) {
    ThrowInvalid(absl::StrCat("MultiheadAttention: expected ", what, " bool or ", DTypeName(dtype),
                              " ", ShapeToString(shape), ", got ", mask.type().ToString()));
  }
  Tensor additive = mask;
  if (mask.dtype() == DType::kBool) {
    additive =
        where(mask, scalar(-std::numeric_limits<double>::infinity(), dtype), scalar(0, dtype));
  }
  return reshape(additive, std::move(broadcast));
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, bool causal,
                                       Generator* gen, double dropout)
    : MultiheadAttention(embed_dim, num_heads, {.causal = causal, .dropout = dropout}, gen) {}

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads,
                                       const MultiheadAttentionOptions& options, Generator* gen)
    : embed_dim_(embed_dim), num_heads_(num_heads), options_(options) {
  if (embed_dim <= 0 || num_heads <= 0 || embed_dim % num_heads != 0) {
    ThrowInvalid(absl::StrCat("MultiheadAttention: embed_dim (", embed_dim,
                              ") must be a positive multiple of num_heads (", num_heads, ")"));
  }
  if (!(options.dropout >= 0 && options.dropout < 1)) {
    ThrowInvalid(
        absl::StrCat("MultiheadAttention: dropout must be in [0, 1), got ", options.dropout));
  }
  in_proj_weight_ = register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}));
  init::xavier_uniform_(in_proj_weight_, 1, gen);
  in_proj_bias_ = register_parameter("in_proj_bias", zeros({3 * embed_dim}));
  out_proj_ =
      register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, true, gen));
  // PyTorch zeroes the output projection's bias too.
  init::zeros_(out_proj_->bias());
}

TensorTree MultiheadAttention::forward(const TensorTree& input) {
  if (input.is_leaf()) return TensorTree::MakeLeaf(forward(input.leaf()));
  auto entry = [&](absl::string_view key) {
    const TensorTree* found = input.kind() == TreeKind::kDict ? input.Find(key) : nullptr;
    if (found != nullptr && !found->is_leaf()) {
      ThrowInvalid(absl::StrCat("MultiheadAttention: input \"", key, "\" must be a tensor"));
    }
    return found != nullptr ? found->leaf() : Tensor();
  };
  const Tensor query = entry("query");
  if (!query.defined()) {
    ThrowInvalid(
        "MultiheadAttention: expected a tensor or a dict with \"query\" (and optionally "
        "\"key\", \"value\", \"key_padding_mask\", \"attn_mask\")");
  }
  for (const std::string& key : input.keys()) {
    if (key != "query" && key != "key" && key != "value" && key != "key_padding_mask" &&
        key != "attn_mask") {
      ThrowInvalid(absl::StrCat("MultiheadAttention: unknown input \"", key,
                                "\" (expected query, key, value, key_padding_mask, attn_mask)"));
    }
  }
  const Tensor key = entry("key"), value = entry("value");
  return TensorTree::MakeLeaf(attend(query, key.defined() ? key : query,
                                     value.defined() ? value : (key.defined() ? key : query),
                                     entry("key_padding_mask"), entry("attn_mask")));
}

Tensor MultiheadAttention::attend(const Tensor& query, const Tensor& key, const Tensor& value,
                                  const Tensor& key_padding_mask, const Tensor& attn_mask) {
  return Attend(query, key, value, key_padding_mask, attn_mask, /*need_weights=*/false, false)
      .output;
}

AttentionWithWeights MultiheadAttention::attend_with_weights(const Tensor& query, const Tensor& key,
                                                             const Tensor& value,
                                                             const Tensor& key_padding_mask,
                                                             const Tensor& attn_mask,
                                                             bool average_attn_weights) {
  return Attend(query, key, value, key_padding_mask, attn_mask, /*need_weights=*/true,
                average_attn_weights);
}

AttentionWithWeights MultiheadAttention::Attend(const Tensor& query_in, const Tensor& key_in,
                                                const Tensor& value_in,
                                                const Tensor& key_padding_mask,
                                                const Tensor& attn_mask, bool need_weights,
                                                bool average_attn_weights) {
  const int64_t e = embed_dim_;
  const bool batch_first = options_.batch_first;
  for (const Tensor* t : {&query_in, &key_in, &value_in}) {
    if (t->dim() != 3 || t->size(2) != e) {
      ThrowInvalid(absl::StrCat("MultiheadAttention: expected query, key and value ",
                                batch_first ? "[batch, seq, " : "[seq, batch, ", e, "], got ",
                                t->type().ToString()));
    }
  }
  // Batch first from here on.
  auto batched = [&](const Tensor& t) { return batch_first ? t : transpose(t, 0, 1); };
  const Tensor query = batched(query_in), key = batched(key_in), value = batched(value_in);
  const bool causal = options_.causal;
  if (causal && query.size(1) != key.size(1)) {
    ThrowInvalid(absl::StrCat(
        "MultiheadAttention: a causal mask needs as many keys as queries, got ",
        DimToString(query.size(1)), " queries and ", DimToString(key.size(1)), " keys"));
  }
  auto project = [&](const Tensor& x, int64_t part) {
    return linear(x, slice(in_proj_weight_, 0, part * e, (part + 1) * e),
                  slice(in_proj_bias_, 0, part * e, (part + 1) * e));
  };
  Tensor q = SplitHeads(project(query, 0), num_heads_);
  Tensor k = SplitHeads(project(key, 1), num_heads_);
  Tensor v = SplitHeads(project(value, 2), num_heads_);
  const double scale = 1.0 / std::sqrt(static_cast<double>(e / num_heads_));
  const int64_t batch = query.size(0), s_len = query.size(1), t_len = key.size(1);
  Tensor mask;  // additive, broadcasting to the scores [B, H, S, T]
  if (key_padding_mask.defined()) {
    mask = AdditiveMask("key_padding_mask", key_padding_mask, {batch, t_len}, {batch, 1, 1, t_len},
                        q.dtype());
  }
  if (attn_mask.defined()) {
    Tensor m =
        AdditiveMask("attn_mask", attn_mask, {s_len, t_len}, {1, 1, s_len, t_len}, q.dtype());
    mask = mask.defined() ? mask + m : m;
  }
  const bool dropout = is_training() && options_.dropout > 0;
  AttentionWithWeights result;
  Tensor heads;  // [B, H, S, D]
  if (need_weights || dropout) {
    // Written out: the fused op neither returns the weights nor drops them out.
    Tensor scores = matmul(q, transpose(k, 2, 3)) * scale;  // [B, H, S, T]
    if (causal) scores = scores + CausalMask(s_len, scores.dtype());
    if (mask.defined()) scores = scores + mask;
    Tensor weights = softmax(scores, 3);
    if (dropout) weights = tc::dropout(weights, options_.dropout);
    heads = matmul(weights, v);
    if (need_weights) result.weights = average_attn_weights ? mean(weights, {1}) : weights;
  } else {
    heads = sdpa(q, k, v, mask, causal, scale).out;
  }
  Tensor merged = reshape(permute(heads, {0, 2, 1, 3}), {batch, s_len, e});
  result.output = (*out_proj_)(merged);
  if (!batch_first) result.output = transpose(result.output, 0, 1);
  return result;
}

}  // namespace tc::nn
