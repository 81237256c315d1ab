#include "nn/layers.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "nn/init.h"
#include "runtime/autograd_meta.h"

namespace tc::nn {
namespace {

[[noreturn]] void ThrowInvalid(absl::string_view message) {
  throw Error(absl::InvalidArgumentError(message));
}

void RequirePositive(absl::string_view layer, absl::string_view what, int64_t value) {
  if (value <= 0) ThrowInvalid(absl::StrCat(layer, ": ", what, " must be positive, got ", value));
}

}  // namespace

// ---- Linear

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, Generator* gen) {
  RequirePositive("Linear", "in_features", in_features);
  RequirePositive("Linear", "out_features", out_features);
  weight_ = register_parameter("weight",
                               init::KaimingUniform({out_features, in_features}, in_features, gen));
  if (bias) {
    bias_ = register_parameter("bias",
                               init::Uniform({out_features}, init::BiasBound(in_features), gen));
  }
}

Tensor Linear::forward(const Tensor& x) {
  if (bias_.defined()) return linear(x, weight_, bias_);
  // matmul wants rank >= 2: fold the leading dims into one and restore them.
  std::vector<int64_t> out_shape(x.shape().begin(), x.shape().end());
  if (out_shape.empty()) ThrowInvalid("Linear: input must have rank >= 1, got a scalar");
  out_shape.back() = weight_.size(0);
  Tensor flat = reshape(x, {-1, x.size(-1)});
  return reshape(matmul(flat, transpose(weight_, 0, 1)), std::move(out_shape));
}

// ---- Conv2d

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
               int64_t padding, int64_t dilation, int64_t groups, bool bias, Generator* gen) {
  RequirePositive("Conv2d", "in_channels", in_channels);
  RequirePositive("Conv2d", "out_channels", out_channels);
  RequirePositive("Conv2d", "kernel_size", kernel_size);
  RequirePositive("Conv2d", "groups", groups);
  if (in_channels % groups != 0 || out_channels % groups != 0) {
    ThrowInvalid(absl::StrCat("Conv2d: in_channels (", in_channels, ") and out_channels (",
                              out_channels, ") must be divisible by groups (", groups, ")"));
  }
  options_.stride = {stride, stride};
  options_.padding = {padding, padding};
  options_.dilation = {dilation, dilation};
  options_.groups = groups;
  const int64_t fan_in = in_channels / groups * kernel_size * kernel_size;
  weight_ = register_parameter(
      "weight", init::KaimingUniform({out_channels, in_channels / groups, kernel_size, kernel_size},
                                     fan_in, gen));
  if (bias) {
    bias_ = register_parameter("bias", init::Uniform({out_channels}, init::BiasBound(fan_in), gen));
  }
}

Tensor Conv2d::forward(const Tensor& x) {
  Tensor y = conv2d(x, weight_, options_);
  if (!bias_.defined()) return y;
  return y + reshape(bias_, {1, bias_.size(0), 1, 1});
}

// ---- BatchNorm2d

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps, double momentum)
    : eps_(eps), momentum_(momentum) {
  RequirePositive("BatchNorm2d", "num_features", num_features);
  weight_ = register_parameter("weight", ones({num_features}));
  bias_ = register_parameter("bias", zeros({num_features}));
  running_mean_ = register_buffer("running_mean", zeros({num_features}));
  running_var_ = register_buffer("running_var", ones({num_features}));
  num_batches_tracked_ = register_buffer("num_batches_tracked", zeros({}, DType::kI64));
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  if (!is_training()) {
    return batch_norm_inference(x, weight_, bias_, running_mean_, running_var_, eps_);
  }
  NormResult r = batch_norm(x, weight_, bias_, eps_);
  // Symbolic when the batch is: the checks and the factor then hold for
  // every batch size of at least 2 (nothing checks the size of one call).
  const int64_t n = *DimDivide(x.numel(), x.size(1));
  if (!IsSymbolic(n) && n < 2) {
    ThrowInvalid(absl::StrCat("BatchNorm2d: expected more than 1 value per channel in training, ",
                              "got input ", x.type().ToString()));
  }
  // The running statistics are state, not part of the differentiated
  // computation: update them from detached statistics, keeping the handles.
  NoGradGuard no_grad;
  AssignInPlace(running_mean_, running_mean_ * (1 - momentum_) + r.mean.detach() * momentum_);
  const Tensor var = r.var.detach();
  const Tensor unbiased =
      IsSymbolic(n)
          ? var * momentum_ * size_scalar(n, x.dtype()) / size_scalar(DimSub(n, 1), x.dtype())
          : var * (momentum_ * static_cast<double>(n) / static_cast<double>(n - 1));
  AssignInPlace(running_var_, running_var_ * (1 - momentum_) + unbiased);
  AssignInPlace(num_batches_tracked_, num_batches_tracked_ + 1.0);
  return r.y;
}

// ---- LayerNorm

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps)
    : normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  if (normalized_shape_.empty()) ThrowInvalid("LayerNorm: normalized_shape must not be empty");
  weight_ = register_parameter("weight", ones(normalized_shape_));
  bias_ = register_parameter("bias", zeros(normalized_shape_));
}

Tensor LayerNorm::forward(const Tensor& x) {
  const int64_t axis = x.dim() - static_cast<int64_t>(normalized_shape_.size());
  const bool fits = axis >= 0 && std::equal(normalized_shape_.begin(), normalized_shape_.end(),
                                            x.shape().begin() + std::max<int64_t>(axis, 0));
  if (!fits) {
    ThrowInvalid(absl::StrCat("LayerNorm: expected an input ending in dims ",
                              ShapeToString(normalized_shape_), ", got ", x.type().ToString()));
  }
  return layer_norm(x, weight_, bias_, axis, eps_).y;
}

// ---- Embedding

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator* gen) {
  RequirePositive("Embedding", "num_embeddings", num_embeddings);
  RequirePositive("Embedding", "embedding_dim", embedding_dim);
  weight_ = register_parameter("weight", randn({num_embeddings, embedding_dim}, DType::kF32, gen));
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight_, indices); }

// ---- Dropout

Dropout::Dropout(double p) : p_(p) {
  if (!(p >= 0 && p < 1)) ThrowInvalid(absl::StrCat("Dropout: p must be in [0, 1), got ", p));
}

Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p_ == 0) return x;
  return dropout(x, p_);
}

// ---- pooling

namespace {

Pool2dOptions PoolOptions(absl::string_view layer, int64_t kernel_size,
                          std::optional<int64_t> stride, int64_t padding) {
  RequirePositive(layer, "kernel_size", kernel_size);
  const int64_t s = stride.value_or(kernel_size);
  RequirePositive(layer, "stride", s);
  Pool2dOptions options;
  options.kernel = {kernel_size, kernel_size};
  options.stride = {s, s};
  options.padding = {padding, padding};
  return options;
}

}  // namespace

MaxPool2d::MaxPool2d(int64_t kernel_size, std::optional<int64_t> stride, int64_t padding)
    : options_(PoolOptions("MaxPool2d", kernel_size, stride, padding)) {}

AvgPool2d::AvgPool2d(int64_t kernel_size, std::optional<int64_t> stride, int64_t padding)
    : options_(PoolOptions("AvgPool2d", kernel_size, stride, padding)) {}

// ---- Flatten

Tensor Flatten::forward(const Tensor& x) {
  const int64_t rank = x.dim();
  const absl::StatusOr<int64_t> start_or = WrapDim(start_dim_, rank);
  const absl::StatusOr<int64_t> end_or = WrapDim(end_dim_, rank);
  const int64_t start = start_or.value_or(-1), end = end_or.value_or(-1);
  if (!start_or.ok() || !end_or.ok() || start > end) {
    ThrowInvalid(absl::StrCat("Flatten: dims [", start_dim_, ", ", end_dim_,
                              "] do not fit an input ", x.type().ToString()));
  }
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged = DimMul(merged, x.size(d));
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + end + 1, x.shape().end());
  return reshape(x, std::move(shape));
}

// ---- Sequential

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  modules_.push_back(register_module(absl::StrCat(modules_.size()), std::move(module)));
}

TensorTree Sequential::forward(const TensorTree& input) {
  TensorTree out = input;
  for (const auto& m : modules_) out = (*m)(out);
  return out;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor out = x;
  for (const auto& m : modules_) out = (*m)(out);
  return out;
}

}  // namespace tc::nn
