#include "nn/layers.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nn/init.h"
#include "nn/layer_checks.h"

namespace tc::nn {

using internal::PyBool;
using internal::PyFloat;
using internal::RequireInput;
using internal::RequirePositive;
using internal::ThrowInvalid;

// ---- Linear

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, Generator* gen) {
  RequirePositive("Linear", "in_features", in_features);
  RequirePositive("Linear", "out_features", out_features);
  weight_ = register_parameter("weight", empty({out_features, in_features}));
  if (bias) bias_ = register_parameter("bias", empty({out_features}));
  internal::ResetWeightAndBias(weight_, bias_, gen);
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight_, bias_); }

std::string Linear::extra_repr() const {
  return absl::StrCat("in_features=", weight_.size(1), ", out_features=", weight_.size(0),
                      ", bias=", PyBool(bias_.defined()));
}

// ---- Embedding

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim,
                     std::optional<int64_t> padding_idx, Generator* gen) {
  RequirePositive("Embedding", "num_embeddings", num_embeddings);
  RequirePositive("Embedding", "embedding_dim", embedding_dim);
  if (padding_idx.has_value()) {
    if (*padding_idx < -num_embeddings || *padding_idx >= num_embeddings) {
      ThrowInvalid(absl::StrCat("Embedding: padding_idx must be in [", -num_embeddings, ", ",
                                num_embeddings, "), got ", *padding_idx));
    }
    padding_idx_ = *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
  }
  weight_ = register_parameter("weight", empty({num_embeddings, embedding_dim}));
  init::normal_(weight_, 0, 1, gen);
  if (padding_idx_.has_value()) init::zeros_(weight_.slice(0, *padding_idx_, *padding_idx_ + 1));
}

Tensor Embedding::forward(const Tensor& given) {
  // PyTorch takes int32 indices too; the op reads i64.
  const Tensor indices = given.dtype() == DType::kI32 ? given.to(DType::kI64) : given;
  const Tensor rows = embedding(weight_, indices);
  if (!padding_idx_.has_value()) return rows;
  // The padding positions read the same row, cut from the gradient.
  std::vector<int64_t> mask_shape = indices.shape();
  mask_shape.push_back(1);
  const Tensor is_padding = reshape(eq(indices, scalar(*padding_idx_, DType::kI64)), mask_shape);
  return where(is_padding, rows.detach(), rows);
}

std::string Embedding::extra_repr() const {
  std::string repr = absl::StrCat(weight_.size(0), ", ", weight_.size(1));
  if (padding_idx_.has_value()) absl::StrAppend(&repr, ", padding_idx=", *padding_idx_);
  return repr;
}

// ---- Dropout

Dropout::Dropout(double p) : p_(p) {
  if (!(p >= 0 && p < 1)) ThrowInvalid(absl::StrCat("Dropout: p must be in [0, 1), got ", p));
}

Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p_ == 0) return x;
  return dropout(x, p_);
}

std::string Dropout::extra_repr() const {
  return absl::StrCat("p=", PyFloat(p_), ", inplace=False");
}

}  // namespace tc::nn
