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
    : embed_dim_(embed_dim), num_heads_(num_heads), causal_(causal), dropout_(dropout) {
  if (embed_dim <= 0 || num_heads <= 0 || embed_dim % num_heads != 0) {
    ThrowInvalid(absl::StrCat("MultiheadAttention: embed_dim (", embed_dim,
                              ") must be a positive multiple of num_heads (", num_heads, ")"));
  }
  if (!(dropout >= 0 && dropout < 1)) {
    ThrowInvalid(absl::StrCat("MultiheadAttention: dropout must be in [0, 1), got ", dropout));
  }
  in_proj_weight_ = register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}));
  init::xavier_uniform_(in_proj_weight_, 1, gen);
  in_proj_bias_ = register_parameter("in_proj_bias", zeros({3 * embed_dim}));
  out_proj_ =
      register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, true, gen));
  // PyTorch zeroes the output projection's bias too.
  init::zeros_(out_proj_->bias());
}

Tensor MultiheadAttention::attend(const Tensor& query, const Tensor& key, const Tensor& value,
                                  const Tensor& key_padding_mask, const Tensor& attn_mask) {
  const int64_t e = embed_dim_;
  for (const Tensor* t : {&query, &key, &value}) {
    if (t->dim() != 3 || t->size(2) != e) {
      ThrowInvalid(absl::StrCat("MultiheadAttention: expected query, key and value [batch, seq, ",
                                e, "], got ", t->type().ToString()));
    }
  }
  if (causal_ && query.size(1) != key.size(1)) {
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
  Tensor heads;  // [B, H, S, D]
  if (is_training() && dropout_ > 0) {
    // Dropout on the weights: written out, as the fused op has no dropout.
    Tensor scores = matmul(q, transpose(k, 2, 3)) * scale;  // [B, H, S, T]
    if (causal_) scores = scores + CausalMask(s_len, scores.dtype());
    if (mask.defined()) scores = scores + mask;
    heads = matmul(tc::dropout(softmax(scores, 3), dropout_), v);
  } else {
    heads = sdpa(q, k, v, mask, causal_, scale).out;
  }
  Tensor merged = reshape(permute(heads, {0, 2, 1, 3}), {query.size(0), query.size(1), e});
  return (*out_proj_)(merged);
}

}  // namespace tc::nn
