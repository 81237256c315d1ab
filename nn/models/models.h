// Reference models: small, fixed architectures with example inputs and a
// loss, used by the tests, the benchmarks and the command-line tool to
// exercise the whole stack on the same programs.
//
//   absl::StatusOr<nn::ModelSpec> spec = nn::MakeModel("cnn", /*seed=*/0);
//   TensorTree out = (*spec->module)(spec->inputs);
//   Tensor loss = spec->loss(out, spec->targets);
//
// The models and their parameter names (in registration order):
//   linear       SimpleLinear, a Linear(3, 2) child "linear"; input f32[4,3].
//                "linear.weight", "linear.bias".
//   convbn       Sequential(Conv2d(1, 3, 3, padding 1), BatchNorm2d(3), ReLU);
//                input f32[2,1,4,4]. "0.weight", "0.bias", "1.weight", "1.bias";
//                buffers "1.running_mean", "1.running_var", "1.num_batches_tracked".
//   structured   StructuredModel: {"x": f32[4,3], "y": f32[4,4]} -> (a + b, a - b, a * b)
//                with a = linear1(x), b = linear2(y). "linear1.weight", "linear1.bias",
//                "linear2.weight", "linear2.bias".
//   mlp          Sequential(Linear(784, 512), ReLU, Linear(512, 512), ReLU, Linear(512, 10));
//                input f32[128,784], targets i64[128] class labels, cross-entropy.
//                "0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias".
//   mlp_dropout  the mlp with Dropout(0.2) after each ReLU: "0.weight", "0.bias", "3.weight",
//                "3.bias", "6.weight", "6.bias".
//   cnn          Sequential(Conv2d(3, 32, 3, p 1), BatchNorm2d(32), ReLU, Conv2d(32, 32, 3, p 1),
//                BatchNorm2d(32), ReLU, MaxPool2d(2), Flatten, Linear(8192, 10)); input
//                f32[32,3,32,32], targets i64[32], cross-entropy. "0.weight", "0.bias",
//                "1.weight", "1.bias", "3.weight", "3.bias", "4.weight", "4.bias",
//                "8.weight", "8.bias"; buffers "1.running_mean", "1.running_var",
//                "1.num_batches_tracked", and the same under "4.".
//   transformer  TransformerBlock(256, 4 heads, MLP 1024); input f32[8,128,256]. "ln1.weight",
//                "ln1.bias", "attn.in_proj_weight", "attn.in_proj_bias", "attn.out_proj.weight",
//                "attn.out_proj.bias", "ln2.weight", "ln2.bias", "mlp.0.weight", "mlp.0.bias",
//                "mlp.2.weight", "mlp.2.bias".
//   transformer_dropout  the transformer with dropout 0.1 on the attention weights and both
//                residual branches; the same names.
// Models without targets (linear, convbn, structured, the transformers) use the
// loss "sum over output tensors of mean(out^2)" and targets None.
//
// The zoo: architectures research on rematerialization compares, with
// PyTorch's structure and names, sized for CIFAR (3x32x32 images, batch 8,
// 10 classes, cross-entropy):
//   resnet18     torchvision's ResNet-18 (nn/models/resnet.h)
//   vgg11        torchvision's VGG-11 features with BatchNorm and a 512-wide
//                head (nn/models/vgg.h)
//   mobilenetv2  torchvision's MobileNetV2 (nn/models/mobilenet.h)
//   unet         a U-Net of width 16 (nn/models/unet.h), segmenting into 2
//                classes a pixel: targets i64[8,32,32]
// and two language models over 256 byte tokens, cross-entropy against the
// next tokens (nn/models/language_models.h):
//   gpt          a 4-layer GPT-style decoder, d_model 128, 4 heads, causal
//                attention, tied embeddings; tokens i64[8,64]
//   lstm         Embedding(256, 128), a 2-layer LSTM(128, 256), Linear(256,
//                256), as PyTorch's word-language-model example; tokens i64[32,8]
#ifndef TENSORCUT_NN_MODELS_MODELS_H_
#define TENSORCUT_NN_MODELS_MODELS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nn/attention.h"
#include "nn/layers.h"
#include "nn/module.h"

namespace tc::nn {

using LossFn = std::function<Tensor(const TensorTree& outputs, const TensorTree& targets)>;

struct ModelSpec {
  std::string name;
  std::string description;  // one line
  std::shared_ptr<Module> module;
  TensorTree inputs;   // the example input, as the module's forward takes it
  TensorTree targets;  // None when the loss needs none
  LossFn loss;         // a scalar from the module's outputs and `targets`
};

// The reference models' names, and the zoo's, each in a fixed order. Both
// are made by MakeModel.
std::vector<std::string> ModelNames();
std::vector<std::string> ZooModelNames();

// A fresh model with parameters and example inputs drawn from Generator(seed);
// NotFound (listing the known names) for an unknown name.
absl::StatusOr<ModelSpec> MakeModel(absl::string_view name, uint64_t seed);

// The mlp-style model `name` (mlp, mlp_dropout) sized for a dataset:
// `features` inputs per example, `classes` outputs, cross-entropy; an error
// for another model or sizes that make no classifier.
absl::StatusOr<ModelSpec> MakeClassifierFor(absl::string_view name, uint64_t seed, int64_t features,
                                            int64_t classes);

// The sum over output tensors of mean(out^2): the loss of the models
// without targets.
Tensor MeanSquareLoss(const TensorTree& outputs, const TensorTree& targets);

// The `structured` model: a dict in, a tuple out.
class StructuredModel : public Module {
 public:
  explicit StructuredModel(Generator* gen = nullptr);
  // {"x": [N, 3], "y": [N, 4]} -> (a + b, a - b, a * b), a = linear1(x), b = linear2(y).
  TensorTree forward(const TensorTree& input) override;
  using Module::forward;

 private:
  std::shared_ptr<Linear> linear1_, linear2_;
};

// A pre-LayerNorm transformer encoder block:
//   h = x + drop(attn(ln1(x)));  out = h + drop(mlp(ln2(h))),  mlp = Linear, GELU, Linear,
// with `dropout` (0 by default: drop is the identity) on both residual branches
// and on the attention weights, in training.
class TransformerBlock : public Module {
 public:
  // causal: each position attends to itself and earlier ones (a decoder's).
  TransformerBlock(int64_t d_model, int64_t num_heads, int64_t d_mlp, Generator* gen = nullptr,
                   double dropout = 0, bool causal = false);
  Tensor forward(const Tensor& x) override;
  using Module::forward;

 private:
  std::shared_ptr<LayerNorm> ln1_;
  std::shared_ptr<MultiheadAttention> attn_;
  std::shared_ptr<LayerNorm> ln2_;
  std::shared_ptr<Sequential> mlp_;
  double dropout_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_MODELS_MODELS_H_
