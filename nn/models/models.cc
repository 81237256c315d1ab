#include "nn/models/models.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nn/losses.h"
#include "nn/models/language_models.h"
#include "nn/models/mobilenet.h"
#include "nn/models/resnet.h"
#include "nn/models/unet.h"
#include "nn/models/vgg.h"

namespace tc::nn {
namespace {

using Modules = std::vector<std::shared_ptr<Module>>;

Tensor Leaf(const TensorTree& tree, absl::string_view what) {
  if (!tree.is_leaf()) {
    throw Error(absl::InvalidArgumentError(absl::StrCat("expected ", what, " to be one tensor")));
  }
  return tree.leaf();
}

// Cross-entropy of a single logits output against class-label targets.
Tensor ClassificationLoss(const TensorTree& outputs, const TensorTree& targets) {
  return cross_entropy(Leaf(outputs, "the outputs"), Leaf(targets, "the targets"));
}

Tensor Labels(int64_t n, int64_t num_classes, Generator* gen) {
  return cast(rand({n}, DType::kF32, gen, 0, static_cast<double>(num_classes)), DType::kI64);
}

TensorTree LeafOf(Tensor t) { return TensorTree::MakeLeaf(std::move(t)); }

// The seed's SimpleLinear: one Linear child named "linear".
class SimpleLinear : public Module {
 public:
  explicit SimpleLinear(Generator* gen)
      : linear_(register_module("linear", std::make_shared<Linear>(3, 2, true, gen))) {}
  Tensor forward(const Tensor& x) override { return (*linear_)(x); }

 private:
  std::shared_ptr<Linear> linear_;
};

ModelSpec MakeLinear(Generator* gen) {
  ModelSpec spec;
  spec.module = std::make_shared<SimpleLinear>(gen);
  spec.inputs = LeafOf(randn({4, 3}, DType::kF32, gen));
  return spec;
}

ModelSpec MakeConvBn(Generator* gen) {
  ModelSpec spec;
  spec.module = std::make_shared<Sequential>(
      Modules{std::make_shared<Conv2d>(1, 3, 3, 1, 1, 1, 1, true, gen),
              std::make_shared<BatchNorm2d>(3), std::make_shared<ReLU>()});
  spec.inputs = LeafOf(randn({2, 1, 4, 4}, DType::kF32, gen));
  return spec;
}

ModelSpec MakeStructured(Generator* gen) {
  ModelSpec spec;
  spec.module = std::make_shared<StructuredModel>(gen);
  spec.inputs = TensorTree::Dict({{"x", LeafOf(randn({4, 3}, DType::kF32, gen))},
                                  {"y", LeafOf(randn({4, 4}, DType::kF32, gen))}});
  return spec;
}

// The features-512-512-classes MLP, with Dropout(p) after each ReLU when p > 0.
ModelSpec MakeMlpWith(Generator* gen, double p, int64_t features = 784, int64_t classes = 10) {
  Modules layers;
  for (const auto& [in, out] : {std::pair<int64_t, int64_t>{features, 512}, {512, 512}}) {
    layers.push_back(std::make_shared<Linear>(in, out, true, gen));
    layers.push_back(std::make_shared<ReLU>());
    if (p > 0) layers.push_back(std::make_shared<Dropout>(p));
  }
  layers.push_back(std::make_shared<Linear>(512, classes, true, gen));
  ModelSpec spec;
  spec.module = std::make_shared<Sequential>(std::move(layers));
  spec.inputs = LeafOf(randn({128, features}, DType::kF32, gen));
  spec.targets = LeafOf(Labels(128, classes, gen));
  spec.loss = ClassificationLoss;
  return spec;
}

ModelSpec MakeMlp(Generator* gen) { return MakeMlpWith(gen, 0); }
ModelSpec MakeMlpDropout(Generator* gen) { return MakeMlpWith(gen, 0.2); }

ModelSpec MakeCnn(Generator* gen) {
  ModelSpec spec;
  spec.module = std::make_shared<Sequential>(Modules{
      std::make_shared<Conv2d>(3, 32, 3, 1, 1, 1, 1, true, gen), std::make_shared<BatchNorm2d>(32),
      std::make_shared<ReLU>(), std::make_shared<Conv2d>(32, 32, 3, 1, 1, 1, 1, true, gen),
      std::make_shared<BatchNorm2d>(32), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
      std::make_shared<Flatten>(), std::make_shared<Linear>(32 * 16 * 16, 10, true, gen)});
  spec.inputs = LeafOf(randn({32, 3, 32, 32}, DType::kF32, gen));
  spec.targets = LeafOf(Labels(32, 10, gen));
  spec.loss = ClassificationLoss;
  return spec;
}

ModelSpec MakeTransformerWith(Generator* gen, double dropout) {
  ModelSpec spec;
  spec.module = std::make_shared<TransformerBlock>(256, 4, 1024, gen, dropout);
  spec.inputs = LeafOf(randn({8, 128, 256}, DType::kF32, gen));
  return spec;
}

ModelSpec MakeTransformer(Generator* gen) { return MakeTransformerWith(gen, 0); }
ModelSpec MakeTransformerDropout(Generator* gen) { return MakeTransformerWith(gen, 0.1); }

// The zoo's CIFAR-size classifiers: a batch of 8 images of 3x32x32, 10 classes.
ModelSpec MakeCifarClassifier(std::shared_ptr<Module> module, Generator* gen) {
  ModelSpec spec;
  spec.module = std::move(module);
  spec.inputs = LeafOf(randn({8, 3, 32, 32}, DType::kF32, gen));
  spec.targets = LeafOf(Labels(8, 10, gen));
  spec.loss = ClassificationLoss;
  return spec;
}

ModelSpec MakeResNet18(Generator* gen) {
  return MakeCifarClassifier(std::make_shared<ResNet18>(10, gen), gen);
}
// A language model's example: random byte tokens of `shape`, and as many
// next-token targets.
ModelSpec MakeLanguageModel(std::shared_ptr<Module> module, std::vector<int64_t> shape,
                            Generator* gen) {
  const int64_t n = shape[0] * shape[1];
  ModelSpec spec;
  spec.module = std::move(module);
  spec.inputs = LeafOf(reshape(Labels(n, 256, gen), shape));
  spec.targets = LeafOf(reshape(Labels(n, 256, gen), shape));
  spec.loss = LanguageModelLoss;
  return spec;
}

ModelSpec MakeGpt(Generator* gen) {
  return MakeLanguageModel(std::make_shared<Gpt>(Gpt::Config{}, gen), {8, 64}, gen);
}
ModelSpec MakeLstm(Generator* gen) {
  return MakeLanguageModel(std::make_shared<LstmLanguageModel>(256, 128, 256, 2, gen), {32, 8},
                           gen);
}

// Segmentation: a class (of 2) per pixel, cross-entropy over dim 1.
ModelSpec MakeUNet(Generator* gen) {
  ModelSpec spec;
  spec.module = std::make_shared<UNet>(/*in_channels=*/3, /*num_classes=*/2, /*width=*/16, gen);
  spec.inputs = LeafOf(randn({8, 3, 32, 32}, DType::kF32, gen));
  spec.targets = LeafOf(reshape(Labels(8 * 32 * 32, 2, gen), {8, 32, 32}));
  spec.loss = ClassificationLoss;
  return spec;
}

ModelSpec MakeMobileNetV2(Generator* gen) {
  return MakeCifarClassifier(std::make_shared<MobileNetV2>(10, gen), gen);
}
ModelSpec MakeVgg11(Generator* gen) {
  return MakeCifarClassifier(std::make_shared<Vgg11>(10, gen), gen);
}

struct Entry {
  const char* name;
  const char* description;
  ModelSpec (*make)(Generator*);
};

constexpr Entry kModels[] = {
    {"linear", "the seed's SimpleLinear: Linear(3, 2) on f32[4,3]", &MakeLinear},
    {"convbn", "Conv2d(1, 3, 3, p1)-BatchNorm2d-ReLU on f32[2,1,4,4]", &MakeConvBn},
    {"structured", "dict {x, y} in, tuple (a+b, a-b, a*b) out, two Linear layers", &MakeStructured},
    {"mlp", "784-512-512-10 MLP with ReLU, cross-entropy", &MakeMlp},
    {"mlp_dropout", "the mlp with Dropout(0.2) after each ReLU", &MakeMlpDropout},
    {"cnn",
     "two Conv-BN-ReLU blocks, max-pool, Linear(8192, 10), batch 32 of 3x32x32, "
     "cross-entropy",
     &MakeCnn},
    {"transformer", "pre-LN encoder block, d_model 256, 4 heads, MLP 1024, batch 8 x 128",
     &MakeTransformer},
    {"transformer_dropout",
     "the transformer with dropout 0.1 on the attention weights and both residual branches",
     &MakeTransformerDropout},
};

constexpr Entry kZooModels[] = {
    {"resnet18", "torchvision's ResNet-18, 10 classes, batch 8 of 3x32x32, cross-entropy",
     &MakeResNet18},
    {"vgg11", "torchvision's VGG-11 with BatchNorm, a 512-512 head, batch 8 of 3x32x32",
     &MakeVgg11},
    {"mobilenetv2",
     "torchvision's MobileNetV2: depthwise convolutions, inverted residuals, batch 8 of 3x32x32",
     &MakeMobileNetV2},
    {"unet",
     "a U-Net of width 16: 4 pooling and 4 upsampling stages joined by skips, 2 classes a pixel, "
     "batch 8 of 3x32x32",
     &MakeUNet},
    {"gpt", "a 4-layer GPT-style decoder over bytes, d_model 128, causal, tied embeddings, 8 x 64",
     &MakeGpt},
    {"lstm", "an LSTM language model over bytes: Embedding 128, 2 x LSTM 256, 32 steps x 8",
     &MakeLstm},
};

}  // namespace

Tensor MeanSquareLoss(const TensorTree& outputs, const TensorTree&) {
  Tensor total;
  outputs.ForEachLeaf([&](const Tensor& t) {
    Tensor term = mean(t * t);
    total = total.defined() ? total + term : term;
  });
  if (!total.defined()) {
    throw Error(absl::InvalidArgumentError("MeanSquareLoss: the outputs hold no tensor"));
  }
  return total;
}

StructuredModel::StructuredModel(Generator* gen)
    : linear1_(register_module("linear1", std::make_shared<Linear>(3, 2, true, gen))),
      linear2_(register_module("linear2", std::make_shared<Linear>(4, 2, true, gen))) {}

TensorTree StructuredModel::forward(const TensorTree& input) {
  const TensorTree* x = input.Find("x");
  const TensorTree* y = input.Find("y");
  if (input.kind() != TreeKind::kDict || x == nullptr || y == nullptr || !x->is_leaf() ||
      !y->is_leaf()) {
    throw Error(absl::InvalidArgumentError(
        "StructuredModel: expected a dict {\"x\": tensor, \"y\": tensor}"));
  }
  Tensor a = (*linear1_)(x->leaf());
  Tensor b = (*linear2_)(y->leaf());
  return TensorTree::Tuple({LeafOf(a + b), LeafOf(a - b), LeafOf(a * b)});
}

TransformerBlock::TransformerBlock(int64_t d_model, int64_t num_heads, int64_t d_mlp,
                                   Generator* gen, double dropout, bool causal)
    : ln1_(register_module("ln1", std::make_shared<LayerNorm>(std::vector<int64_t>{d_model}))),
      attn_(register_module(
          "attn", std::make_shared<MultiheadAttention>(d_model, num_heads, causal, gen, dropout))),
      ln2_(register_module("ln2", std::make_shared<LayerNorm>(std::vector<int64_t>{d_model}))),
      mlp_(register_module(
          "mlp", std::make_shared<Sequential>(Modules{
                     std::make_shared<Linear>(d_model, d_mlp, true, gen), std::make_shared<GELU>(),
                     std::make_shared<Linear>(d_mlp, d_model, true, gen)}))),
      dropout_(dropout) {}

Tensor TransformerBlock::forward(const Tensor& x) {
  auto drop = [&](const Tensor& t) {
    return is_training() && dropout_ > 0 ? tc::dropout(t, dropout_) : t;
  };
  Tensor h = x + drop((*attn_)((*ln1_)(x)));
  return h + drop((*mlp_)((*ln2_)(h)));
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const Entry& e : kModels) names.push_back(e.name);
  return names;
}

std::vector<std::string> ZooModelNames() {
  std::vector<std::string> names;
  for (const Entry& e : kZooModels) names.push_back(e.name);
  return names;
}

absl::StatusOr<ModelSpec> MakeModel(absl::string_view name, uint64_t seed) {
  const auto found = [&](const Entry& e) { return name == e.name; };
  const Entry* entry = std::find_if(std::begin(kModels), std::end(kModels), found);
  if (entry == std::end(kModels)) {
    entry = std::find_if(std::begin(kZooModels), std::end(kZooModels), found);
    if (entry == std::end(kZooModels)) {
      return absl::NotFoundError(absl::StrCat(
          "unknown model \"", name, "\"; known models: ", absl::StrJoin(ModelNames(), ", "),
          "; in the zoo: ", absl::StrJoin(ZooModelNames(), ", ")));
    }
  }
  Generator gen(seed);
  ModelSpec spec = entry->make(&gen);
  spec.name = entry->name;
  spec.description = entry->description;
  if (!spec.loss) spec.loss = MeanSquareLoss;
  return spec;
}

absl::StatusOr<ModelSpec> MakeClassifierFor(absl::string_view name, uint64_t seed, int64_t features,
                                            int64_t classes) {
  if (name != "mlp" && name != "mlp_dropout") {
    return absl::InvalidArgumentError(absl::StrCat(
        "model \"", name, "\" takes no data of its own; the mlp models (mlp, mlp_dropout) do"));
  }
  if (features < 1 || classes < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a classifier needs at least 1 feature and 2 classes, got ", features, " and ", classes));
  }
  Generator gen(seed);
  ModelSpec spec = MakeMlpWith(&gen, name == "mlp" ? 0 : 0.2, features, classes);
  spec.name = std::string(name);
  spec.description = absl::StrCat(features, "-512-512-", classes, " MLP with ReLU",
                                  name == "mlp" ? "" : " and Dropout(0.2)", ", cross-entropy");
  return spec;
}

}  // namespace tc::nn
