// A 2-layer MLP written directly with ops, trained with plain gradient
// descent on a synthetic separable problem: the loss must fall at least 10x.
#include "autodiff/engine.h"
#include "catch2/catch.hpp"
#include "runtime/ops.h"

namespace tc {
namespace {

TEST_CASE("a 2-layer MLP learns a separable problem") {
  Generator gen(5);
  // Two Gaussian blobs in 8 dims, centred at +-1.5 along a random direction.
  const int64_t n = 256, d = 8, h = 32;
  Tensor labels = cast(lt(rand({n}, DType::kF32, &gen), scalar(0.5)), DType::kI64);
  Tensor direction = randn({1, d}, DType::kF32, &gen);
  Tensor side = cast(labels, DType::kF32) * 3.0 - 1.5;
  Tensor x = randn({n, d}, DType::kF32, &gen) * 0.5 + reshape(side, {n, 1}) * direction;
  Tensor onehot = cast(eq(reshape(labels, {n, 1}), arange(2)), DType::kF32);

  Tensor w1 = (randn({h, d}, DType::kF32, &gen) * 0.3).requires_grad_();
  Tensor b1 = zeros({h}).requires_grad_();
  Tensor w2 = (randn({2, h}, DType::kF32, &gen) * 0.3).requires_grad_();
  Tensor b2 = zeros({2}).requires_grad_();
  const TensorList params = {w1, b1, w2, b2};

  auto loss_fn = [&] {
    Tensor logits = linear(relu(linear(x, w1, b1)), w2, b2);
    return -mean(sum(log_softmax(logits, 1) * onehot, {1}));
  };
  const float first = loss_fn().item<float>();
  float last = first;
  for (int step = 0; step < 200; ++step) {
    Tensor loss = loss_fn();
    last = loss.item<float>();
    TensorList g = grad({loss}, params).value();
    NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) {
      // In-place update of the leaf's data keeps its autograd identity.
      Tensor updated = params[i] - g[i] * 0.5;
      std::copy_n(updated.data<float>(), updated.numel(), params[i].data<float>());
    }
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last * 10 < first);
}

}  // namespace
}  // namespace tc
