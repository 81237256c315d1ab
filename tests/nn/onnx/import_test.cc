// ONNX import: models built here from C++ (tests/nn/onnx/onnx_builder.h)
// imported and compared with tensorcut's own modules holding the same
// weights (outputs, gradients, running statistics), every operator's
// gradient against finite differences in f64 and its compiled function
// against eager (tests/nn/layer_check.h), and every kind of bad file giving
// an error that names the file and the node, initializer or input.
#include "nn/onnx/import.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "nn/activations.h"
#include "nn/conv.h"
#include "nn/layers.h"
#include "nn/normalization.h"
#include "nn/onnx/export.h"
#include "nn/optim.h"
#include "nn/pooling.h"
#include "runtime/ops.h"
#include "tests/nn/layer_check.h"
#include "tests/nn/onnx/onnx_builder.h"
#include "tests/test_util.h"

namespace tc::onnx {
namespace {

using testing::OnnxBuilder;

std::shared_ptr<ImportedModule> ImportOrFail(const OnnxBuilder& model) {
  absl::StatusOr<std::shared_ptr<ImportedModule>> imported = ImportFromString(model.Bytes());
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  return *imported;
}

std::string ImportError(const OnnxBuilder& model) {
  return std::string(ImportFromString(model.Bytes(), "m.onnx").status().message());
}

std::vector<std::string> Names(const nn::NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  return names;
}

// The gradients of sum(y * r) for every parameter, by name.
nn::NamedTensors Gradients(nn::Module& module, const Tensor& y, const Tensor& r) {
  module.zero_grad();
  sum(y * r).backward();
  nn::NamedTensors grads;
  for (const auto& [name, p] : module.named_parameters()) grads.emplace_back(name, p.grad());
  return grads;
}

void CheckSameGradients(const nn::NamedTensors& actual, const nn::NamedTensors& expected) {
  for (const auto& [name, g] : expected) {
    const auto it = std::find_if(actual.begin(), actual.end(),
                                 [&name = name](const auto& entry) { return entry.first == name; });
    REQUIRE(it != actual.end());
    INFO(name);
    CHECK(testing::CompareTensors(it->second, g, 1e-12, 1e-12) == "");
  }
}

// PyTorch's nn.Sequential(Linear(6, 5), ReLU(), Linear(5, 3)) as its ONNX
// export writes it: Gemm with transB = 1, initializers under state_dict names.
OnnxBuilder MlpModel(const nn::Module& reference) {
  OnnxBuilder model;
  model.Input("x", DType::kF64, {"N", int64_t{6}});
  for (const auto& [name, t] : reference.state_dict()) model.Initializer(name, t);
  model.Node("Gemm", {"x", "0.weight", "0.bias"}, {"h"}, "fc1").Int("transB", 1);
  model.Node("Relu", {"h"}, {"a"});
  model.Node("Gemm", {"a", "2.weight", "2.bias"}, {"y"}, "fc2").Int("transB", 1);
  model.Output("y", DType::kF64);
  return model;
}

std::shared_ptr<nn::Sequential> NativeMlp() {
  auto mlp = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(6, 5), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(5, 3)});
  mlp->to(DType::kF64);
  return mlp;
}

TEST_CASE("an imported MLP has the state_dict names, outputs and gradients of the native one") {
  auto native = NativeMlp();
  auto imported = ImportOrFail(MlpModel(*native));
  CHECK(Names(imported->state_dict()) ==
        std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(imported->inputs().at(0).shape.at(0).name == "N");
  const Tensor x = testing::Random({4, 6}, DType::kF64, 1);
  const Tensor r = testing::Random({4, 3}, DType::kF64, 2);
  const Tensor y = (*imported)(x);
  const Tensor expected = (*native)(x);
  CHECK(testing::CompareTensors(y, expected, 0, 0) == "");
  CheckSameGradients(Gradients(*imported, y, r), Gradients(*native, (*native)(x), r));
  testing::CheckLayer([&] { return std::shared_ptr<nn::Module>(ImportOrFail(MlpModel(*native))); },
                      testing::RandomInput({3, 6}, 3));
}

// conv (padding 1) -> batch norm -> relu -> max pool 2 -> flatten -> linear,
// PyTorch's layer names.
class NativeCnn : public nn::Module {
 public:
  NativeCnn()
      : conv(register_module("0", std::make_shared<nn::Conv2d>(2, 3, 3, 1, 1))),
        norm(register_module("1", std::make_shared<nn::BatchNorm2d>(3))),
        fc(register_module("5", std::make_shared<nn::Linear>(12, 4))) {
    to(DType::kF64);
  }
  Tensor forward(const Tensor& x) override {
    const Tensor h = max_pool2d(relu((*norm)((*conv)(x))), {.kernel = {2, 2}, .stride = {2, 2}});
    return (*fc)(reshape(h, {h.size(0), -1}));
  }
  using Module::forward;
  std::shared_ptr<nn::Conv2d> conv;
  std::shared_ptr<nn::BatchNorm2d> norm;
  std::shared_ptr<nn::Linear> fc;
};

// As PyTorch exports the CNN with training=TrainingMode.TRAINING at opset 15.
OnnxBuilder CnnModel(const nn::Module& reference) {
  OnnxBuilder model(15);
  model.Input("images", DType::kF64, {"N", int64_t{2}, int64_t{4}, int64_t{4}});
  for (const auto& [name, t] : reference.state_dict()) {
    if (name != "1.num_batches_tracked") model.Initializer(name, t);
  }
  model.Node("Conv", {"images", "0.weight", "0.bias"}, {"c"}, "conv")
      .Ints("kernel_shape", {3, 3})
      .Ints("pads", {1, 1, 1, 1})
      .Ints("strides", {1, 1});
  model
      .Node("BatchNormalization", {"c", "1.weight", "1.bias", "1.running_mean", "1.running_var"},
            {"n", "1.running_mean_out", "1.running_var_out"}, "norm")
      .Float("epsilon", 1e-5)
      .Float("momentum", 0.9)
      .Int("training_mode", 1);
  model.Node("Relu", {"n"}, {"a"});
  model.Node("MaxPool", {"a"}, {"p"}, "pool").Ints("kernel_shape", {2, 2}).Ints("strides", {2, 2});
  model.Node("Flatten", {"p"}, {"f"}).Int("axis", 1);
  model.Node("Gemm", {"f", "5.weight", "5.bias"}, {"logits"}, "fc").Int("transB", 1);
  model.Output("logits", DType::kF64);
  return model;
}

TEST_CASE("an imported CNN trains as the native one: batch and running statistics included") {
  NativeCnn native;
  auto imported = ImportOrFail(CnnModel(native));
  CHECK(Names(imported->named_buffers()) ==
        std::vector<std::string>{"1.running_mean", "1.running_var"});
  const Tensor x = testing::Random({2, 2, 4, 4}, DType::kF64, 4) * 2.0 + 1.0;
  const Tensor r = testing::Random({2, 4}, DType::kF64, 5);
  const Tensor y = (*imported)(x);
  const Tensor expected = native(x);
  CHECK(testing::CompareTensors(y, expected, 1e-12, 1e-12) == "");
  // The forward updated both modules' running statistics alike, but for the
  // momentum, which an ONNX attribute holds as a float (1 - 0.9f is 0.1 + 2.4e-8).
  for (int i : {0, 1}) {
    CHECK(testing::CompareTensors(imported->named_buffers()[i].second,
                                  native.norm->named_buffers()[i].second, 1e-6, 0) == "");
  }
  CheckSameGradients(Gradients(*imported, y, r), Gradients(native, expected, r));
  imported->eval();
  native.eval();
  CHECK(testing::CompareTensors((*imported)(x), native(x), 1e-7, 1e-9) == "");
  testing::CheckLayer([&] { return std::shared_ptr<nn::Module>(ImportOrFail(CnnModel(native))); },
                      testing::RandomInput({3, 2, 4, 4}, 6));
}

// Every other operator once, in one f64 model over x [2, 3, 4, 4], against
// the same computation written with tensorcut's ops.
TEST_CASE("elementwise, layout, pooling and constant operators compute what the spec says") {
  OnnxBuilder model(13);
  model.Input("x", DType::kF64, {int64_t{2}, int64_t{3}, int64_t{4}, int64_t{4}});
  const Tensor w = testing::Random({3, 2}, DType::kF64, 7);
  model.Initializer("w", w);
  model.Initializer("shape", from_vector<int64_t>({0, -1, 4}, {3}));
  model.Initializer("axes", from_vector<int64_t>({1}, {1}));
  model.Node("Constant", {}, {"two"}).TensorValue("value", full({}, 2.0, DType::kF64));
  model.Node("Constant", {}, {"half"}).TensorValue("value", full({}, 0.5, DType::kF64));
  model.Node("Mul", {"x", "x"}, {"xx"});
  model.Node("Add", {"xx", "two"}, {"a"});
  model.Node("Sqrt", {"a"}, {"s"});
  model.Node("Log", {"s"}, {"l"});
  model.Node("Pow", {"l", "two"}, {"p"});
  model.Node("Sigmoid", {"x"}, {"sg"});
  model.Node("Tanh", {"x"}, {"th"});
  model.Node("Sub", {"sg", "th"}, {"d"});
  model.Node("Abs", {"d"}, {"ab"});
  model.Node("Neg", {"ab"}, {"ng"});
  model.Node("Exp", {"ng"}, {"ex"});
  model.Node("Div", {"p", "ex"}, {"q"});
  model.Node("LeakyRelu", {"x"}, {"lr"}).Float("alpha", 0.25);
  model.Node("Mul", {"lr", "half"}, {"lh"});
  model.Node("Erf", {"x"}, {"er"});
  model.Node("Add", {"q", "lh"}, {"qlh"});
  model.Node("Add", {"qlh", "er"}, {"e"});
  model.Node("AveragePool", {"e"}, {"ap"}).Ints("kernel_shape", {2, 2}).Ints("strides", {2, 2});
  model.Node("GlobalAveragePool", {"e"}, {"gp"});
  model.Node("Add", {"ap", "gp"}, {"pooled"});                      // [2, 3, 2, 2]
  model.Node("Reshape", {"pooled", "shape"}, {"rs"});               // [2, 3, 4]
  model.Node("Transpose", {"rs"}, {"tr"}).Ints("perm", {0, 2, 1});  // [2, 4, 3]
  model.Node("MatMul", {"tr", "w"}, {"mm"}, "matmul");              // [2, 4, 2]
  model.Node("Softmax", {"mm"}, {"sm"}).Int("axis", 1);
  model.Node("LogSoftmax", {"mm"}, {"lsm"}).Int("axis", -1);
  model.Node("Concat", {"sm", "lsm"}, {"cat"}).Int("axis", 2);  // [2, 4, 4]
  model.Node("Unsqueeze", {"cat", "axes"}, {"us"});             // [2, 1, 4, 4]
  model.Node("Squeeze", {"us", "axes"}, {"sq"});
  model.Node("Dropout", {"sq"}, {"dr"});
  model.Node("Identity", {"dr"}, {"y"});
  model.Output("y", DType::kF64);

  auto imported = ImportOrFail(model);
  CHECK(Names(imported->named_parameters()) == std::vector<std::string>{"w"});
  const Tensor x = testing::Random({2, 3, 4, 4}, DType::kF64, 8);
  const Tensor p = pow(log(sqrt(x * x + 2.0)), 2.0);
  const Tensor q = p / exp(-abs(sigmoid(x) - tanh(x)));
  const Tensor e = q + nn::leaky_relu(x, 0.25) * 0.5 + erf(x);
  const Tensor pooled = avg_pool2d(e, {.kernel = {2, 2}, .stride = {2, 2}}) + mean(e, {2, 3}, true);
  const Tensor mm = matmul(transpose(reshape(pooled, {2, 3, 4}), 1, 2), w);
  const Tensor expected = concat({softmax(mm, 1), log_softmax(mm, 2)}, 2);
  CHECK(testing::CompareTensors((*imported)(x), expected, 1e-12, 1e-12) == "");
  testing::CheckLayer([&] { return std::shared_ptr<nn::Module>(ImportOrFail(model)); },
                      testing::RandomInput({2, 3, 4, 4}, 9));
}

// The indexing, comparison, reduction and padding operators, in one f64
// model over x [2, 3, 4] and row indices computed outside it.
OnnxBuilder IndexingModel(const Tensor& table) {
  OnnxBuilder model(13);
  model.Input("x", DType::kF64, {int64_t{2}, int64_t{3}, int64_t{4}});
  model.Input("rows", DType::kI64, {int64_t{5}});
  model.Initializer("table", table);
  model.Initializer("split", from_vector<int64_t>({1, 3}, {2}));
  model.Initializer("starts", from_vector<int64_t>({1, -3}, {2}));
  model.Initializer("ends", from_vector<int64_t>({3, std::numeric_limits<int64_t>::max()}, {2}));
  model.Initializer("axes", from_vector<int64_t>({1, 2}, {2}));
  model.Initializer("pads", from_vector<int64_t>({0, 1, 0, 0, 0, 1}, {6}));
  model.Initializer("wide", from_vector<int64_t>({2, 3, 4}, {3}));
  model.Initializer("index", from_vector<int64_t>({2, 0}, {2}));
  model.Node("Constant", {}, {"one"}).TensorValue("value", full({}, 1.0, DType::kF64));
  model.Node("Gather", {"table", "rows"}, {"emb"});                      // [5, 4]
  model.Node("ReduceSum", {"emb"}, {"emb_sum"}).Int("keepdims", 0);      // []
  model.Node("Gather", {"x", "index"}, {"picked"}).Int("axis", 1);       // [2, 2, 4]
  model.Node("Split", {"x", "split"}, {"s1", "s3"}).Int("axis", 2);      // [2,3,1] [2,3,3]
  model.Node("Slice", {"x", "starts", "ends", "axes"}, {"sl"});          // [2, 2, 3]
  model.Node("Pad", {"sl", "pads"}, {"pd"}).String("mode", "constant");  // [2, 3, 4]
  model.Node("Greater", {"x", "pd"}, {"gt"});
  model.Node("Where", {"gt", "x", "pd"}, {"w"});
  model.Node("Max", {"w", "s1"}, {"mx"});
  model.Node("Min", {"mx", "pd"}, {"mn"});
  model.Node("Abs", {"mn"}, {"ab"});
  model.Node("Add", {"ab", "one"}, {"ab1"});
  model.Node("Reciprocal", {"ab1"}, {"r"});
  model.Node("ReduceMax", {"r"}, {"rmax"}).Ints("axes", {2});                     // [2, 3, 1]
  model.Node("ReduceMin", {"r"}, {"rmin"}).Ints("axes", {1}).Int("keepdims", 0);  // [2, 4]
  model.Node("Expand", {"rmax", "wide"}, {"ex"});                                 // [2, 3, 4]
  model.Node("ConstantOfShape", {"wide"}, {"quarter"})
      .TensorValue("value", full({1}, 0.25, DType::kF64));
  model.Node("Sign", {"x"}, {"sg"});
  model.Node("Less", {"x", "s1"}, {"lt"});
  model.Node("LessOrEqual", {"x", "pd"}, {"le"});
  model.Node("GreaterOrEqual", {"s1", "x"}, {"ge"});
  model.Node("Equal", {"x", "pd"}, {"eq"});
  model.Node("Cast", {"lt"}, {"lt_f"}).Int("to", 11);
  model.Node("Cast", {"le"}, {"le_f"}).Int("to", 11);
  model.Node("Cast", {"ge"}, {"ge_f"}).Int("to", 11);
  model.Node("Cast", {"eq"}, {"eq_f"}).Int("to", 11);
  model.Node("ArgMax", {"x"}, {"am"}).Int("axis", 2).Int("keepdims", 0);  // [2, 3] i64
  model.Node("Cast", {"am"}, {"am_f"}).Int("to", 11);
  model.Node("Mul", {"ex", "quarter"}, {"eq4"});
  model.Node("Add", {"eq4", "sg"}, {"t1"});
  model.Node("Add", {"t1", "lt_f"}, {"t2"});
  model.Node("Add", {"t2", "le_f"}, {"t3"});
  model.Node("Add", {"t3", "ge_f"}, {"t4"});
  model.Node("Add", {"t4", "eq_f"}, {"y"});
  for (const char* out : {"y", "rmin", "emb_sum", "am_f", "picked", "s3"}) {
    model.Output(out, DType::kF64);
  }
  return model;
}

TEST_CASE("indexing, comparison, reduction, padding and broadcasting operators") {
  const Tensor table = testing::Random({6, 4}, DType::kF64, 31);
  auto model = ImportOrFail(IndexingModel(table));
  const Tensor x = testing::Random({2, 3, 4}, DType::kF64, 32);
  const Tensor rows = from_vector<int64_t>({5, 0, 3, 3, 1}, {5});
  const TensorTree out = (*model)(
      TensorTree::Dict({{"x", TensorTree::MakeLeaf(x)}, {"rows", TensorTree::MakeLeaf(rows)}}));
  // The same with tensorcut's ops.
  const Tensor s1 = slice(x, 2, 0, 1), s3 = slice(x, 2, 1, 4);
  const Tensor pd = pad(slice(slice(x, 1, 1, 3), 2, 1, 4), {0, 0, 1, 0, 0, 1});
  const Tensor w = where(gt(x, pd), x, pd);
  const Tensor r = 1.0 / (abs(minimum(maximum(w, s1), pd)) + 1.0);
  auto f64 = [](const Tensor& b) { return cast(b, DType::kF64); };
  const Tensor y = expand(max(r, {2}, true), {2, 3, 4}) * 0.25 + sign(x) + f64(lt(x, s1)) +
                   f64(le(x, pd)) + f64(ge(s1, x)) + f64(eq(x, pd));
  auto check = [&](const char* name, const Tensor& expected) {
    INFO(name);
    CHECK(testing::CompareTensors(out.Find(name)->leaf(), expected, 1e-12, 1e-12) == "");
  };
  check("y", y);
  check("rmin", min(r, {1}));
  check("emb_sum", sum(embedding(table, rows)));
  check("am_f", f64(argmax(x, 2)));
  check("picked", stack({select(x, 1, 2), select(x, 1, 0)}, 1));
  check("s3", s3);
  testing::CheckLayer(
      [&] { return std::shared_ptr<nn::Module>(ImportOrFail(IndexingModel(table))); },
      TensorTree::Dict(
          {{"x", testing::RandomInput({2, 3, 4}, 33)}, {"rows", TensorTree::MakeLeaf(rows)}}));
}

// MobileNet v2's inverted residual with stride 2, as PyTorch exports it for
// training: pointwise, depthwise (group = channels), ReLU6 as Clip between
// Constant bounds cast to float, batch statistics.
OnnxBuilder InvertedResidual() {
  OnnxBuilder model(15);
  model.Input("x", DType::kF64, {"N", int64_t{4}, int64_t{7}, int64_t{7}});
  model.Initializer("expand.weight", testing::Random({8, 4, 1, 1}, DType::kF64, 11));
  model.Initializer("depthwise.weight", testing::Random({8, 1, 3, 3}, DType::kF64, 12));
  model.Initializer("norm.weight", testing::Random({8}, DType::kF64, 13) + 1.5);
  model.Initializer("norm.bias", testing::Random({8}, DType::kF64, 14));
  model.Initializer("norm.running_mean", zeros({8}, DType::kF64));
  model.Initializer("norm.running_var", ones({8}, DType::kF64));
  model.Node("Conv", {"x", "expand.weight"}, {"e"}).Ints("kernel_shape", {1, 1});
  model.Node("Conv", {"e", "depthwise.weight"}, {"d"}, "depthwise")
      .Ints("kernel_shape", {3, 3})
      .Ints("pads", {1, 1, 1, 1})
      .Ints("strides", {2, 2})
      .Int("group", 8);
  model
      .Node("BatchNormalization",
            {"d", "norm.weight", "norm.bias", "norm.running_mean", "norm.running_var"},
            {"n", "", ""})
      .Int("training_mode", 1);
  model.Node("Constant", {}, {"zero"}).TensorValue("value", full({}, 0, DType::kI64));
  model.Node("Constant", {}, {"six"}).TensorValue("value", full({}, 6, DType::kI64));
  model.Node("Cast", {"zero"}, {"low"}).Int("to", 11);
  model.Node("Cast", {"six"}, {"high"}).Int("to", 11);
  model.Node("Constant", {}, {"one"}).TensorValue("value", full({}, 1.0, DType::kF64));
  model.Node("Mul", {"n", "n"}, {"n2"});    // some values above 6
  model.Node("Sub", {"n2", "one"}, {"s"});  // and some below 0
  model.Node("Clip", {"s", "low", "high"}, {"y"});
  model.Output("y", DType::kF64);
  return model;
}

TEST_CASE("a MobileNet block: depthwise convolution, batch statistics, ReLU6 between casts") {
  auto block = ImportOrFail(InvertedResidual());
  const Tensor x = testing::Random({2, 4, 7, 7}, DType::kF64, 15) * 3.0;
  const Tensor y = (*block)(x);
  CHECK(max(y).item<double>() == 6.0);
  CHECK(min(y).item<double>() == 0.0);
  testing::CheckLayer([] { return std::shared_ptr<nn::Module>(ImportOrFail(InvertedResidual())); },
                      testing::RandomInput({2, 4, 7, 7}, 16));
}

// Dropout as PyTorch exports it for training: ratio and training_mode are
// Constant inputs; it drops only while the module trains.
TEST_CASE("Dropout exported for training drops in train mode and passes in eval mode") {
  OnnxBuilder model(13);
  model.Input("x", DType::kF32, {int64_t{100}, int64_t{100}});
  model.Node("Constant", {}, {"ratio"}).TensorValue("value", full({}, 0.25, DType::kF32));
  model.Node("Constant", {}, {"training"}).TensorValue("value", full({}, 1, DType::kBool));
  model.Node("Dropout", {"x", "ratio", "training"}, {"y", "mask"});
  model.Output("y", DType::kF32);
  auto dropout = ImportOrFail(model);
  const Tensor x = ones({100, 100});
  dropout->train();
  const std::vector<float> y = (*dropout)(x).to_vector<float>();
  const int64_t kept = std::count(y.begin(), y.end(), 1.0f / 0.75f);
  const int64_t dropped = std::count(y.begin(), y.end(), 0.0f);
  CHECK(kept + dropped == 10000);
  CHECK(dropped == Approx(2500).margin(200));  // 4.6 standard deviations
  dropout->eval();
  CHECK(testing::CompareTensors((*dropout)(x), x, 0, 0) == "");
}

TEST_CASE("import, train, export, import again: the same parameters, buffers and outputs") {
  NativeCnn native;
  auto model = ImportOrFail(CnnModel(native));
  const Tensor x = testing::Random({2, 2, 4, 4}, DType::kF64, 21);
  nn::SGD sgd(model->named_parameters(), 0.1);
  for (int i = 0; i < 3; ++i) {
    sgd.zero_grad();
    sum((*model)(x) * (*model)(x)).backward();
    sgd.step();
  }
  const absl::StatusOr<std::string> bytes = ExportToString(*model);
  REQUIRE(bytes.ok());
  auto again = ImportFromString(*bytes, "exported").value();
  const nn::NamedTensors before = model->state_dict(), after = again->state_dict();
  REQUIRE(Names(after) == Names(before));
  for (size_t i = 0; i < before.size(); ++i) {
    INFO(before[i].first);
    CHECK(testing::CompareTensors(after[i].second, before[i].second, 0, 0) == "");
  }
  CHECK(testing::CompareTensors((*again)(x), (*model)(x), 0, 0) == "");  // train mode
  model->eval();
  again->eval();
  CHECK(testing::CompareTensors((*again)(x), (*model)(x), 0, 0) == "");

  // Integer initializers and Constant nodes go back as they came.
  OnnxBuilder reshaping;
  reshaping.Input("x", DType::kF32, {"N", int64_t{6}});
  reshaping.Initializer("shape", from_vector<int64_t>({0, 2, 3}, {3}));
  reshaping.Node("Constant", {}, {"half"}).TensorValue("value", full({}, 0.5));
  reshaping.Node("Reshape", {"x", "shape"}, {"r"});
  reshaping.Node("Mul", {"r", "half"}, {"y"});
  reshaping.Output("y", DType::kF32);
  auto imported = ImportOrFail(reshaping);
  auto round_trip = ImportFromString(ExportToString(*imported).value()).value();
  const Tensor z = testing::Random({4, 6}, DType::kF32, 22);
  CHECK(testing::CompareTensors((*round_trip)(z), (*imported)(z), 0, 0) == "");

  // The file is written whole, and only over a regular file.
  const std::string dir = std::getenv("TEST_TMPDIR");
  REQUIRE(Export(*imported, dir + "/model.onnx").ok());
  CHECK(Import(dir + "/model.onnx").ok());
  CHECK(Export(*imported, dir).message() ==
        dir + " is a directory: a model is written only over a regular file");
}

TEST_CASE("a file that is not a model, or a model tensorcut cannot run, is a clear error") {
  CHECK(ImportFromString("certainly not protobuf", "m.onnx").status().message() ==
        "m.onnx: not an ONNX model (the file does not parse as a ModelProto; truncated or "
        "another format)");
  CHECK(Import("/nonexistent/m.onnx").status().code() == absl::StatusCode::kNotFound);
  auto native = NativeMlp();
  {
    OnnxBuilder old(12);
    old.Input("x", DType::kF32, {int64_t{1}});
    old.Node("Relu", {"x"}, {"y"});
    old.Output("y", DType::kF32);
    CHECK(ImportError(old) ==
          "m.onnx: opset_import: opset 12 of the default domain; tensorcut reads opsets 13 to 17");
  }
  {
    OnnxBuilder model = MlpModel(*native);
    model.Node("NonMaxSuppression", {"y"}, {"z"}, "nms");
    CHECK(ImportError(model).rfind(
              "m.onnx: node 'nms' (NonMaxSuppression, opset 15): operator NonMaxSuppression is "
              "not supported; tensorcut runs Abs, Add, ",
              0) == 0);
  }
  {
    OnnxBuilder model = MlpModel(*native);
    model.Node("Relu", {"y"}, {"z"}, "act").Int("inplace", 1);
    CHECK(ImportError(model) ==
          "m.onnx: node 'act' (Relu, opset 15): attribute 'inplace' is not supported");
  }
  {
    OnnxBuilder model = MlpModel(*native);
    model.proto().mutable_graph()->mutable_initializer(1)->mutable_raw_data()->resize(12);
    CHECK(ImportError(model) ==
          "m.onnx: initializer '0.bias': raw_data holds 12 bytes; dims [5] of DOUBLE (11) need "
          "40");
  }
  {
    OnnxBuilder model = MlpModel(*native);
    model.proto().mutable_graph()->mutable_initializer(1)->set_data_type(
        ::onnx::TensorProto::FLOAT16);
    CHECK(ImportError(model) ==
          "m.onnx: initializer '0.bias': data type FLOAT16 (10) is not supported (FLOAT, DOUBLE, "
          "BOOL and the integers are)");
  }
  {
    // A node that reads what a later node writes: a cycle, or nodes out of order.
    OnnxBuilder model = MlpModel(*native);
    model.proto().mutable_graph()->mutable_node(0)->set_input(0, "a");
    CHECK(ImportError(model) ==
          "m.onnx: node 'fc1' (Gemm): reads 'a', which no earlier node, input or initializer "
          "defines (a cycle, or nodes out of order)");
  }
  {
    // Cut anywhere, the file is refused whole.
    const std::string bytes = MlpModel(*native).Bytes();
    for (size_t cut : {size_t{0}, size_t{10}, bytes.size() / 2, bytes.size() - 1}) {
      INFO("cut at " << cut);
      CHECK_FALSE(ImportFromString(bytes.substr(0, cut), "m.onnx").ok());
    }
  }
}

// Graphs a careless or hostile exporter could write, each found by reading
// the importer: every one is an error, at import or when the forward runs,
// where some crashed the process (a null read, a division by zero, a huge
// number taken for a symbolic dim).
TEST_CASE("malformed graphs are errors, never crashes") {
  const Tensor x = zeros({2, 3});
  auto forward_error = [&](OnnxBuilder& model) {
    absl::StatusOr<std::shared_ptr<ImportedModule>> imported =
        ImportFromString(model.Bytes(), "m.onnx");
    if (!imported.ok()) return std::string(imported.status().message());
    return testing::ThrownMessage([&] { (**imported)(x); });
  };
  auto model_over_x = [] {
    OnnxBuilder model(13);
    model.Input("x", DType::kF32, {int64_t{2}, int64_t{3}});
    model.Output("y", DType::kF32);
    return model;
  };
  {  // Slice bounds at INT64_MIN and a step backwards.
    OnnxBuilder model = model_over_x();
    model.Initializer("starts", from_vector<int64_t>({-1}, {1}));
    model.Initializer("ends", from_vector<int64_t>({std::numeric_limits<int64_t>::min()}, {1}));
    model.Initializer("axes", from_vector<int64_t>({0}, {1}));
    model.Initializer("steps", from_vector<int64_t>({-1}, {1}));
    model.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "flip");
    CHECK(forward_error(model) ==
          "node 'flip' (Slice, opset 13): step -1 is not supported (only >= 1)");
  }
  {  // Shape arithmetic missing its second input.
    OnnxBuilder model = model_over_x();
    model.Node("Shape", {"x"}, {"s"});
    model.Node("Gather", {"s"}, {"g"}, "gather");
    model.Node("Reshape", {"x", "g"}, {"y"});
    CHECK(forward_error(model) == "node 'gather' (Gather, opset 13): input 1 is required");
  }
  {  // A Split of a constant into no outputs, a Concat of nothing.
    OnnxBuilder model = model_over_x();
    model.Node("Constant", {}, {"c"}).TensorValue("value", zeros({4}));
    model.Node("Split", {"c"}, {}, "split");
    model.Node("Relu", {"x"}, {"y"});
    CHECK(forward_error(model) ==
          "m.onnx: node 'split' (Split, opset 13): expected at least one output");
    OnnxBuilder empty = model_over_x();
    empty.Node("Concat", {}, {"c"}, "concat").Int("axis", 0);
    empty.Node("Relu", {"x"}, {"y"});
    CHECK(forward_error(empty) ==
          "m.onnx: node 'concat' (Concat, opset 13): expected at least one input");
  }
  {  // Unsqueeze naming one axis twice.
    OnnxBuilder model = model_over_x();
    model.Initializer("axes", from_vector<int64_t>({1, -3}, {2}));  // both dim 1 of 4
    model.Node("Unsqueeze", {"x", "axes"}, {"u"}, "unsqueeze");
    model.Node("Relu", {"u"}, {"y"});
    CHECK(forward_error(model) == "node 'unsqueeze' (Unsqueeze, opset 13): axes repeat");
  }
  {  // An LSTM whose R is a scalar; a ConvTranspose whose W is a vector.
    OnnxBuilder lstm = model_over_x();
    lstm.Initializer("zero", from_vector<int64_t>({0}, {1}));
    lstm.Initializer("w", zeros({1, 8, 3}));
    lstm.Initializer("r", zeros({}));
    lstm.Node("Unsqueeze", {"x", "zero"}, {"x3"});
    lstm.Node("LSTM", {"x3", "w", "r"}, {"y"}, "lstm").Int("hidden_size", 2);
    CHECK(forward_error(lstm) ==
          "node 'lstm' (LSTM, opset 13): X, W and R must be 3-d, got f32[1,2,3], f32[1,8,3], "
          "f32[]");
    OnnxBuilder transposed(13);
    transposed.Input("x", DType::kF32, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}});
    transposed.Initializer("w", zeros({3}));
    transposed.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
    transposed.Output("y", DType::kF32);
    auto up = ImportFromString(transposed.Bytes()).value();
    CHECK(testing::ThrownMessage([&] {
            (*up)(zeros({1, 1, 2, 2}));
          }) ==
          "node 'up' (ConvTranspose, opset 13): W must be [C, M / group, kH, kW], got f32[3]");
  }
  {  // Batch statistics over one value per channel.
    OnnxBuilder model(15);
    model.Input("x", DType::kF32, {int64_t{1}, int64_t{2}});
    for (const char* name : {"w", "b", "m", "v"}) model.Initializer(name, ones({2}));
    model.Node("BatchNormalization", {"x", "w", "b", "m", "v"}, {"y"}, "bn")
        .Int("training_mode", 1);
    model.Output("y", DType::kF32);
    auto bn = ImportFromString(model.Bytes()).value();
    CHECK(testing::ThrownMessage([&] {
            (*bn)(zeros({1, 2}));
          }) ==
          "node 'bn' (BatchNormalization, opset 15): expected more than 1 value per channel in "
          "training, got f32[1,2]");
  }
}

TEST_CASE("Gather reads negative indices from the end, and a Clip bound is no parameter") {
  OnnxBuilder model(13);
  model.Input("rows", DType::kI64, {int64_t{3}});
  model.Initializer("table", from_vector<float>({0, 1, 2, 3, 4, 5}, {3, 2}));
  model.Initializer("high", full({}, 4.0));
  model.Node("Gather", {"table", "rows"}, {"g"});
  model.Node("Clip", {"g", "", "high"}, {"y"});
  model.Output("y", DType::kF32);
  auto imported = ImportOrFail(model);
  CHECK(Names(imported->named_parameters()) == std::vector<std::string>{"table"});
  CHECK((*imported)(from_vector<int64_t>({-1, 0, 1}, {3})).to_vector<float>() ==
        std::vector<float>{4, 4, 0, 1, 2, 3});
}

TEST_CASE("a module cast with to() takes inputs and makes its constants in the new dtype") {
  OnnxBuilder model(13);
  model.Input("x", DType::kF32, {"N", int64_t{3}});
  model.Initializer("w", from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
  model.Node("Constant", {}, {"half"}).TensorValue("value", full({}, 0.5));
  model.Node("Shape", {"x"}, {"shape"});
  model.Node("ConstantOfShape", {"shape"}, {"ones"}).TensorValue("value", full({1}, 1.0));
  model.Node("Add", {"x", "ones"}, {"shifted"});
  model.Node("MatMul", {"shifted", "w"}, {"product"});
  model.Node("Mul", {"product", "half"}, {"y"});
  model.Output("y", DType::kF32);
  auto imported = ImportOrFail(model);
  const Tensor x = from_vector<float>({0.5, -1, 2, 0, 1, -0.25}, {2, 3});
  const std::vector<float> f32 = (*imported)(x).to_vector<float>();
  imported->to(DType::kF64);
  const Tensor y = (*imported)(x.to(DType::kF64));
  CHECK(y.dtype() == DType::kF64);
  const std::vector<double> f64 = y.to_vector<double>();
  REQUIRE(f64.size() == f32.size());
  for (size_t i = 0; i < f64.size(); ++i) CHECK(f64[i] == Approx(f32[i]).epsilon(1e-6));
  CHECK_THAT(testing::ThrownMessage([&] { (*imported)(x); }),
             Catch::Equals("ImportedModule: input 'x': expected f64[N,3], got f32[2,3]"));
}

TEST_CASE("what a node or an input cannot run is an error naming it when the forward runs") {
  auto mlp = ImportOrFail(MlpModel(*NativeMlp()));
  CHECK(testing::ThrownMessage([&] {
          (*mlp)(testing::Random({4, 7}, DType::kF64, 1));
        }) == "ImportedModule: input 'x': expected f64[N,6], got f64[4,7]");
  OnnxBuilder model;
  model.Input("x", DType::kF32, {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}});
  model.Node("MaxPool", {"x"}, {"y"}, "pool").Ints("kernel_shape", {2, 2}).Int("storage_order", 1);
  model.Output("y", DType::kF32);
  auto pool = ImportOrFail(model);
  CHECK(testing::ThrownMessage([&] {
          (*pool)(zeros({1, 1, 4, 4}));
        }) == "node 'pool' (MaxPool, opset 15): storage_order 1 is not supported");
}

}  // namespace
}  // namespace tc::onnx
