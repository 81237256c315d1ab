// The in-place initialisers of nn/init.h: each fills the same handle with
// PyTorch's distribution (bounds, moments, orthogonality), reproducibly from
// a seed, and rejects what PyTorch rejects.
#include "nn/init.h"

#include <cmath>

#include "catch2/catch.hpp"
#include "tests/test_util.h"

namespace tc {
namespace {

struct Moments {
  double mean, std, min, max;
};

Moments Of(const Tensor& t) {
  const std::vector<double> v = t.to(DType::kF64).to_vector<double>();
  double m = 0, ss = 0, lo = v[0], hi = v[0];
  for (double x : v) {
    m += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  m /= v.size();
  for (double x : v) ss += (x - m) * (x - m);
  return {m, std::sqrt(ss / v.size()), lo, hi};
}

TEST_CASE("initialisers fill in place and return the same handle") {
  Tensor w = zeros({64, 32});
  w.requires_grad_();
  const Tensor& back = nn::init::uniform_(w, -2, 3);
  CHECK(back.same(w));
  CHECK(w.requires_grad());
  const Moments u = Of(w);
  CHECK(u.min >= -2);
  CHECK(u.max < 3);
  CHECK(u.mean == Approx(0.5).margin(0.1));
  nn::init::constant_(w, 1.5);
  CHECK(Of(w).min == 1.5);
  CHECK(Of(w).max == 1.5);
  nn::init::zeros_(w);
  CHECK(Of(w).max == 0);
  nn::init::ones_(w);
  CHECK(Of(w).min == 1);
}

TEST_CASE("fans and gains are PyTorch's") {
  const nn::init::Fans conv = nn::init::calculate_fans(zeros({16, 8, 3, 5}));
  CHECK(conv.fan_in == 8 * 15);
  CHECK(conv.fan_out == 16 * 15);
  CHECK(nn::init::calculate_gain("relu") == Approx(std::sqrt(2.0)));
  CHECK(nn::init::calculate_gain("tanh") == Approx(5.0 / 3));
  CHECK(nn::init::calculate_gain("leaky_relu") == Approx(std::sqrt(2 / (1 + 0.0001))));
  CHECK(nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)) == Approx(std::sqrt(1.0 / 3)));
  CHECK(nn::init::calculate_gain("selu") == 0.75);
  CHECK_THROWS_WITH(nn::init::calculate_gain("swish"),
                    "calculate_gain: unsupported nonlinearity \"swish\" (linear, conv*, sigmoid, "
                    "tanh, relu, leaky_relu, selu)");
  CHECK_THROWS_WITH(nn::init::calculate_fans(zeros({5})),
                    "fan in and fan out can not be computed for a tensor with fewer than 2 "
                    "dimensions, got f32[5]");
}

TEST_CASE("xavier and kaiming draw with PyTorch's scale") {
  Tensor w = zeros({256, 512});
  nn::init::xavier_uniform_(w, 2);
  const double xb = 2 * std::sqrt(6.0 / (256 + 512));
  CHECK(Of(w).max <= xb);
  CHECK(Of(w).max > 0.99 * xb);
  nn::init::xavier_normal_(w);
  CHECK(Of(w).std == Approx(std::sqrt(2.0 / (256 + 512))).epsilon(0.02));
  nn::init::kaiming_uniform_(w, 0, "fan_in", "relu");
  const double kb = std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(512.0);
  CHECK(Of(w).max <= kb);
  CHECK(Of(w).max > 0.99 * kb);
  nn::init::kaiming_normal_(w, 0, "fan_out", "relu");
  CHECK(Of(w).std == Approx(std::sqrt(2.0 / 256)).epsilon(0.02));
  CHECK(nn::init::kaiming_uniform_(zeros({0, 4})).numel() == 0);  // a no-op, as in PyTorch
  CHECK_THROWS_WITH(nn::init::uniform_(w, 1, 0), "uniform_: expects a <= b, got a=1, b=0");
  CHECK_THROWS_WITH(nn::init::kaiming_normal_(w, 0, "fan_avg"),
                    "kaiming_normal_: mode must be \"fan_in\" or \"fan_out\", got \"fan_avg\"");
}

TEST_CASE("trunc_normal_ stays within [a, b] with the truncated moments") {
  Tensor w = zeros({200, 200});
  nn::init::trunc_normal_(w, 1, 2, -1, 3);  // the standardised bounds are -1 and 1
  const Moments m = Of(w);
  CHECK(m.min >= -1);
  CHECK(m.max <= 3);
  CHECK(m.min < -0.99);
  CHECK(m.max > 2.99);
  // A normal truncated to [-1, 1] has mean 0 and variance
  // 1 - 2 phi(1) / (Phi(1) - Phi(-1)).
  const double phi1 = std::exp(-0.5) / std::sqrt(2 * M_PI);
  const double mass = std::erf(1 / std::sqrt(2.0));
  CHECK(m.mean == Approx(1).margin(0.02));
  CHECK(m.std == Approx(2 * std::sqrt(1 - 2 * phi1 / mass)).epsilon(0.01));
  CHECK_THROWS_WITH(nn::init::trunc_normal_(w, 0, 1, 2, 2),
                    "trunc_normal_: needs a < b and std > 0, got a=2, b=2, std=1");
}

TEST_CASE("orthogonal_ gives orthonormal rows or columns, times the gain") {
  for (const Shape& shape : {Shape{6, 10}, Shape{10, 6}, Shape{4, 2, 3}}) {
    Tensor w = zeros(shape, DType::kF64);
    nn::init::orthogonal_(w, 3);
    const int64_t rows = shape[0], cols = w.numel() / rows;
    const Tensor q = reshape(w, {rows, cols}) / 3.0;
    const Tensor gram =
        rows <= cols ? matmul(q, transpose(q, 0, 1)) : matmul(transpose(q, 0, 1), q);
    const int64_t n = std::min(rows, cols);
    std::vector<double> eye(n * n, 0);
    for (int64_t i = 0; i < n; ++i) eye[i * n + i] = 1;
    REQUIRE_TENSORS_CLOSE(gram, from_vector<double>(eye, {n, n}), 1e-12, 1e-12);
  }
  CHECK_THROWS_WITH(nn::init::orthogonal_(zeros({3})),
                    "orthogonal_: expected a tensor of 2 or more dimensions, got f32[3]");
}

TEST_CASE("a seed fixes the draw") {
  Generator a(9), b(9);
  Tensor x = zeros({10, 10}), y = zeros({10, 10});
  nn::init::orthogonal_(x, 1, &a);
  nn::init::orthogonal_(y, 1, &b);
  REQUIRE_TENSORS_CLOSE(x, y, 0, 0);
  CHECK_THROWS_WITH(nn::init::normal_(zeros({2}, DType::kI64)),
                    "normal_: expected a floating tensor, got i64[2]");
}

}  // namespace
}  // namespace tc
