// clip_grad_norm_ and clip_grad_value_ against their formulas: the total
// norm of several grads for orders 1, 2, 3 and infinity, no change below the
// limit, NaN and non-finite norms, non-contiguous grads, and the errors.
#include "nn/clip_grad.h"

#include <cmath>
#include <vector>

#include "catch2/catch.hpp"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using Vec = std::vector<double>;

// Two parameters with grads {3, -4} (f64) and {12} (f32), and one without.
std::vector<Tensor> Params() {
  std::vector<Tensor> params = {zeros({2}, DType::kF64), zeros({1}), zeros({3})};
  params[0].set_grad(from_vector<double>({3, -4}, {2}));
  params[1].set_grad(from_vector<float>({12}, {1}));
  return params;
}

Vec GradValues(const std::vector<Tensor>& params) {
  Vec out;
  for (const Tensor& p : params) {
    if (!p.grad().defined()) continue;
    for (double v : p.grad().to(DType::kF64).to_vector<double>()) out.push_back(v);
  }
  return out;
}

TEST_CASE("clip_grad_norm_ rescales every grad by max_norm / (norm + 1e-6)") {
  struct Case {
    double norm_type, norm;
  };
  const double cube_root = std::cbrt(27.0 + 64 + 1728);
  for (const Case c : {Case{2, 13}, Case{1, 19}, Case{3, cube_root}, Case{nn::kInfNorm, 12}}) {
    INFO("norm_type " << c.norm_type);
    std::vector<Tensor> params = Params();
    const double total = nn::clip_grad_norm_(params, 2.0, c.norm_type);
    CHECK(total == Approx(c.norm).epsilon(1e-12));
    const double coef = 2.0 / (c.norm + 1e-6);
    const Vec got = GradValues(params);
    CHECK(got[0] == Approx(3 * coef).epsilon(1e-12));
    CHECK(got[1] == Approx(-4 * coef).epsilon(1e-12));
    CHECK(got[2] == Approx(12 * coef).epsilon(1e-6));  // f32
  }
  // At or below the limit the grads stay bit for bit.
  std::vector<Tensor> params = Params();
  CHECK(nn::clip_grad_norm_(params, 13.5) == Approx(13));
  CHECK(GradValues(params) == Vec{3, -4, 12});
}

TEST_CASE("clip_grad_norm_ with a non-finite norm, a non-contiguous grad, and errors") {
  std::vector<Tensor> params = Params();
  params[0].set_grad(from_vector<double>({NAN, 1}, {2}));
  CHECK(std::isnan(nn::clip_grad_norm_(params, 1.0)));
  CHECK(std::isnan(GradValues(params)[2]));  // scaled by the NaN coefficient, as PyTorch
  params = Params();
  params[0].set_grad(from_vector<double>({INFINITY, 1}, {2}));
  CHECK_THROWS_WITH(nn::clip_grad_norm_(params, 1.0, 2, /*error_if_nonfinite=*/true),
                    "clip_grad_norm_: the total norm of order 2 of the gradients is inf; with "
                    "error_if_nonfinite the grads are left as they are");
  CHECK(GradValues(params)[1] == 1);

  // A transposed grad is read and written through a contiguous copy.
  Tensor w = zeros({2, 2}, DType::kF64);
  w.set_grad(from_vector<double>({3, 0, 4, 0}, {2, 2}).transpose(0, 1));
  CHECK(nn::clip_grad_norm_({w}, 1.0) == Approx(5));
  CHECK(w.grad().is_contiguous());
  REQUIRE_TENSORS_CLOSE(w.grad(), from_vector<double>({3, 4, 0, 0}, {2, 2}) * (1 / (5 + 1e-6)),
                        1e-12, 1e-12);

  CHECK_THROWS_WITH(nn::clip_grad_norm_(params, 1.0, 0),
                    "clip_grad_norm_: norm_type must be > 0, got 0");
  CHECK(nn::clip_grad_norm_({zeros({2})}, 1.0) == 0);  // no grads: norm 0
}

TEST_CASE("clip_grad_value_ clamps every element into [-clip, clip]") {
  std::vector<Tensor> params = Params();
  nn::clip_grad_value_(params, 3.5);
  CHECK(GradValues(params) == Vec{3, -3.5, 3.5});
  params[0].set_grad(from_vector<double>({NAN, -1}, {2}));
  nn::clip_grad_value_(params, 0.5);
  const Vec got = GradValues(params);
  CHECK(std::isnan(got[0]));
  CHECK(got[1] == -0.5);
  CHECK_THROWS_WITH(nn::clip_grad_value_(params, -1),
                    "clip_grad_value_: clip_value must be >= 0, got -1");
  Tensor i = zeros({2});
  i.set_grad(zeros({2}, DType::kI64));
  CHECK_THROWS_WITH(nn::clip_grad_value_({i}, 1),
                    "clip_grad_value_: the grad of parameter 0 is i64[2]; only f32 and f64 grads "
                    "can be clipped");
}

}  // namespace
}  // namespace tc
