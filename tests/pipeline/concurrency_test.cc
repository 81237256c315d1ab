// One compiled function called from several threads at once: each call runs
// in an execution context of its own (codegen/program.h), so every result
// equals, bit for bit, what a single-threaded call on the same input gives.
// Also run under ThreadSanitizer: tools/test.sh runs it with --config=tsan.
#include <atomic>
#include <cmath>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "catch2/catch.hpp"
#include "nn/layers.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "pipeline/compiler_pipeline.h"
#include "pipeline/train_step.h"
#include "runtime/autograd_meta.h"
#include "runtime/ops.h"
#include "runtime/random.h"

namespace tc {
namespace {

constexpr int kThreads = 4;
constexpr int kCallsPerThread = 1000;

// Calls `fn` from kThreads threads, kCallsPerThread times each, on inputs in
// turn, and REQUIREs every output equal to a single-threaded call's.
void RequireSameResultsOnThreads(const Function& fn, const std::vector<Tensor>& inputs) {
  std::vector<std::vector<float>> expected;
  for (const Tensor& x : inputs) {
    expected.push_back(fn(TensorTree::MakeLeaf(x)).value().leaf().to_vector<float>());
  }
  std::atomic<int> failed{0}, differed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        const size_t k = (t + i) % inputs.size();
        const absl::StatusOr<TensorTree> out = fn(TensorTree::MakeLeaf(inputs[k]));
        if (!out.ok()) {
          ++failed;
        } else if (out->leaf().to_vector<float>() != expected[k]) {
          ++differed;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  REQUIRE(failed == 0);
  REQUIRE(differed == 0);
}

std::vector<Tensor> RandomInputs(const Shape& shape) {
  std::vector<Tensor> inputs;
  for (int k = 0; k < 5; ++k) inputs.push_back(randn(shape));
  return inputs;
}

TEST_CASE("calls of new sizes from 4 threads at once: one recompilation, every result right") {
  manual_seed(2);
  nn::Sequential model({std::make_shared<nn::Linear>(16, 32), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(32, 8)});
  auto stats = std::make_shared<CompileStats>();
  const Function fn =
      compile(model, TensorTree::MakeLeaf(randn({6, 16})), {.training = false, .stats = stats})
          .value();
  const std::vector<Tensor> inputs = {randn({6, 16}), randn({3, 16}), randn({9, 16}),
                                      randn({1, 16})};
  std::vector<std::vector<float>> expected;
  {
    NoGradGuard no_grad;
    for (const Tensor& x : inputs) {
      expected.push_back(model(TensorTree::MakeLeaf(x)).leaf().to_vector<float>());
    }
  }
  std::atomic<int> failed{0}, differed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const size_t k = (t + i) % inputs.size();
        const absl::StatusOr<TensorTree> out = fn(TensorTree::MakeLeaf(inputs[k]));
        if (!out.ok()) {
          ++failed;
          continue;
        }
        const std::vector<float> got = out->leaf().to_vector<float>();
        if (got.size() != expected[k].size()) {
          ++differed;
          continue;
        }
        for (size_t j = 0; j < got.size(); ++j) {
          if (std::abs(got[j] - expected[k][j]) > 1e-5f) ++differed;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  REQUIRE(failed == 0);
  REQUIRE(differed == 0);
  CHECK(stats->compilations == 2);
}

TEST_CASE("training calls that update BatchNorm's statistics from 4 threads lose no update") {
  manual_seed(3);
  nn::Sequential model({std::make_shared<nn::Conv2d>(1, 2, 3, 1, 1),
                        std::make_shared<nn::BatchNorm2d>(2), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Flatten>()});
  const Tensor x = randn({2, 1, 4, 4});
  const Function fn = compile(model, TensorTree::MakeLeaf(x)).value();
  const Tensor& tracked =
      std::static_pointer_cast<nn::BatchNorm2d>(model.named_children()[1].second)
          ->num_batches_tracked();
  const int64_t before = tracked.item<int64_t>();
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (!fn(TensorTree::MakeLeaf(x)).ok()) ++failed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  REQUIRE(failed == 0);
  // Read, add one, write back: serialised, every call's update counts.
  CHECK(tracked.item<int64_t>() == before + kThreads * 50);
}

TEST_CASE("a TrainStep run from two threads at once refuses the second, never races") {
  manual_seed(4);
  nn::Sequential model({std::make_shared<nn::Linear>(8, 4)});
  nn::SGD sgd(model.named_parameters(), 0.01);
  const Tensor x = randn({3, 8}), y = randn({3, 4});
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(model, nn::MeanSquareLoss, TensorTree::MakeLeaf(x), TensorTree::MakeLeaf(y),
                        sgd)
          .value();
  std::atomic<int> ran{0}, refused{0}, other{0};
  std::atomic<bool> wrong_message{false};
  std::vector<std::thread> threads;
  // Until the two threads have overlapped at least once (bounded).
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000 && refused == 0; ++i) {
        const absl::StatusOr<double> loss = step->Run({x, y});
        if (loss.ok()) {
          ++ran;
        } else if (loss.status().code() == absl::StatusCode::kFailedPrecondition) {
          ++refused;
          wrong_message =
              wrong_message || loss.status().message().find("Run while another Run of this step") ==
                                   absl::string_view::npos;
        } else {
          ++other;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(other == 0);
  CHECK(ran > 0);
  REQUIRE(refused > 0);
  CHECK_FALSE(wrong_message);
  // Refused runs left the step usable.
  CHECK(step->Run({x, y}).ok());
}

TEST_CASE("an mlp's compiled inference function called from 4 threads") {
  manual_seed(1);
  nn::Sequential model({std::make_shared<nn::Linear>(16, 32), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(32, 8)});
  const std::vector<Tensor> inputs = RandomInputs({6, 16});
  const Function fn = compile(model, TensorTree::MakeLeaf(inputs[0]), {.training = false}).value();
  RequireSameResultsOnThreads(fn, inputs);
}

TEST_CASE("a convolutional network's compiled inference function called from 4 threads") {
  // Channels-last activations, a convolution with its bias, batch norm with
  // relu as a post-op, pooling and a flatten copy: every kind of step.
  manual_seed(2);
  nn::Sequential model({std::make_shared<nn::Conv2d>(3, 4, 3, 1, 1),
                        std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
                        std::make_shared<nn::Linear>(4 * 4 * 4, 5)});
  model.eval();
  const std::vector<Tensor> inputs = RandomInputs({2, 3, 8, 8});
  const Function fn = compile(model, TensorTree::MakeLeaf(inputs[0]), {.training = false}).value();
  RequireSameResultsOnThreads(fn, inputs);
}

TEST_CASE("calls with dropout from 4 threads each draw counters of their own") {
  manual_seed(3);
  nn::Sequential model({std::make_shared<nn::Linear>(16, 32), std::make_shared<nn::Dropout>(0.5)});
  const Tensor x = randn({6, 16});
  const Function fn = compile(model, TensorTree::MakeLeaf(x), {.training = false}).value();
  manual_seed(4);
  std::vector<std::vector<std::vector<float>>> outputs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        outputs[t].push_back(fn(TensorTree::MakeLeaf(x)).value().leaf().to_vector<float>());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // 6 x 32 counters a call, none drawn twice: every mask differs.
  CHECK(DefaultGenerator().offset() == uint64_t{kThreads} * kCallsPerThread * 6 * 32);
  std::set<std::vector<float>> distinct;
  for (const auto& calls : outputs) distinct.insert(calls.begin(), calls.end());
  CHECK(distinct.size() == static_cast<size_t>(kThreads * kCallsPerThread));
}

}  // namespace
}  // namespace tc
