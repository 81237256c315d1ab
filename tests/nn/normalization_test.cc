// BatchNorm1d, GroupNorm, and the affine / tracking options of the
// normalisations: hand-worked values, gradients against finite differences,
// the compiled function against eager, errors.
#include "nn/normalization.h"

#include "catch2/catch.hpp"
#include "nn/containers.h"
#include "pipeline/compiler_pipeline.h"
#include "tests/nn/layer_check.h"
#include "tests/nn/nn_test_util.h"

namespace tc {
namespace {

using testing::CheckLayer;
using testing::Names;
using testing::Random;
using testing::RandomInput;

// A module with its parameters made random (not ones and zeros), in f64.
template <typename M, typename... Args>
testing::ModuleFactory Factory(Args... args) {
  return [=] {
    auto m = std::make_shared<M>(args...);
    m->to(DType::kF64);
    uint64_t seed = 40;
    for (const auto& [name, p] : m->named_parameters()) {
      nn::CopyValues(p, Random(p.shape(), DType::kF64, seed++));
    }
    return m;
  };
}

TEST_CASE("BatchNorm1d over [N, C]: each column normalised by its batch statistics") {
  nn::BatchNorm1d bn(2);
  CHECK(Names(bn.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(Names(bn.named_buffers()) ==
        std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"});
  // Column 0: 1, 3 (mean 2, biased var 1); column 1: 10, 10 (var 0).
  const Tensor y = bn(from_vector<float>({1, 10, 3, 10}, {2, 2}));
  const std::vector<float> v = y.to_vector<float>();
  CHECK(v[0] == Approx(-1 / std::sqrt(1 + 1e-5)));
  CHECK(v[2] == Approx(1 / std::sqrt(1 + 1e-5)));
  CHECK(v[1] == 0);
  // running_var takes the unbiased variance: 0.9 * 1 + 0.1 * 2.
  CHECK(bn.running_var().to_vector<float>()[0] == Approx(1.1));
  CHECK(bn.running_mean().to_vector<float>()[1] == Approx(1.0));
  CHECK(bn.ToString() ==
        "BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
}

TEST_CASE("BatchNorm1d over [N, C, L] equals BatchNorm2d over [N, C, L, 1]") {
  nn::BatchNorm1d bn1(3);
  nn::BatchNorm2d bn2(3);
  bn1.to(DType::kF64);
  bn2.to(DType::kF64);
  const Tensor x = Random({4, 3, 5}, DType::kF64, 1);
  REQUIRE_TENSORS_CLOSE(bn1(x), reshape(bn2(reshape(x, {4, 3, 5, 1})), {4, 3, 5}), 1e-12, 1e-12);
  REQUIRE_TENSORS_CLOSE(bn1.running_var(), bn2.running_var(), 1e-12, 1e-12);
  bn1.eval();
  bn2.eval();
  REQUIRE_TENSORS_CLOSE(bn1(x), reshape(bn2(reshape(x, {4, 3, 5, 1})), {4, 3, 5}), 1e-12, 1e-12);
}

TEST_CASE("BatchNorm1d gradients and compiled result, in training and eval") {
  CheckLayer(Factory<nn::BatchNorm1d>(int64_t{3}), RandomInput({4, 3}, 2));
  CheckLayer(Factory<nn::BatchNorm1d>(int64_t{3}), RandomInput({4, 3, 5}, 3));
  CheckLayer(
      [] {
        auto m = Factory<nn::BatchNorm1d>(int64_t{3})();
        m->eval();
        return m;
      },
      RandomInput({4, 3, 5}, 4));
}

TEST_CASE("BatchNorm with momentum None keeps the cumulative average of the batch statistics") {
  nn::BatchNorm2d bn(2, 1e-5, /*momentum=*/std::nullopt);
  CHECK(bn.ToString() ==
        "BatchNorm2d(2, eps=1e-05, momentum=None, affine=True, track_running_stats=True)");
  bn.to(DType::kF64);
  Tensor mean_sum = zeros({2}, DType::kF64), var_sum = zeros({2}, DType::kF64);
  for (uint64_t batch = 0; batch < 3; ++batch) {
    const Tensor x = Random({3, 2, 2, 2}, DType::kF64, 20 + batch) * static_cast<double>(batch + 1);
    bn(x);
    mean_sum = mean_sum + mean(x, {0, 2, 3});
    var_sum = var_sum + var(x, {0, 2, 3}, false, /*correction=*/1);
  }
  REQUIRE_TENSORS_CLOSE(bn.running_mean(), mean_sum / 3.0, 1e-12, 1e-12);
  REQUIRE_TENSORS_CLOSE(bn.running_var(), var_sum / 3.0, 1e-12, 1e-12);
  CHECK(bn.num_batches_tracked().item<int64_t>() == 3);
  // The count is read from the buffer, so the compiled update is the eager one.
  CheckLayer(
      [] {
        auto m = std::make_shared<nn::BatchNorm2d>(2, 1e-5, std::nullopt);
        m->to(DType::kF64);
        nn::CopyValues(m->num_batches_tracked(), from_vector<int64_t>({4}, {}));
        nn::CopyValues(m->running_mean(), Random({2}, DType::kF64, 30));
        return m;
      },
      RandomInput({3, 2, 2, 2}, 31));
}

TEST_CASE("BatchNorm with momentum None compiles over a symbolic batch") {
  nn::BatchNorm1d compiled_bn(2, 1e-5, std::nullopt), eager_bn(2, 1e-5, std::nullopt);
  compiled_bn.to(DType::kF64);
  eager_bn.to(DType::kF64);
  Function f = compile(compiled_bn, TensorTree::MakeLeaf(Random({4, 2}, DType::kF64, 50)),
                       {.dynamic_dims = {{"arg", {0}}}, .automatic_dynamic = false})
                   .value();
  for (int64_t n : {3, 6}) {
    const Tensor x = Random({n, 2}, DType::kF64, 50 + n);
    REQUIRE_TENSORS_CLOSE(f(TensorTree::MakeLeaf(x)).value().leaf(), eager_bn(x), 1e-12, 1e-12);
  }
  REQUIRE_TENSORS_CLOSE(compiled_bn.running_mean(), eager_bn.running_mean(), 1e-12, 1e-12);
  REQUIRE_TENSORS_CLOSE(compiled_bn.running_var(), eager_bn.running_var(), 1e-12, 1e-12);
  CHECK(compiled_bn.num_batches_tracked().item<int64_t>() == 2);
}

TEST_CASE("without affine or tracking, batch norm has no parameters or buffers") {
  nn::BatchNorm2d bn(3, 1e-5, 0.1, /*affine=*/false, /*track_running_stats=*/false);
  CHECK(bn.named_parameters().empty());
  CHECK(bn.named_buffers().empty());
  bn.eval();  // without running statistics, eval still normalises by the batch's
  const Tensor x = Random({4, 3, 2, 2}, DType::kF32, 5);
  const Tensor want = (x - mean(x, {0, 2, 3}, true)) * rsqrt(var(x, {0, 2, 3}, true, 0) + 1e-5);
  REQUIRE_TENSORS_CLOSE(bn(x), want, 1e-5, 1e-5);
  CheckLayer(Factory<nn::BatchNorm2d>(int64_t{3}, 1e-5, 0.1, false, false),
             RandomInput({4, 3, 2, 2}, 6));
}

TEST_CASE("a BatchNorm synced over one process normalises as a BatchNorm of its own") {
  // "self" is this process alone: the sums over the group are its own.
  auto plain = std::static_pointer_cast<nn::BatchNorm2d>(Factory<nn::BatchNorm2d>(int64_t{3})());
  auto synced = std::static_pointer_cast<nn::BatchNorm2d>(Factory<nn::BatchNorm2d>(int64_t{3})());
  synced->set_sync_group("self");
  const Tensor x = Random({4, 3, 5, 5}, DType::kF64, 8).requires_grad_();
  const Tensor r = Random({4, 3, 5, 5}, DType::kF64, 9);
  for (int step = 0; step < 2; ++step) {
    const Tensor y_plain = (*plain)(x), y_synced = (*synced)(x);
    REQUIRE_TENSORS_CLOSE(y_synced, y_plain, 1e-10, 1e-12);
    sum(y_plain * r).backward();
    const Tensor gx_plain = x.grad();
    x.set_grad(Tensor());
    sum(y_synced * r).backward();
    REQUIRE_TENSORS_CLOSE(x.grad(), gx_plain, 1e-9, 1e-12);
    x.set_grad(Tensor());
    REQUIRE_TENSORS_CLOSE(synced->weight().grad(), plain->weight().grad(), 1e-10, 1e-12);
  }
  REQUIRE_TENSORS_CLOSE(synced->running_mean(), plain->running_mean(), 1e-12, 1e-12);
  REQUIRE_TENSORS_CLOSE(synced->running_var(), plain->running_var(), 1e-12, 1e-12);
  CHECK(synced->num_batches_tracked().item<int64_t>() == 2);
  // Gradients against finite differences, and compiled (the collectives in
  // the forward and backward graphs) against eager.
  CheckLayer(
      [] {
        auto m = Factory<nn::BatchNorm2d>(int64_t{3}, 1e-5, std::nullopt)();
        nn::ConvertSyncBatchNorm(*m, "self");
        return m;
      },
      RandomInput({4, 3, 2, 2}, 10));
}

TEST_CASE("ConvertSyncBatchNorm gives every BatchNorm of a model the group") {
  nn::Sequential model;
  model.push_back(std::make_shared<nn::BatchNorm2d>(2));
  model.push_back(std::make_shared<nn::GroupNorm>(1, 2));
  model.push_back(std::make_shared<nn::BatchNorm1d>(2));
  CHECK(nn::ConvertSyncBatchNorm(model, "world") == 2);
  for (const auto& [name, m] : model.named_modules()) {
    if (auto* bn = dynamic_cast<nn::BatchNorm*>(m)) CHECK(bn->sync_group() == "world");
  }
}

TEST_CASE("GroupNorm normalises each sample's group of channels together") {
  nn::GroupNorm gn(2, 4);
  CHECK(Names(gn.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(gn.weight().shape() == Shape{4});
  // One sample, 4 channels of one value each: groups {1, 3} and {5, 5}.
  const Tensor y = gn(from_vector<float>({1, 3, 5, 5}, {1, 4, 1}));
  const std::vector<float> v = y.to_vector<float>();
  CHECK(v[0] == Approx(-1 / std::sqrt(1 + 1e-5)));
  CHECK(v[1] == Approx(1 / std::sqrt(1 + 1e-5)));
  CHECK(v[2] == 0);
  CHECK(gn.ToString() == "GroupNorm(2, 4, eps=1e-05, affine=True)");
  CheckLayer(Factory<nn::GroupNorm>(int64_t{2}, int64_t{6}), RandomInput({3, 6, 2, 3}, 7));
  CheckLayer(Factory<nn::GroupNorm>(int64_t{6}, int64_t{6}, 1e-3, false),
             RandomInput({2, 6, 4}, 8));
}

TEST_CASE("LayerNorm over several trailing dims, with and without affine") {
  nn::LayerNorm ln({3, 4});
  CHECK(ln.ToString() == "LayerNorm((3, 4), eps=1e-05, elementwise_affine=True)");
  CHECK(nn::LayerNorm({8}, 1e-6, false).named_parameters().empty());
  CheckLayer(Factory<nn::LayerNorm>(std::vector<int64_t>{3, 4}), RandomInput({2, 3, 4}, 9));
  CheckLayer(Factory<nn::LayerNorm>(std::vector<int64_t>{4}, 1e-5, false),
             RandomInput({2, 3, 4}, 10));
}

TEST_CASE("normalisations name the layer, what they expected and what came") {
  CHECK_THROWS_WITH(nn::BatchNorm1d(3)(zeros({4, 2})),
                    "BatchNorm1d: expected input [N, C] or [N, C, L] with C = 3, got f32[4,2]");
  CHECK_THROWS_WITH(nn::BatchNorm1d(3)(zeros({4, 3, 2, 2})),
                    "BatchNorm1d: expected input [N, C] or [N, C, L] with C = 3, got f32[4,3,2,2]");
  CHECK_THROWS_WITH(nn::BatchNorm2d(3)(zeros({4, 3})),
                    "BatchNorm2d: expected input [N, C, H, W] with C = 3, got f32[4,3]");
  CHECK_THROWS_WITH(nn::BatchNorm1d(3)(zeros({1, 3})),
                    "BatchNorm1d: expected more than 1 value per channel in training, got input "
                    "f32[1,3]");
  CHECK_THROWS_WITH(nn::GroupNorm(4, 6),
                    "GroupNorm: num_channels (6) must be divisible by num_groups (4)");
  CHECK_THROWS_WITH(nn::GroupNorm(2, 6)(zeros({2, 4, 3})),
                    "GroupNorm: expected input [N, C, *] with C = 6, got f32[2,4,3]");
}

}  // namespace
}  // namespace tc
