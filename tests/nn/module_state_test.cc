// Module state as torch.nn.Module keeps it: named_modules, apply, state_dict
// and load_state_dict (strict and not), non-persistent buffers, the
// parameter count, forward hooks and the printed module tree.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "catch2/catch.hpp"
#include "nn/layers.h"
#include "nn/models/models.h"
#include "nn/module.h"
#include "nn/summary.h"
#include "tests/nn/nn_test_util.h"

namespace tc {
namespace {

using testing::Names;

class Block : public nn::Module {
 public:
  Block() {
    fc_ = register_module("fc", std::make_shared<nn::Linear>(4, 3));
    bn_ = register_module("bn", std::make_shared<nn::BatchNorm1d>(3));
    register_buffer("mask", ones({3}), /*persistent=*/false);
    scale_ = register_parameter("scale", ones({3}));
  }
  Tensor forward(const Tensor& x) override { return (*bn_)((*fc_)(x)) * scale_; }
  using Module::forward;

 private:
  std::shared_ptr<nn::Linear> fc_;
  std::shared_ptr<nn::BatchNorm1d> bn_;
  Tensor scale_;
};

TEST_CASE("named_modules lists the tree depth first; apply visits children first") {
  Block block;
  std::vector<std::string> names;
  for (const auto& [name, m] : block.named_modules()) names.push_back(name + ":" + m->type_name());
  CHECK(names == std::vector<std::string>{":Block", "fc:Linear", "bn:BatchNorm1d"});
  std::vector<std::string> order;
  block.apply([&](nn::Module& m) { order.push_back(m.type_name()); });
  CHECK(order == std::vector<std::string>{"Linear", "BatchNorm1d", "Block"});
  CHECK(block.num_parameters() == 3 + 4 * 3 + 3 + 3 + 3);
}

TEST_CASE("state_dict orders each module's own state before its children's, as PyTorch") {
  Block block;
  CHECK(Names(block.state_dict()) ==
        std::vector<std::string>{"scale", "fc.weight", "fc.bias", "bn.weight", "bn.bias",
                                 "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"});
  // The non-persistent buffer is a buffer, but not state.
  CHECK(Names(block.named_buffers()) == std::vector<std::string>{"mask", "bn.running_mean",
                                                                 "bn.running_var",
                                                                 "bn.num_batches_tracked"});
  CHECK_FALSE(block.state_dict()[0].second.requires_grad());
}

TEST_CASE("load_state_dict round-trips into the same handles") {
  Generator a(1), b(2);
  nn::Linear src(4, 3, true, &a), dst(4, 3, true, &b);
  const Tensor handle = dst.weight();
  REQUIRE(dst.load_state_dict(src.state_dict()).ok());
  CHECK(handle.same(dst.weight()));
  REQUIRE_TENSORS_CLOSE(dst.weight(), src.weight(), 0, 0);
  REQUIRE_TENSORS_CLOSE(dst.bias(), src.bias(), 0, 0);
  // Values are copied, not shared.
  nn::CopyValues(src.weight(), zeros({3, 4}));
  CHECK(dst.weight().to_vector<float>() != src.weight().to_vector<float>());
  // dtypes convert as copy_ does.
  nn::NamedTensors f64 = src.state_dict();
  for (auto& [name, t] : f64) t = t.to(DType::kF64);
  REQUIRE(dst.load_state_dict(f64).ok());
  CHECK(dst.weight().dtype() == DType::kF32);
}

TEST_CASE("strict load_state_dict names missing and unexpected keys and changes nothing") {
  nn::Linear fc(4, 3);
  const std::vector<float> before = fc.weight().to_vector<float>();
  nn::NamedTensors state = {{"weight", zeros({3, 4})}, {"bias_typo", zeros({3})}};
  absl::StatusOr<nn::IncompatibleKeys> strict = fc.load_state_dict(state);
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().message() ==
        "load_state_dict: missing keys: bias; unexpected keys: bias_typo");
  CHECK(fc.weight().to_vector<float>() == before);

  absl::StatusOr<nn::IncompatibleKeys> loose = fc.load_state_dict(state, /*strict=*/false);
  REQUIRE(loose.ok());
  CHECK(loose->missing_keys == std::vector<std::string>{"bias"});
  CHECK(loose->unexpected_keys == std::vector<std::string>{"bias_typo"});
  CHECK(fc.weight().to_vector<float>() == std::vector<float>(12, 0));

  nn::NamedTensors wrong = {{"weight", zeros({4, 3})}, {"bias", zeros({3})}};
  CHECK(fc.load_state_dict(wrong, false).status().message() ==
        "load_state_dict: size mismatch: weight (module has f32[3,4], state has f32[4,3])");
  nn::NamedTensors twice = {{"bias", zeros({3})}, {"bias", zeros({3})}};
  CHECK(fc.load_state_dict(twice, false).status().message() ==
        "load_state_dict: key bias appears more than once");
}

TEST_CASE("forward hooks see each call's input and output until removed") {
  nn::Linear fc(4, 3);
  std::vector<Shape> seen;
  const int id =
      fc.register_forward_hook([&](const nn::Module&, const TensorTree& in, const TensorTree& out) {
        seen.push_back(in.leaf().shape());
        seen.push_back(out.leaf().shape());
      });
  fc(zeros({2, 4}));
  fc.remove_forward_hook(id);
  fc(zeros({2, 4}));
  CHECK(seen == std::vector<Shape>{{2, 4}, {2, 3}});
}

TEST_CASE("the module tree prints as torch's repr") {
  nn::ModelSpec cnn = nn::MakeModel("cnn", 1).value();
  INFO(cnn.module->ToString());
  CHECK(cnn.module->ToString().find("(0): Conv2d(") != std::string::npos);
  Block block;
  CHECK(block.ToString() ==
        "Block(\n"
        "  (fc): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (bn): BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
        ")");
}

TEST_CASE("the cnn model's summary, as golden text; the model is left as it was") {
  nn::ModelSpec cnn = nn::MakeModel("cnn", 1).value();
  const nn::NamedTensors before = cnn.module->state_dict();
  std::vector<std::vector<float>> values;
  for (const auto& [name, t] : before) values.push_back(t.to(DType::kF32).to_vector<float>());
  absl::StatusOr<std::string> text = nn::Summary(*cnn.module, cnn.inputs);
  REQUIRE(text.ok());
  CHECK(cnn.module->is_training());
  const nn::NamedTensors after = cnn.module->state_dict();
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].second.to(DType::kF32).to_vector<float>() == values[i]);
  }
  const std::string golden_path = "tests/nn/testdata/cnn_summary.txt";
  // `TC_UPDATE_GOLDENS=1 bazel run //tests/nn:module_state_test` rewrites the file.
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (workspace != nullptr && std::getenv("TC_UPDATE_GOLDENS") != nullptr) {
    std::ofstream(std::string(workspace) + "/" + golden_path) << *text;
  }
  std::ifstream golden(golden_path);
  REQUIRE(golden.good());
  std::stringstream expected;
  expected << golden.rdbuf();
  INFO(*text);
  CHECK(*text == expected.str());
  // An input the model rejects comes back as the status.
  CHECK_FALSE(nn::Summary(*cnn.module, TensorTree::MakeLeaf(zeros({2, 3}))).ok());
}

}  // namespace
}  // namespace tc
