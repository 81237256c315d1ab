// The reference models: registry, parameter names and order, example inputs,
// reproducibility, a forward and backward pass of each, and the mlp learning
// a synthetic problem with plain SGD.
#include "nn/models/models.h"

#include <algorithm>
#include <map>

#include "nn/losses.h"
#include "runtime/autograd_meta.h"
#include "tests/nn/nn_test_util.h"

namespace tc {
namespace {

using testing::Names;
using Strings = std::vector<std::string>;

nn::ModelSpec Make(absl::string_view name, uint64_t seed = 0) {
  absl::StatusOr<nn::ModelSpec> spec = nn::MakeModel(name, seed);
  REQUIRE(spec.ok());
  return *std::move(spec);
}

TEST_CASE("the registry lists every model and rejects unknown names") {
  CHECK(nn::ModelNames() == Strings{"linear", "convbn", "structured", "mlp", "mlp_dropout", "cnn",
                                    "transformer", "transformer_dropout"});
  absl::StatusOr<nn::ModelSpec> missing = nn::MakeModel("resnet", 0);
  REQUIRE(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(missing.status().message() ==
        "unknown model \"resnet\"; known models: linear, convbn, structured, mlp, mlp_dropout, "
        "cnn, transformer, transformer_dropout; in the zoo: resnet18, vgg11, mobilenetv2, unet, "
        "gpt, lstm");
}

TEST_CASE("reference models have the documented parameter and buffer names, in order") {
  const std::map<std::string, std::pair<Strings, Strings>> expected = {
      {"linear", {{"linear.weight", "linear.bias"}, {}}},
      {"convbn",
       {{"0.weight", "0.bias", "1.weight", "1.bias"},
        {"1.running_mean", "1.running_var", "1.num_batches_tracked"}}},
      {"structured", {{"linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"}, {}}},
      {"mlp", {{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"}, {}}},
      {"mlp_dropout", {{"0.weight", "0.bias", "3.weight", "3.bias", "6.weight", "6.bias"}, {}}},
      {"cnn",
       {{"0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias", "4.weight", "4.bias",
         "8.weight", "8.bias"},
        {"1.running_mean", "1.running_var", "1.num_batches_tracked", "4.running_mean",
         "4.running_var", "4.num_batches_tracked"}}},
      {"transformer",
       {{"ln1.weight", "ln1.bias", "attn.in_proj_weight", "attn.in_proj_bias",
         "attn.out_proj.weight", "attn.out_proj.bias", "ln2.weight", "ln2.bias", "mlp.0.weight",
         "mlp.0.bias", "mlp.2.weight", "mlp.2.bias"},
        {}}},
      {"transformer_dropout",
       {{"ln1.weight", "ln1.bias", "attn.in_proj_weight", "attn.in_proj_bias",
         "attn.out_proj.weight", "attn.out_proj.bias", "ln2.weight", "ln2.bias", "mlp.0.weight",
         "mlp.0.bias", "mlp.2.weight", "mlp.2.bias"},
        {}}},
  };
  for (const std::string& name : nn::ModelNames()) {
    INFO(name);
    nn::ModelSpec spec = Make(name);
    CHECK(spec.name == name);
    CHECK_FALSE(spec.description.empty());
    // The mlps train on their data's batches (train --batch), not the
    // example's, so their descriptions (train's banner) name no batch.
    if (name.rfind("mlp", 0) == 0) CHECK(spec.description.find("batch") == std::string::npos);
    CHECK(Names(spec.module->named_parameters()) == expected.at(name).first);
    CHECK(Names(spec.module->named_buffers()) == expected.at(name).second);
  }
}

TEST_CASE("parameter shapes and example inputs are as documented") {
  auto shape_of = [](const nn::ModelSpec& spec, const std::string& param) {
    for (const auto& [n, t] : spec.module->named_parameters()) {
      if (n == param) return t.shape();
    }
    FAIL("no parameter " << param);
    return Shape{};
  };
  CHECK(shape_of(Make("cnn"), "8.weight") == Shape{10, 8192});
  CHECK(shape_of(Make("cnn"), "3.weight") == Shape{32, 32, 3, 3});
  CHECK(shape_of(Make("mlp"), "0.weight") == Shape{512, 784});
  CHECK(shape_of(Make("transformer"), "attn.in_proj_weight") == Shape{768, 256});
  CHECK(shape_of(Make("transformer"), "mlp.0.weight") == Shape{1024, 256});
  CHECK(Make("cnn").inputs.leaf().shape() == Shape{32, 3, 32, 32});
  CHECK(Make("cnn").targets.leaf().type() == TensorType{DType::kI64, {32}});
  CHECK(Make("mlp").inputs.leaf().shape() == Shape{128, 784});
  CHECK(Make("transformer").inputs.leaf().shape() == Shape{8, 128, 256});
  CHECK(Make("transformer").targets.kind() == TreeKind::kNone);
  const nn::ModelSpec structured = Make("structured");
  REQUIRE(structured.inputs.keys() == Strings{"x", "y"});
  CHECK(structured.inputs.Find("y")->leaf().shape() == Shape{4, 4});
  for (int64_t label : Make("mlp").targets.leaf().to_vector<int64_t>()) {
    REQUIRE(label >= 0);
    REQUIRE(label < 10);
  }
}

TEST_CASE("a seed fixes parameters and inputs") {
  nn::ModelSpec a = Make("convbn", 3), b = Make("convbn", 3), c = Make("convbn", 4);
  const auto pa = a.module->parameters(), pb = b.module->parameters(), pc = c.module->parameters();
  for (size_t i = 0; i < pa.size(); ++i) REQUIRE_TENSORS_CLOSE(pa[i], pb[i], 0, 0);
  REQUIRE_TENSORS_CLOSE(a.inputs.leaf(), b.inputs.leaf(), 0, 0);
  CHECK_FALSE(testing::CompareTensors(pa[0], pc[0], 0, 0).empty());
}

TEST_CASE("structured maps a dict to the tuple (a + b, a - b, a * b)") {
  nn::ModelSpec spec = Make("structured");
  const auto params = spec.module->parameters();  // linear1.{w,b}, linear2.{w,b}
  Tensor x = spec.inputs.Find("x")->leaf(), y = spec.inputs.Find("y")->leaf();
  Tensor a = matmul(x, transpose(params[0], 0, 1)) + params[1];
  Tensor b = matmul(y, transpose(params[2], 0, 1)) + params[3];
  TensorTree out = (*spec.module)(spec.inputs);
  REQUIRE(out.kind() == TreeKind::kTuple);
  REQUIRE(out.items().size() == 3);
  REQUIRE_TENSORS_CLOSE(out[0].leaf(), a + b, 1e-6, 1e-6);
  REQUIRE_TENSORS_CLOSE(out[1].leaf(), a - b, 1e-6, 1e-6);
  REQUIRE_TENSORS_CLOSE(out[2].leaf(), a * b, 1e-6, 1e-6);
  // The default loss: the sum over outputs of mean(out^2).
  Tensor want = mean(out[0].leaf() * out[0].leaf()) + mean(out[1].leaf() * out[1].leaf()) +
                mean(out[2].leaf() * out[2].leaf());
  REQUIRE_TENSORS_CLOSE(spec.loss(out, spec.targets), want, 1e-6, 1e-6);
  CHECK_THROWS_WITH((*spec.module)(spec.inputs[0]),
                    "StructuredModel: expected a dict {\"x\": tensor, \"y\": tensor}");
}

TEST_CASE("every model runs forward and backward to a gradient on each parameter") {
  for (const std::string& name : nn::ModelNames()) {
    INFO(name);
    nn::ModelSpec spec = Make(name);
    TensorTree out = (*spec.module)(spec.inputs);
    Tensor loss = spec.loss(out, spec.targets);
    REQUIRE(loss.dim() == 0);
    REQUIRE(std::isfinite(loss.item<float>()));
    loss.backward();
    for (const auto& [param, t] : spec.module->named_parameters()) {
      INFO(param);
      REQUIRE(t.grad().defined());
      REQUIRE(t.grad().shape() == t.shape());
    }
  }
  // Classification models use cross-entropy on the targets.
  nn::ModelSpec mlp = Make("mlp");
  Tensor logits = (*mlp.module)(mlp.inputs).leaf();
  REQUIRE_TENSORS_CLOSE(mlp.loss(TensorTree::MakeLeaf(logits), mlp.targets),
                        nn::cross_entropy(logits, mlp.targets.leaf()), 0, 0);
}

TEST_CASE("the mlp learns labels from a random linear teacher with plain SGD") {
  nn::ModelSpec spec = Make("mlp", 1);
  nn::Module& model = *spec.module;
  Generator gen(2);
  const int64_t n = 128;
  Tensor x = randn({n, 784}, DType::kF32, &gen);
  Tensor teacher = randn({784, 10}, DType::kF32, &gen);
  Tensor labels = argmax(matmul(x, teacher), 1);
  const TensorList params = model.parameters();

  auto loss_fn = [&] { return nn::cross_entropy(model(x), labels); };
  const float first = loss_fn().item<float>();
  float last = first;
  for (int step = 0; step < 60 && last * 10 >= first; ++step) {
    Tensor loss = loss_fn();
    last = loss.item<float>();
    const TensorList g = grad({loss}, params).value();
    NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor updated = params[i] - g[i] * 0.1;
      std::copy_n(updated.data<float>(), updated.numel(), params[i].data<float>());
    }
  }
  last = loss_fn().item<float>();
  INFO("loss " << first << " -> " << last);
  CHECK(last * 10 < first);
}

}  // namespace
}  // namespace tc
