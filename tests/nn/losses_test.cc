// The losses of nn/losses.h against hand-written f64 formulas (values and
// gradients), every reduction, label smoothing, and the error messages.
#include "nn/losses.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "autodiff/engine.h"
#include "catch2/catch.hpp"
#include "tests/test_util.h"

namespace tc {
namespace {

using testing::Random;

constexpr int64_t kN = 5, kC = 4;

// Per-sample losses reduced by hand.
Tensor ReduceByHand(const std::vector<double>& per_sample, absl::string_view reduction,
                    std::vector<int64_t> shape) {
  double total = 0;
  for (double v : per_sample) total += v;
  if (reduction == "sum") return scalar(total, DType::kF64);
  if (reduction == "mean") return scalar(total / per_sample.size(), DType::kF64);
  return from_vector<double>(per_sample, shape);
}

// log_softmax of row i of a [N, C] matrix given as row-major values.
std::vector<double> LogSoftmaxRow(const std::vector<double>& x, int64_t i) {
  double m = -1e300;
  for (int64_t c = 0; c < kC; ++c) m = std::max(m, x[i * kC + c]);
  double z = 0;
  for (int64_t c = 0; c < kC; ++c) z += std::exp(x[i * kC + c] - m);
  std::vector<double> out;
  for (int64_t c = 0; c < kC; ++c) out.push_back(x[i * kC + c] - m - std::log(z));
  return out;
}

const std::vector<int64_t> kTargets = {3, 0, 1, 3, 2};

TEST_CASE("cross_entropy matches -sum q log softmax, with and without label smoothing") {
  Tensor logits = (Random({kN, kC}, DType::kF64, 1) * 3.0).requires_grad_();
  Tensor targets = from_vector<int64_t>(kTargets, {kN});
  const std::vector<double> x = logits.to_vector<double>();
  for (double smoothing : {0.0, 0.2}) {
    for (absl::string_view reduction : {"mean", "sum", "none"}) {
      INFO("smoothing " << smoothing << ", reduction " << std::string(reduction));
      std::vector<double> per_sample;
      std::vector<double> dlogits;  // of the reduced loss (ones for "none")
      for (int64_t i = 0; i < kN; ++i) {
        const std::vector<double> lp = LogSoftmaxRow(x, i);
        double loss = 0;
        for (int64_t c = 0; c < kC; ++c) {
          const double q = (c == kTargets[i] ? 1 - smoothing : 0) + smoothing / kC;
          loss -= q * lp[c];
          const double scale = reduction == "mean" ? 1.0 / kN : 1.0;
          dlogits.push_back(scale * (std::exp(lp[c]) - q));
        }
        per_sample.push_back(loss);
      }
      Tensor loss = nn::cross_entropy(logits, targets, reduction, smoothing);
      REQUIRE_TENSORS_CLOSE(loss, ReduceByHand(per_sample, reduction, {kN}), 1e-12, 1e-12);
      Tensor g = grad({sum(loss)}, {logits}).value()[0];
      REQUIRE_TENSORS_CLOSE(g, from_vector<double>(dlogits, {kN, kC}), 1e-12, 1e-12);
    }
  }
}

TEST_CASE("nll_loss picks -log_probs[i, target_i]") {
  Tensor lp = log_softmax(Random({kN, kC}, DType::kF64, 2), 1).requires_grad_();
  Tensor targets = from_vector<int64_t>(kTargets, {kN});
  for (absl::string_view reduction : {"mean", "sum", "none"}) {
    INFO("reduction " << std::string(reduction));
    std::vector<double> per_sample, dlp(kN * kC, 0.0);
    for (int64_t i = 0; i < kN; ++i) {
      per_sample.push_back(-lp.at<double>({i, kTargets[i]}));
      dlp[i * kC + kTargets[i]] = reduction == "mean" ? -1.0 / kN : -1.0;
    }
    Tensor loss = nn::nll_loss(lp, targets, reduction);
    REQUIRE_TENSORS_CLOSE(loss, ReduceByHand(per_sample, reduction, {kN}), 1e-12, 1e-12);
    REQUIRE_TENSORS_CLOSE(grad({sum(loss)}, {lp}).value()[0], from_vector<double>(dlp, {kN, kC}),
                          1e-12, 1e-12);
  }
}

TEST_CASE("a class target out of range is an error naming it, as in PyTorch; ignore_index is not") {
  const Tensor logits = Random({3, 4}, DType::kF64, 5);
  for (int64_t bad : {int64_t{4}, int64_t{-1}}) {
    const Tensor targets = from_vector<int64_t>({0, bad, 2}, {3});
    const std::string message = absl::StrCat("check_class_index: target ", bad,
                                             " of sample 1 is not a class in [0, 4) nor the "
                                             "ignore_index -100");
    CHECK(testing::ThrownMessage([&] { nn::cross_entropy(logits, targets); }) == message);
    CHECK(testing::ThrownMessage([&] { nn::nll_loss(log_softmax(logits, 1), targets); }) ==
          message);
  }
  const Tensor ignored = from_vector<int64_t>({0, -100, 2}, {3});
  CHECK(std::isfinite(nn::cross_entropy(logits, ignored).to_vector<double>()[0]));
}

TEST_CASE("mse_loss is the mean, sum or map of squared differences") {
  Tensor a = Random({3, 4}, DType::kF64, 3).requires_grad_();
  Tensor b = Random({3, 4}, DType::kF64, 4);
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (absl::string_view reduction : {"mean", "sum", "none"}) {
    INFO("reduction " << std::string(reduction));
    std::vector<double> sq, da;
    for (size_t i = 0; i < av.size(); ++i) {
      sq.push_back((av[i] - bv[i]) * (av[i] - bv[i]));
      da.push_back(2 * (av[i] - bv[i]) / (reduction == "mean" ? av.size() : 1.0));
    }
    Tensor loss = nn::mse_loss(a, b, reduction);
    REQUIRE_TENSORS_CLOSE(loss, ReduceByHand(sq, reduction, {3, 4}), 1e-12, 1e-12);
    REQUIRE_TENSORS_CLOSE(grad({sum(loss)}, {a}).value()[0], from_vector<double>(da, {3, 4}), 1e-12,
                          1e-12);
  }
}

TEST_CASE("binary_cross_entropy_with_logits is stable and has gradient sigmoid(x) - t") {
  // Includes 0 (the kink of the stable form) and logits far beyond exp's range.
  const std::vector<double> xs = {-800, -3, -0.5, 0, 0.7, 2, 40, 800};
  const std::vector<double> ts = {0.0, 1.0, 0.3, 1.0, 0.0, 0.5, 1.0, 0.0};
  Tensor x = from_vector<double>(xs, {2, 4}).requires_grad_();
  Tensor t = from_vector<double>(ts, {2, 4});
  for (absl::string_view reduction : {"mean", "sum", "none"}) {
    INFO("reduction " << std::string(reduction));
    std::vector<double> per_elem, dx;
    for (size_t i = 0; i < xs.size(); ++i) {
      // -(t log s + (1 - t) log(1 - s)) with log s = -log(1 + e^-x) written
      // to stay finite: log(1 + e^y) = max(y, 0) + log(1 + e^-|y|).
      auto softplus = [](double y) {
        return std::max(y, 0.0) + std::log1p(std::exp(-std::abs(y)));
      };
      per_elem.push_back(ts[i] * softplus(-xs[i]) + (1 - ts[i]) * softplus(xs[i]));
      const double s = 1 / (1 + std::exp(-xs[i]));
      dx.push_back((s - ts[i]) / (reduction == "mean" ? xs.size() : 1.0));
    }
    Tensor loss = nn::binary_cross_entropy_with_logits(x, t, reduction);
    REQUIRE_TENSORS_CLOSE(loss, ReduceByHand(per_elem, reduction, {2, 4}), 1e-12, 1e-12);
    REQUIRE_TENSORS_CLOSE(grad({sum(loss)}, {x}).value()[0], from_vector<double>(dx, {2, 4}), 1e-12,
                          1e-12);
  }
}

TEST_CASE("f32 losses agree with the f64 ones") {
  Tensor logits = Random({kN, kC}, DType::kF64, 5);
  Tensor targets = from_vector<int64_t>(kTargets, {kN});
  REQUIRE_TENSORS_CLOSE(nn::cross_entropy(cast(logits, DType::kF32), targets, "none", 0.1),
                        cast(nn::cross_entropy(logits, targets, "none", 0.1), DType::kF32), 1e-5,
                        1e-6);
}

TEST_CASE("losses reject bad inputs with a clear message") {
  Tensor logits = zeros({kN, kC});
  Tensor targets = from_vector<int64_t>(kTargets, {kN});
  CHECK_THROWS_WITH(nn::cross_entropy(logits, cast(targets, DType::kF32)),
                    "cross_entropy: expected targets i64[5] of class indices or f32[5,4] of class "
                    "probabilities for logits f32[5,4], got f32[5]");
  CHECK_THROWS_WITH(nn::cross_entropy(logits, reshape(targets, {5, 1})),
                    "cross_entropy: expected targets i64[5] of class indices or f32[5,4] of class "
                    "probabilities for logits f32[5,4], got i64[5,1]");
  CHECK_THROWS_WITH(nn::cross_entropy(logits, slice(targets, 0, 0, 3)),
                    "cross_entropy: expected targets i64[5] of class indices or f32[5,4] of class "
                    "probabilities for logits f32[5,4], got i64[3]");
  CHECK_THROWS_WITH(nn::cross_entropy(scalar(0), targets),
                    "cross_entropy: expected logits of a floating dtype and shape [C], [N, C] or "
                    "[N, C, d1, ...], got f32[]");
  CHECK_THROWS_WITH(nn::cross_entropy(logits, targets, "avg"),
                    "cross_entropy: reduction must be \"mean\", \"sum\" or \"none\", got \"avg\"");
  CHECK_THROWS_WITH(nn::cross_entropy(logits, targets, "mean", 1.5),
                    "cross_entropy: label_smoothing must be in [0, 1], got 1.5");
  CHECK_THROWS_WITH(nn::nll_loss(cast(logits, DType::kI64), targets),
                    "nll_loss: expected log_probs of a floating dtype and shape [C], [N, C] or "
                    "[N, C, d1, ...], got i64[5,4]");
  CHECK_THROWS_WITH(nn::mse_loss(zeros({2, 3}), zeros({3, 2})),
                    "mse_loss: expected target f32[2,3] like input, got f32[3,2]");
  CHECK_THROWS_WITH(nn::mse_loss(zeros({2}), zeros({2}), "total"),
                    "mse_loss: reduction must be \"mean\", \"sum\" or \"none\", got \"total\"");
  CHECK_THROWS_WITH(nn::binary_cross_entropy_with_logits(zeros({2}), zeros({2}, DType::kF64)),
                    "binary_cross_entropy_with_logits: expected targets f32[2] like logits, got "
                    "f64[2]");
  CHECK_THROWS_WITH(
      nn::binary_cross_entropy_with_logits(zeros({2}, DType::kI64), zeros({2}, DType::kI64)),
      "binary_cross_entropy_with_logits: expected logits of a floating dtype, got "
      "i64[2]");
}

}  // namespace
}  // namespace tc
