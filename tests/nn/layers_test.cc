// The layers of nn/layers.h: each one's output and gradients (parameters and
// input) in f64 against an independent composition of ops, its parameter
// names, initialisation and training/eval behaviour.
#include "nn/layers.h"

#include <cmath>

#include "nn/init.h"
#include "runtime/autograd_meta.h"
#include "tests/nn/layer_check.h"
#include "tests/nn/nn_test_util.h"

namespace tc {
namespace {

using testing::Names;
using testing::ParamsAnd;
using testing::Random;
using testing::RequireSameValueAndGrads;

Tensor RandomF64(absl::Span<const int64_t> shape, uint64_t seed) {
  return Random(shape, DType::kF64, seed).requires_grad_();
}

// Overwrites a parameter's values (e.g. a zero-initialised bias) with random
// ones, so that the test sees it.
void Randomize(const Tensor& param, uint64_t seed) {
  NoGradGuard no_grad;
  nn::AssignInPlace(param, Random(param.shape(), param.dtype(), seed));
}

// Every element of `t` (f32) lies in [-bound, bound] and the extremes come
// close to the bound (the draw is uniform over the whole range).
void RequireUniformWithin(const Tensor& t, double bound) {
  const std::vector<double> v = t.to_vector<double>();
  double lo = 0, hi = 0;
  for (double x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  INFO("range [" << lo << ", " << hi << "], bound " << bound);
  REQUIRE(lo >= -bound);
  REQUIRE(hi <= bound);
  REQUIRE(lo < -0.9 * bound);
  REQUIRE(hi > 0.9 * bound);
}

TEST_CASE("Linear matches x W^T + b in value and gradients") {
  nn::Linear fc(5, 3);
  fc.to(DType::kF64);
  CHECK(Names(fc.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(fc.weight().shape() == Shape{3, 5});
  Tensor x = RandomF64({4, 5}, 1);
  Tensor want = matmul(x, transpose(fc.weight(), 0, 1)) + fc.bias();
  RequireSameValueAndGrads(fc(x), want, ParamsAnd(fc, {x}));
}

TEST_CASE("Linear without bias takes any leading dims") {
  nn::Linear fc(5, 3, /*bias=*/false);
  fc.to(DType::kF64);
  CHECK(Names(fc.named_parameters()) == std::vector<std::string>{"weight"});
  CHECK_FALSE(fc.bias().defined());
  Tensor x = RandomF64({2, 4, 5}, 2);
  Tensor w = fc.weight();
  // Each batch slice separately, then stacked back.
  Tensor want =
      concat({reshape(matmul(reshape(slice(x, 0, 0, 1), {4, 5}), transpose(w, 0, 1)), {1, 4, 3}),
              reshape(matmul(reshape(slice(x, 0, 1, 2), {4, 5}), transpose(w, 0, 1)), {1, 4, 3})},
             0);
  RequireSameValueAndGrads(fc(x), want, ParamsAnd(fc, {x}));
}

TEST_CASE("Linear and Conv2d initialise as PyTorch, reproducibly from a seed") {
  Generator a(7), b(7), c(8);
  nn::Linear fa(784, 512, true, &a), fb(784, 512, true, &b), fc(784, 512, true, &c);
  RequireUniformWithin(fa.weight(), 1 / std::sqrt(784.0));
  RequireUniformWithin(fa.bias(), 1 / std::sqrt(784.0));
  REQUIRE_TENSORS_CLOSE(fa.weight(), fb.weight(), 0, 0);
  REQUIRE_TENSORS_CLOSE(fa.bias(), fb.bias(), 0, 0);
  CHECK_FALSE(testing::CompareTensors(fa.weight(), fc.weight(), 0, 0).empty());
  CHECK(fa.weight().requires_grad());

  // fan_in = in / groups * k * k = 8 / 2 * 9.
  nn::Conv2d conv(8, 64, 3, 1, 0, 1, /*groups=*/2, true, &a);
  CHECK(conv.weight().shape() == Shape{64, 4, 3, 3});
  RequireUniformWithin(conv.weight(), 1 / std::sqrt(36.0));
  RequireUniformWithin(conv.bias(), 1 / std::sqrt(36.0));
}

TEST_CASE("Conv2d matches conv2d plus a per-channel bias") {
  struct Case {
    int64_t in, out, k, stride, padding, dilation, groups;
  };
  for (const Case& c :
       {Case{3, 4, 3, 1, 1, 1, 1}, Case{4, 6, 3, 2, 0, 1, 2}, Case{2, 2, 2, 1, 2, 2, 1}}) {
    nn::Conv2d conv(c.in, c.out, c.k, c.stride, c.padding, c.dilation, c.groups);
    conv.to(DType::kF64);
    CHECK(Names(conv.named_parameters()) == std::vector<std::string>{"weight", "bias"});
    Tensor x = RandomF64({2, c.in, 7, 6}, 3);
    Conv2dOptions o;
    o.stride = {c.stride, c.stride};
    o.padding = {c.padding, c.padding};
    o.dilation = {c.dilation, c.dilation};
    o.groups = c.groups;
    // The bias added along a channels-last view.
    Tensor want =
        permute(permute(conv2d(x, conv.weight(), o), {0, 2, 3, 1}) + conv.bias(), {0, 3, 1, 2});
    RequireSameValueAndGrads(conv(x), want, ParamsAnd(conv, {x}));
  }
  nn::Conv2d no_bias(2, 3, 1, 1, 0, 1, 1, /*bias=*/false);
  CHECK(Names(no_bias.named_parameters()) == std::vector<std::string>{"weight"});
  CHECK_THROWS_WITH(nn::Conv2d(3, 4, 3, 1, 0, 1, 2),
                    "Conv2d: in_channels (3) and out_channels (4) must be divisible by groups (2)");
}

// Per-channel batch statistics of x [N, C, H, W], shaped [1, C, 1, 1].
Tensor ChannelMean(const Tensor& x) { return mean(x, {0, 2, 3}, true); }
Tensor ChannelBiasedVar(const Tensor& x) {
  Tensor d = x - ChannelMean(x);
  return mean(d * d, {0, 2, 3}, true);
}
Tensor PerChannel(const Tensor& v) { return reshape(v, {1, v.size(0), 1, 1}); }

TEST_CASE("BatchNorm2d in training normalises by batch statistics") {
  nn::BatchNorm2d bn(3);
  bn.to(DType::kF64);
  CHECK(Names(bn.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(Names(bn.named_buffers()) ==
        std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"});
  CHECK(bn.weight().to_vector<double>() == std::vector<double>{1, 1, 1});
  CHECK(bn.bias().to_vector<double>() == std::vector<double>{0, 0, 0});
  Randomize(bn.weight(), 4);
  Randomize(bn.bias(), 5);
  Tensor x = RandomF64({4, 3, 5, 2}, 6);
  Tensor want = (x - ChannelMean(x)) / sqrt(ChannelBiasedVar(x) + 1e-5) * PerChannel(bn.weight()) +
                PerChannel(bn.bias());
  RequireSameValueAndGrads(bn(x), want, ParamsAnd(bn, {x}), 1e-9);
}

TEST_CASE("BatchNorm2d running statistics follow the momentum update; eval uses them") {
  const double momentum = 0.3, eps = 1e-3;
  nn::BatchNorm2d bn(2, eps, momentum);
  bn.to(DType::kF64);
  const Tensor running_mean = bn.running_mean();  // handles must stay valid
  const Tensor running_var = bn.running_var();
  std::vector<double> mean_want = {0, 0}, var_want = {1, 1};
  for (int step = 0; step < 3; ++step) {
    Tensor x = Random({3, 2, 4, 4}, DType::kF64, 10 + step) * (step + 1.0) + 1.0 * step;
    bn(x);
    // Closed form, with the unbiased variance from the raw values.
    for (int64_t c = 0; c < 2; ++c) {
      std::vector<double> v;
      for (int64_t n = 0; n < 3; ++n) {
        for (int64_t h = 0; h < 4; ++h) {
          for (int64_t w = 0; w < 4; ++w) v.push_back(x.at<double>({n, c, h, w}));
        }
      }
      double m = 0, ss = 0;
      for (double e : v) m += e;
      m /= v.size();
      for (double e : v) ss += (e - m) * (e - m);
      mean_want[c] = (1 - momentum) * mean_want[c] + momentum * m;
      var_want[c] = (1 - momentum) * var_want[c] + momentum * ss / (v.size() - 1);
    }
  }
  REQUIRE_TENSORS_CLOSE(running_mean, from_vector<double>(mean_want, {2}), 1e-12, 1e-12);
  REQUIRE_TENSORS_CLOSE(running_var, from_vector<double>(var_want, {2}), 1e-12, 1e-12);
  CHECK(bn.num_batches_tracked().dtype() == DType::kI64);
  CHECK(bn.num_batches_tracked().item<int64_t>() == 3);
  CHECK_FALSE(running_mean.requires_grad());
  CHECK(bn.named_buffers()[0].second.same(running_mean));

  bn.eval();
  Randomize(bn.weight(), 20);
  Randomize(bn.bias(), 21);
  Tensor x = RandomF64({2, 2, 3, 3}, 22);
  Tensor want = (x - PerChannel(running_mean)) / sqrt(PerChannel(running_var) + eps) *
                    PerChannel(bn.weight()) +
                PerChannel(bn.bias());
  RequireSameValueAndGrads(bn(x), want, ParamsAnd(bn, {x}));
  CHECK(bn.num_batches_tracked().item<int64_t>() == 3);  // eval leaves the buffers alone
  REQUIRE_TENSORS_CLOSE(running_mean, from_vector<double>(mean_want, {2}), 1e-12, 1e-12);
}

TEST_CASE("BatchNorm2d rejects a single value per channel in training") {
  nn::BatchNorm2d bn(2);
  CHECK_THROWS_WITH(bn(zeros({1, 2, 1, 1})),
                    "BatchNorm2d: expected more than 1 value per channel in training, got input "
                    "f32[1,2,1,1]");
}

TEST_CASE("LayerNorm matches the mean/variance formula over the trailing dims") {
  nn::LayerNorm ln({3, 4}, 1e-4);
  ln.to(DType::kF64);
  CHECK(Names(ln.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(ln.weight().shape() == Shape{3, 4});
  Randomize(ln.weight(), 30);
  Randomize(ln.bias(), 31);
  Tensor x = RandomF64({2, 5, 3, 4}, 32);
  Tensor m = mean(x, {2, 3}, true);
  Tensor v = mean((x - m) * (x - m), {2, 3}, true);
  Tensor want = (x - m) / sqrt(v + 1e-4) * ln.weight() + ln.bias();
  RequireSameValueAndGrads(ln(x), want, ParamsAnd(ln, {x}), 1e-9);
  CHECK_THROWS_WITH(ln(zeros({2, 4, 3}, DType::kF64)),
                    "LayerNorm: expected an input ending in dims [3,4], got f64[2,4,3]");
}

TEST_CASE("Embedding picks rows and scatters their gradient back") {
  Generator gen(3);
  nn::Embedding emb(6, 4, std::nullopt, &gen);
  CHECK(Names(emb.named_parameters()) == std::vector<std::string>{"weight"});
  // N(0, 1): 24 draws, loosely.
  const std::vector<double> w = emb.weight().to_vector<double>();
  double s = 0, ss = 0;
  for (double e : w) s += e, ss += e * e;
  CHECK(std::abs(s / w.size()) < 0.6);
  CHECK(ss / w.size() > 0.3);
  CHECK(ss / w.size() < 2.5);

  emb.to(DType::kF64);
  Tensor idx = from_vector<int64_t>({5, 0, 2, 2, 1, 5}, {2, 3});
  Tensor onehot = cast(eq(reshape(idx, {2, 3, 1}), arange(6)), DType::kF64);  // [2, 3, 6]
  auto want = [&] { return matmul(onehot, expand(reshape(emb.weight(), {1, 6, 4}), {2, 6, 4})); };
  RequireSameValueAndGrads(emb(idx), want(), emb.parameters());
  // int32 indices pick the same rows, as PyTorch's IntTensor indices.
  RequireSameValueAndGrads(emb(idx.to(DType::kI32)), want(), emb.parameters());
}

TEST_CASE("Embedding's padding row starts at zero and takes no gradient, eager and compiled") {
  Generator gen(4);
  nn::Embedding emb(5, 3, /*padding_idx=*/-1, &gen);
  CHECK(emb.padding_idx() == 4);
  CHECK(emb.ToString() == "Embedding(5, 3, padding_idx=4)");
  CHECK(emb.weight().slice(0, 4, 5).to_vector<float>() == std::vector<float>{0, 0, 0});

  // A trained-away padding row is still read; only its gradient is cut.
  emb.to(DType::kF64);
  Randomize(emb.weight(), 9);
  const Tensor idx = from_vector<int64_t>({4, 1, 4, 0, 2, 3}, {2, 3});
  const Tensor r = Random({2, 3, 3}, DType::kF64, 10);
  sum(emb(idx) * r).backward();
  const Tensor plain_grad = embedding_backward(r, idx, 5);
  REQUIRE_TENSORS_CLOSE(emb(idx), embedding(emb.weight(), idx), 0, 0);
  REQUIRE_TENSORS_CLOSE(emb.weight().grad().slice(0, 0, 4), plain_grad.slice(0, 0, 4), 0, 0);
  REQUIRE_TENSORS_CLOSE(emb.weight().grad().slice(0, 4, 5), zeros({1, 3}, DType::kF64), 0, 0);

  testing::RequireCompiledMatchesEager(
      [] {
        Generator g(6);
        auto m = std::make_shared<nn::Embedding>(5, 3, 1, &g);
        m->to(DType::kF64);
        Randomize(m->weight(), 11);
        return m;
      },
      TensorTree::MakeLeaf(idx));

  CHECK_THROWS_WITH(nn::Embedding(5, 3, 5), "Embedding: padding_idx must be in [-5, 5), got 5");
  CHECK_THROWS_WITH(nn::Embedding(5, 3, -6), "Embedding: padding_idx must be in [-5, 5), got -6");
}

TEST_CASE("Dropout zeroes and rescales in training, passes through in eval") {
  nn::Dropout drop(0.25);
  Tensor x = ones({100, 100});
  manual_seed(11);
  Tensor y = drop(x);
  const std::vector<float> v = y.to_vector<float>();
  int zeros_seen = 0;
  for (float e : v) {
    if (e == 0) {
      ++zeros_seen;
    } else {
      REQUIRE(e == Approx(1 / 0.75));
    }
  }
  CHECK(zeros_seen > 2200);
  CHECK(zeros_seen < 2800);
  manual_seed(11);
  REQUIRE_TENSORS_CLOSE(drop(x), y, 0, 0);  // the default generator decides the mask
  drop.eval();
  CHECK(drop(x).same(x));
  CHECK_THROWS_WITH(nn::Dropout(1.0), "Dropout: p must be in [0, 1), got 1");
}

TEST_CASE("activations match their formulas") {
  Tensor x = Random({3, 7}, DType::kF64, 40);
  const std::vector<double> v = x.to_vector<double>();
  auto elementwise = [&](double (*f)(double)) {
    std::vector<double> out;
    for (double e : v) out.push_back(f(e));
    return from_vector<double>(out, {3, 7});
  };
  REQUIRE_TENSORS_CLOSE(nn::ReLU()(x), elementwise([](double e) { return e > 0 ? e : 0.0; }), 0, 0);
  REQUIRE_TENSORS_CLOSE(nn::Sigmoid()(x),
                        elementwise([](double e) { return 1 / (1 + std::exp(-e)); }), 1e-12, 1e-12);
  REQUIRE_TENSORS_CLOSE(nn::Tanh()(x), elementwise([](double e) { return std::tanh(e); }), 1e-12,
                        1e-12);
  REQUIRE_TENSORS_CLOSE(nn::GELU()(x), elementwise([](double e) {
                          return 0.5 * e * (1 + std::erf(e / std::sqrt(2.0)));
                        }),
                        1e-12, 1e-12);
  REQUIRE_TENSORS_CLOSE(nn::GELU("tanh")(x), elementwise([](double e) {
                          const double k = std::sqrt(2 / M_PI);
                          return 0.5 * e * (1 + std::tanh(k * (e + 0.044715 * e * e * e)));
                        }),
                        1e-12, 1e-12);
}

TEST_CASE("pooling layers default the stride to the kernel size") {
  Tensor x = RandomF64({2, 3, 4, 6}, 50);
  // 2x2 windows as two extra dims of a reshaped view.
  Tensor windows = reshape(x, {2, 3, 2, 2, 3, 2});
  RequireSameValueAndGrads(nn::AvgPool2d(2)(x), mean(windows, {3, 5}), {x});
  REQUIRE_TENSORS_CLOSE(nn::MaxPool2d(2)(x), max(windows, {3, 5}), 0, 0);
  CHECK(nn::MaxPool2d(3, 1, 1)(x).shape() == Shape{2, 3, 4, 6});
  CHECK(nn::AvgPool2d(2, 1)(x).shape() == Shape{2, 3, 3, 5});
}

TEST_CASE("Flatten merges the dims from start_dim to end_dim") {
  Tensor x = Random({2, 3, 4, 5}, DType::kF64, 60);
  CHECK(nn::Flatten()(x).shape() == Shape{2, 60});
  CHECK(nn::Flatten(0, 1)(x).shape() == Shape{6, 4, 5});
  CHECK(nn::Flatten(-3, -2)(x).shape() == Shape{2, 12, 5});
  CHECK(nn::Flatten()(x).to_vector<double>() == x.to_vector<double>());
  CHECK_THROWS_WITH(nn::Flatten(2, 1)(x), "Flatten: dims [2, 1] do not fit an input f64[2,3,4,5]");
}

TEST_CASE("Sequential names children by position and chains them") {
  auto fc1 = std::make_shared<nn::Linear>(4, 8);
  auto fc2 = std::make_shared<nn::Linear>(8, 2);
  nn::Sequential seq({fc1, std::make_shared<nn::Tanh>()});
  seq.push_back(fc2);
  CHECK(seq.size() == 3);
  CHECK(seq[2] == fc2);
  CHECK(Names(seq.named_parameters()) ==
        std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  seq.to(DType::kF64);
  Tensor x = RandomF64({3, 4}, 70);
  RequireSameValueAndGrads(seq(x), (*fc2)(tanh((*fc1)(x))), ParamsAnd(seq, {x}));
  // The structured form runs the same chain on a leaf.
  REQUIRE_TENSORS_CLOSE(seq(TensorTree::MakeLeaf(x)).leaf(), seq(x), 0, 0);

  seq.eval();
  CHECK_FALSE(fc1->is_training());
}

}  // namespace
}  // namespace tc
