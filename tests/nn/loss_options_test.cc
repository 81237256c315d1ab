// The losses' PyTorch options and the elementwise and divergence losses:
// class weights, ignore_index and label smoothing together against a
// hand-written loop; L1, smooth L1, Huber, BCE (weights, pos_weight) and KL
// divergence on hand-worked values; each one's gradients against finite
// differences and its compiled function against eager.
#include <cmath>
#include <functional>

#include "autodiff/engine.h"
#include "catch2/catch.hpp"
#include "nn/loss_modules.h"
#include "nn/losses.h"
#include "pipeline/compiler_pipeline.h"
#include "tests/nn/layer_check.h"
#include "tests/nn/nn_test_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using testing::Random;

// A loss as a module over (input, target), to compile it like a model.
class LossModule : public nn::Module {
 public:
  using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;
  explicit LossModule(Fn fn) : fn_(std::move(fn)) {}
  TensorTree forward(const TensorTree& in) override {
    return TensorTree::MakeLeaf(fn_(in[0].leaf(), in[1].leaf()));
  }

 private:
  Fn fn_;
};

// Gradients against finite differences, compiled against eager.
void CheckLoss(const LossModule::Fn& fn, const Tensor& input, const Tensor& target) {
  const TensorTree in =
      TensorTree::Tuple({TensorTree::MakeLeaf(input.detach().clone().requires_grad_()),
                         TensorTree::MakeLeaf(target)});
  testing::CheckLayer([fn] { return std::make_shared<LossModule>(fn); }, in);
}

std::vector<double> Values(const Tensor& t) { return t.to(DType::kF64).to_vector<double>(); }

TEST_CASE("cross_entropy with class weights, ignore_index and label smoothing, by hand") {
  constexpr int64_t n = 6, c = 3;
  const Tensor logits = Random({n, c}, DType::kF64, 1) * 2.0;
  const std::vector<int64_t> ys = {2, 0, 1, 1, 0, 2};
  const Tensor targets = from_vector<int64_t>(ys, {n});
  const Tensor weight = from_vector<double>({0.5, 2, 1.25}, {c});
  const std::vector<double> w = Values(weight), x = Values(logits);
  for (double s : {0.0, 0.3}) {
    for (const std::string reduction : {"mean", "sum", "none"}) {
      INFO("smoothing " << s << ", " << reduction);
      const int64_t ignore = 1;  // a real class: samples 2 and 3 drop out
      std::vector<double> per_sample;
      double total = 0, weight_sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        double m = -1e300, z = 0;
        for (int64_t k = 0; k < c; ++k) m = std::max(m, x[i * c + k]);
        for (int64_t k = 0; k < c; ++k) z += std::exp(x[i * c + k] - m);
        auto lp = [&](int64_t k) { return x[i * c + k] - m - std::log(z); };
        double loss = 0;
        if (ys[i] != ignore) {
          loss = (1 - s) * w[ys[i]] * -lp(ys[i]);
          for (int64_t k = 0; k < c; ++k) loss += s / c * w[k] * -lp(k);
          weight_sum += w[ys[i]];
        }
        per_sample.push_back(loss);
        total += loss;
      }
      const nn::ClassLossOptions options{
          .weight = weight, .ignore_index = ignore, .reduction = reduction, .label_smoothing = s};
      const Tensor got = nn::cross_entropy(logits, targets, options);
      const std::vector<double> want =
          reduction == "none"
              ? per_sample
              : std::vector<double>{reduction == "sum" ? total : total / weight_sum};
      REQUIRE_TENSORS_CLOSE(got, from_vector<double>(want, got.shape()), 1e-12, 1e-12);
      CheckLoss(
          [options](const Tensor& a, const Tensor& b) { return nn::cross_entropy(a, b, options); },
          logits, targets);
    }
  }
}

TEST_CASE("class losses: the weighted mean of a hand-worked case, and -100 ignored by default") {
  // Both rows give softmax [1/4, 3/4]; row 0 wants class 0, row 1 class 1.
  const double l3 = std::log(3.0);
  const Tensor logits = from_vector<double>({0, l3, 0, l3, 5, 5}, {3, 2});
  const Tensor targets = from_vector<int64_t>({0, 1, -100}, {3});
  const Tensor weight = from_vector<double>({2, 1}, {2});
  const double want = (2 * std::log(4.0) + std::log(4.0 / 3)) / 3;
  CHECK(nn::cross_entropy(logits, targets, {.weight = weight}).item<double>() == Approx(want));
  CHECK(nn::nll_loss(log_softmax(logits, 1), targets, {.weight = weight}).item<double>() ==
        Approx(want));
  // The default ignore_index drops row 2 from the plain mean too.
  CHECK(nn::cross_entropy(logits, targets).item<double>() ==
        Approx((std::log(4.0) + std::log(4.0 / 3)) / 2));
  CHECK(Values(nn::nll_loss(log_softmax(logits, 1), targets, "none"))[2] == 0);
  CheckLoss(
      [w = weight](const Tensor& a, const Tensor& b) {
        return nn::nll_loss(a, b, {.weight = w, .reduction = "sum"});
      },
      log_softmax(logits, 1), targets);
}

TEST_CASE("class losses over [N, C, d1, d2] are the losses of each position's row") {
  const Tensor logits = Random({2, 3, 2, 2}, DType::kF64, 4) * 2.0;
  const Tensor targets = from_vector<int64_t>({0, 2, 1, 1, 2, 0, 0, 1}, {2, 2, 2});
  // Row (n, i, j) of the [8, 3] form is logits[n, :, i, j].
  const Tensor rows = reshape(permute(logits, {0, 2, 3, 1}), {8, 3});
  const Tensor row_targets = reshape(targets, {8});
  for (const std::string reduction : {"mean", "sum", "none"}) {
    INFO(reduction);
    const nn::ClassLossOptions options{.weight = from_vector<double>({0.5, 2, 1}, {3}),
                                       .ignore_index = 2,
                                       .reduction = reduction,
                                       .label_smoothing = 0.2};
    const Tensor got = nn::cross_entropy(logits, targets, options);
    Tensor want = nn::cross_entropy(rows, row_targets, options);
    if (reduction == "none") want = reshape(want, {2, 2, 2});
    REQUIRE_TENSORS_CLOSE(got, want, 1e-12, 1e-12);
    nn::ClassLossOptions nll = options;
    nll.label_smoothing = 0;
    REQUIRE_TENSORS_CLOSE(nn::nll_loss(log_softmax(logits, 1), targets, nll),
                          nn::nll_loss(log_softmax(rows, 1), row_targets, nll).reshape(got.shape()),
                          1e-12, 1e-12);
  }
  CheckLoss([](const Tensor& a, const Tensor& b) { return nn::cross_entropy(a, b, "none"); },
            logits, targets);
  // One unbatched sample: scores [C], a 0-d target, a 0-d loss for "none".
  const Tensor one = slice(rows, 0, 1, 2).reshape({3});
  const Tensor label = from_vector<int64_t>({2}, {});
  CHECK(nn::cross_entropy(one, label, "none").shape() == Shape{});
  CHECK(nn::cross_entropy(one, label).item<double>() ==
        Approx(nn::cross_entropy(slice(rows, 0, 1, 2), reshape(label, {1})).item<double>()));
  CHECK(nn::nll_loss(log_softmax(one, 0), label, "none").item<double>() ==
        Approx(-log_softmax(one, 0).to_vector<double>()[2]));
  const Tensor probs = softmax(one * 0.5, 0);
  CHECK(nn::cross_entropy(one, probs, "none").shape() == Shape{});
  CHECK(nn::cross_entropy(one, probs).item<double>() ==
        Approx(-sum(log_softmax(one, 0) * probs).item<double>()));
  CHECK_THROWS_WITH(nn::cross_entropy(one, reshape(label, {1})),
                    "cross_entropy: expected targets i64[] of class indices or f64[3] of class "
                    "probabilities for logits f64[3], got i64[1]");
  CHECK_THROWS_WITH(nn::cross_entropy(logits, targets, {.weight = zeros({2}, DType::kF64)}),
                    "cross_entropy: expected weight f64[3], one per class, got f64[2]");
}

TEST_CASE("cross_entropy against class probabilities, smoothed and weighted, by hand") {
  constexpr int64_t n = 4, c = 3;
  const Tensor logits = Random({n, c}, DType::kF64, 5) * 2.0;
  const Tensor probs = softmax(Random({n, c}, DType::kF64, 6), 1);
  const std::vector<double> w = {0.5, 2, 1.25}, x = Values(logits), t = Values(probs);
  const Tensor weight = from_vector<double>(w, {c});
  for (double s : {0.0, 0.2}) {
    INFO("smoothing " << s);
    std::vector<double> per_sample;
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      double z = 0;
      for (int64_t k = 0; k < c; ++k) z += std::exp(x[i * c + k]);
      double loss = 0;
      for (int64_t k = 0; k < c; ++k) {
        const double smoothed = (1 - s) * t[i * c + k] + s / c;
        loss -= w[k] * smoothed * (x[i * c + k] - std::log(z));
      }
      per_sample.push_back(loss);
      total += loss;
    }
    const nn::ClassLossOptions options{.weight = weight, .label_smoothing = s};
    // "mean" is over the samples, whatever the weights.
    CHECK(nn::cross_entropy(logits, probs, options).item<double>() == Approx(total / n));
    nn::ClassLossOptions none = options;
    none.reduction = "none";
    REQUIRE_TENSORS_CLOSE(nn::cross_entropy(logits, probs, none),
                          from_vector<double>(per_sample, {n}), 1e-12, 1e-12);
    CheckLoss(
        [options](const Tensor& a, const Tensor& b) { return nn::cross_entropy(a, b, options); },
        logits, probs);
  }
  // One-hot probabilities are the class indices.
  const Tensor labels = from_vector<int64_t>({1, 0, 2, 2}, {n});
  const Tensor one_hot = cast(eq(reshape(labels, {n, 1}), arange(c)), DType::kF64);
  CHECK(nn::cross_entropy(logits, one_hot, "mean", 0.1).item<double>() ==
        Approx(nn::cross_entropy(logits, labels, "mean", 0.1).item<double>()));
  // Over [N, C, d]: probabilities of the logits' shape.
  const Tensor spatial = Random({2, 3, 4}, DType::kF64, 7);
  CheckLoss([](const Tensor& a, const Tensor& b) { return nn::cross_entropy(a, b, "sum"); },
            spatial, softmax(Random({2, 3, 4}, DType::kF64, 8), 1));
}

TEST_CASE("class losses compile over a symbolic batch, indices and probabilities") {
  const Tensor w = from_vector<double>({0.5, 2, 1}, {3});
  struct Case {
    const char* name;
    Shape logits;  // with the batch first; targets follow
    bool probabilities;
  };
  for (const Case c : {Case{"[N, C, d]", {0, 3, 4}, false}, Case{"[N, C]", {0, 3}, true},
                       Case{"[N, C, d] probabilities", {0, 3, 2}, true}}) {
    INFO(c.name);
    auto criterion = std::make_shared<nn::CrossEntropyLoss>(
        nn::ClassLossOptions{.weight = w, .ignore_index = 1, .label_smoothing = 0.1});
    auto inputs = [&](int64_t n, uint64_t seed) {
      Shape shape = c.logits;
      shape[0] = n;
      const Tensor x = Random(shape, DType::kF64, seed).requires_grad_();
      Shape sample = shape;
      sample.erase(sample.begin() + 1);
      std::vector<int64_t> classes(static_cast<size_t>(n * (sample.size() > 1 ? sample[1] : 1)));
      for (size_t i = 0; i < classes.size(); ++i)
        classes[i] = static_cast<int64_t>(i * 7 + seed) % 3;
      const Tensor t = c.probabilities ? softmax(Random(shape, DType::kF64, seed + 1), 1)
                                       : from_vector<int64_t>(classes, sample);
      return TensorTree::Tuple({TensorTree::MakeLeaf(x), TensorTree::MakeLeaf(t)});
    };
    Function f =
        compile(*criterion, inputs(2, 1),
                {.dynamic_dims = {{"arg0", {0}}, {"arg1", {0}}}, .automatic_dynamic = false})
            .value();
    for (int64_t n : {3, 5}) {
      INFO("batch " << n);
      const TensorTree in = inputs(n, 10 * n);
      const Tensor x = in[0].leaf();
      const Tensor compiled = f(in).value().leaf();
      const Tensor eager = (*criterion)(x, in[1].leaf());
      REQUIRE_TENSORS_CLOSE(compiled, eager, 1e-12, 1e-12);
      const Tensor g_compiled = grad({compiled}, {x}).value()[0];
      const Tensor g_eager = grad({eager}, {x}).value()[0];
      REQUIRE_TENSORS_CLOSE(g_compiled, g_eager, 1e-12, 1e-12);
    }
  }
}

TEST_CASE("L1, smooth L1 and Huber on hand-worked differences") {
  const Tensor d = from_vector<double>({0, 0.5, 2, -3}, {4});
  const Tensor zero = zeros({4}, DType::kF64);
  CHECK(Values(nn::l1_loss(d, zero, "none")) == std::vector<double>{0, 0.5, 2, 3});
  CHECK(Values(nn::smooth_l1_loss(d, zero, "none")) == std::vector<double>{0, 0.125, 1.5, 2.5});
  // |d| = beta takes the linear branch, as in PyTorch.
  CHECK(Values(nn::smooth_l1_loss(d, zero, "none", 0.5)) ==
        std::vector<double>{0, 0.25, 1.75, 2.75});
  CHECK(Values(nn::smooth_l1_loss(d, zero, "none", 0)) == std::vector<double>{0, 0.5, 2, 3});
  CHECK(Values(nn::huber_loss(d, zero, "none", 2)) == std::vector<double>{0, 0.125, 2, 4});
  CHECK(nn::huber_loss(d, zero, "sum", 2).item<double>() == 6.125);
  CHECK(nn::l1_loss(d, zero).item<double>() == 5.5 / 4);
  const Tensor a = Random({3, 4}, DType::kF64, 2) * 3.0, b = Random({3, 4}, DType::kF64, 3);
  CheckLoss([](const Tensor& x, const Tensor& y) { return nn::l1_loss(x, y); }, a, b);
  CheckLoss([](const Tensor& x, const Tensor& y) { return nn::smooth_l1_loss(x, y, "sum", 0.7); },
            a, b);
  CheckLoss([](const Tensor& x, const Tensor& y) { return nn::huber_loss(x, y, "none", 1.3); }, a,
            b);
  CHECK_THROWS_WITH(nn::huber_loss(d, zero, "mean", 0), "huber_loss: delta must be > 0, got 0");
}

TEST_CASE("binary_cross_entropy clamps its logs at -100 and takes a weight") {
  const Tensor p = from_vector<double>({0.5, 0.9, 0, 1, 0}, {5});
  const Tensor t = from_vector<double>({1, 0, 0, 1, 1}, {5});
  const std::vector<double> v = Values(nn::binary_cross_entropy(p, t, {.reduction = "none"}));
  CHECK(v[0] == Approx(std::log(2.0)));
  CHECK(v[1] == Approx(-std::log(0.1)));
  CHECK(v[2] == 0);
  CHECK(v[3] == 0);
  CHECK(v[4] == 100);
  const Tensor w = from_vector<double>({2, 1, 1, 1, 0.5}, {5});
  CHECK(nn::binary_cross_entropy(p, t, {.weight = w, .reduction = "sum"}).item<double>() ==
        Approx(2 * std::log(2.0) - std::log(0.1) + 50));
  const Tensor probs = sigmoid(Random({2, 3}, DType::kF64, 4) * 2.0);
  const Tensor targets = Random({2, 3}, DType::kF64, 5) * 0.5 + 0.5;
  CheckLoss([](const Tensor& x, const Tensor& y) { return nn::binary_cross_entropy(x, y); }, probs,
            targets);
  // PyTorch's gradient at the edges, in f32: (p - t) / max(p (1 - p), 1e-12),
  // finite for a denormal p and -1e12 at p = 0 with t = 1.
  const Tensor edge = from_vector<float>({1e-39f, 0, 1, 0.25f}, {4}).requires_grad_();
  const Tensor edge_targets = from_vector<float>({0, 1, 0, 1}, {4});
  sum(nn::binary_cross_entropy(edge, edge_targets, {.reduction = "none"})).backward();
  const std::vector<float> g = edge.grad().to_vector<float>();
  CHECK(std::abs(g[0]) <= 1e-26);  // about 1e-39 / 1e-12 (0 where denormals flush)
  CHECK(g[1] == Approx(-1e12));
  CHECK(g[2] == Approx(1e12));
  CHECK(g[3] == Approx(-0.75 / (0.25 * 0.75)));
}

TEST_CASE("binary_cross_entropy_with_logits weights the positive term by pos_weight") {
  const Tensor x = from_vector<double>({0, 0, 2}, {1, 3});
  const Tensor t = from_vector<double>({1, 0, 1}, {1, 3});
  const Tensor pos_weight = from_vector<double>({3, 3, 0.5}, {3});
  const std::vector<double> v = Values(
      nn::binary_cross_entropy_with_logits(x, t, {.pos_weight = pos_weight, .reduction = "none"}));
  CHECK(v[0] == Approx(3 * std::log(2.0)));
  CHECK(v[1] == Approx(std::log(2.0)));  // no positive term where t = 0
  CHECK(v[2] == Approx(0.5 * std::log1p(std::exp(-2.0))));
  const Tensor logits = Random({4, 3}, DType::kF64, 6) * 3.0;
  const Tensor targets = Random({4, 3}, DType::kF64, 7) * 0.5 + 0.5;
  const Tensor weight = Random({3}, DType::kF64, 8) + 1.5;
  CheckLoss(
      [=](const Tensor& a, const Tensor& b) {
        return nn::binary_cross_entropy_with_logits(a, b,
                                                    {.weight = weight, .pos_weight = pos_weight});
      },
      logits, targets);
  CHECK_THROWS_WITH(nn::binary_cross_entropy_with_logits(
                        logits, targets, {.pos_weight = zeros({2, 3}, DType::kF64)}),
                    "binary_cross_entropy_with_logits: expected pos_weight of dtype f64 that "
                    "broadcasts to f64[4,3], got f64[2,3]");
  // Broadcast as PyTorch's: [C, 1, 1] over the channels of NCHW logits.
  const Tensor maps = Random({2, 3, 2, 2}, DType::kF64, 9);
  const Tensor map_targets = Random({2, 3, 2, 2}, DType::kF64, 10) * 0.5 + 0.5;
  const Tensor channel_weight = from_vector<double>({3, 1, 0.5}, {3, 1, 1});
  const Tensor per_channel = nn::binary_cross_entropy_with_logits(
      maps, map_targets, {.pos_weight = channel_weight, .reduction = "none"});
  for (int64_t c = 0; c < 3; ++c) {
    const Tensor one = nn::binary_cross_entropy_with_logits(
        slice(maps, 1, c, c + 1), slice(map_targets, 1, c, c + 1),
        {.pos_weight = slice(channel_weight, 0, c, c + 1).reshape({1}), .reduction = "none"});
    CHECK(testing::CompareTensors(slice(per_channel, 1, c, c + 1), one, 1e-15, 0) == "");
  }
  CheckLoss(
      [=](const Tensor& a, const Tensor& b) {
        return nn::binary_cross_entropy_with_logits(a, b, {.pos_weight = channel_weight});
      },
      maps, map_targets);
}

TEST_CASE("kl_div: target (log target - input), 0 where the target is 0") {
  // KL(p || q) for p = [1/2, 1/2, 0], q = [1/4, 1/4, 1/2] is log 2.
  const Tensor log_q = log(from_vector<double>({0.25, 0.25, 0.5}, {1, 3}));
  const Tensor p = from_vector<double>({0.5, 0.5, 0}, {1, 3});
  CHECK(Values(nn::kl_div(log_q, p, "none")) ==
        std::vector<double>{0.5 * std::log(2.0), 0.5 * std::log(2.0), 0});
  CHECK(nn::kl_div(log_q, p, "batchmean").item<double>() == Approx(std::log(2.0)));
  CHECK(nn::kl_div(log_q, p).item<double>() == Approx(std::log(2.0) / 3));
  const Tensor p2 = from_vector<double>({0.5, 0.25, 0.25}, {1, 3});
  CHECK(nn::kl_div(log_q, log(p2), "sum", /*log_target=*/true).item<double>() ==
        Approx(nn::kl_div(log_q, p2, "sum").item<double>()));
  const Tensor input = log_softmax(Random({3, 4}, DType::kF64, 9), 1);
  const Tensor target = softmax(Random({3, 4}, DType::kF64, 10), 1);
  CheckLoss([](const Tensor& a, const Tensor& b) { return nn::kl_div(a, b, "batchmean"); }, input,
            target);
  CheckLoss([](const Tensor& a, const Tensor& b) { return nn::kl_div(a, b, "sum", true); }, input,
            log(target));
  CHECK_THROWS_WITH(nn::kl_div(input, target, "avg"),
                    "kl_div: reduction must be \"mean\", \"sum\", \"batchmean\" or \"none\", got "
                    "\"avg\"");
}

TEST_CASE("loss modules are their functions, with weights as buffers") {
  const Tensor x = Random({4, 3}, DType::kF64, 20), y = Random({4, 3}, DType::kF64, 21);
  const Tensor p = sigmoid(x), t = sigmoid(y), labels = from_vector<int64_t>({2, 0, 1, 1}, {4});
  const Tensor w = from_vector<double>({0.5, 2, 1}, {3});
  auto same = [](const Tensor& a, const Tensor& b) { REQUIRE_TENSORS_CLOSE(a, b, 0, 0); };
  same(nn::CrossEntropyLoss({.weight = w, .label_smoothing = 0.1})(x, labels),
       nn::cross_entropy(x, labels, {.weight = w, .label_smoothing = 0.1}));
  same(nn::NLLLoss({.reduction = "sum"})(x, labels), nn::nll_loss(x, labels, "sum"));
  same(nn::MSELoss("none")(x, y), nn::mse_loss(x, y, "none"));
  same(nn::L1Loss()(x, y), nn::l1_loss(x, y));
  same(nn::SmoothL1Loss("sum", 0.3)(x, y), nn::smooth_l1_loss(x, y, "sum", 0.3));
  same(nn::HuberLoss("mean", 0.4)(x, y), nn::huber_loss(x, y, "mean", 0.4));
  same(nn::KLDivLoss("batchmean", true)(x, y), nn::kl_div(x, y, "batchmean", true));
  same(nn::BCELoss({.weight = w})(p, t), nn::binary_cross_entropy(p, t, {.weight = w}));
  same(nn::BCEWithLogitsLoss({.weight = w, .pos_weight = w * 2.0})(x, t),
       nn::binary_cross_entropy_with_logits(x, t, {.weight = w, .pos_weight = w * 2.0}));

  // PyTorch's buffer names, only for the tensors given; to(dtype) converts them.
  nn::BCEWithLogitsLoss bce({.weight = w, .pos_weight = w});
  CHECK(testing::Names(bce.named_buffers()) == std::vector<std::string>{"weight", "pos_weight"});
  CHECK(nn::CrossEntropyLoss().named_buffers().empty());
  nn::CrossEntropyLoss criterion({.weight = w});
  CHECK(criterion.ToString() == "CrossEntropyLoss()");
  criterion.to(DType::kF32);
  CHECK(criterion.named_buffers()[0].second.dtype() == DType::kF32);
  CHECK(criterion(cast(x, DType::kF32), labels).item<float>() ==
        Approx(nn::cross_entropy(x, labels, {.weight = w}).item<double>()));
  CHECK_THROWS_WITH(criterion(cast(x, DType::kF32)),
                    "CrossEntropyLoss: expected the tuple (input, target), got *");

  // Compiled like any module, its weight a buffer of the graph.
  testing::CheckLayer(
      [w] { return std::make_shared<nn::CrossEntropyLoss>(nn::ClassLossOptions{.weight = w}); },
      TensorTree::Tuple({TensorTree::MakeLeaf(x.detach().clone().requires_grad_()),
                         TensorTree::MakeLeaf(labels)}));
}

TEST_CASE("the options' errors name the loss, what it expected and what came") {
  const Tensor logits = zeros({4, 3}), targets = zeros({4}, DType::kI64);
  CHECK_THROWS_WITH(nn::cross_entropy(logits, targets, {.weight = ones({2})}),
                    "cross_entropy: expected weight f32[3], one per class, got f32[2]");
  CHECK_THROWS_WITH(nn::nll_loss(logits, targets, {.label_smoothing = 0.1}),
                    "nll_loss: label_smoothing is a cross_entropy option");
  CHECK_THROWS_WITH(nn::nll_loss(logits, logits),
                    "nll_loss: expected targets i64[4] of class indices for log_probs f32[4,3], "
                    "got f32[4,3]");
  CHECK_THROWS_WITH(nn::cross_entropy(zeros({2, 3, 5}), zeros({2, 3}, DType::kI64)),
                    "cross_entropy: expected targets i64[2,5] of class indices or f32[2,3,5] of "
                    "class probabilities for logits f32[2,3,5], got i64[2,3]");
  CHECK_THROWS_WITH(nn::binary_cross_entropy(logits, logits, {.weight = ones({2})}),
                    "binary_cross_entropy: expected weight of dtype f32 that broadcasts to "
                    "f32[4,3], got f32[2]");
  CHECK_THROWS_WITH(nn::binary_cross_entropy(logits, logits, {.pos_weight = ones({3})}),
                    "binary_cross_entropy: pos_weight is a binary_cross_entropy_with_logits "
                    "option");
  CHECK_THROWS_WITH(nn::smooth_l1_loss(logits, logits, "mean", -1),
                    "smooth_l1_loss: beta must be >= 0, got -1");
}

}  // namespace
}  // namespace tc
