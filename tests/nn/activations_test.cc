// The activation layers: values at hand-picked points (kinks and large
// inputs included), gradients against finite differences away from the
// kinks, the gradient PyTorch gives at them, and the compiled function
// against eager.
#include "nn/activations.h"

#include <cmath>

#include "autodiff/engine.h"
#include "catch2/catch.hpp"
#include "tests/nn/layer_check.h"
#include "tests/nn/nn_test_util.h"

namespace tc {
namespace {

using testing::CheckLayer;

// Points away from every kink, in f64, requiring grad.
TensorTree Smooth() {
  return TensorTree::MakeLeaf(
      from_vector<double>({-3.1, -1.7, -0.6, -0.2, 0.3, 0.8, 1.4, 2.9}, {2, 4}).requires_grad_());
}

std::vector<double> At(nn::Module& m, std::vector<double> xs) {
  return m(from_vector<double>(xs, {static_cast<int64_t>(xs.size())})).to_vector<double>();
}

// d act / dx at each point.
std::vector<double> Slope(nn::Module& m, std::vector<double> xs) {
  Tensor x = from_vector<double>(xs, {static_cast<int64_t>(xs.size())}).requires_grad_();
  return grad({sum(m(x))}, {x}).value()[0].to_vector<double>();
}

template <typename M, typename... Args>
testing::ModuleFactory Factory(Args... args) {
  return [=] { return std::make_shared<M>(args...); };
}

TEST_CASE("SiLU, LeakyReLU, ELU: values and the gradient at 0") {
  nn::SiLU silu;
  CHECK(At(silu, {0, 1})[1] == Approx(1 / (1 + std::exp(-1.0))));
  nn::LeakyReLU leaky(0.2);
  CHECK(At(leaky, {-2, 0, 3}) == std::vector<double>{-0.4, 0, 3});
  CHECK(Slope(leaky, {-2, 0, 3}) == std::vector<double>{0.2, 0.2, 1});
  nn::ELU elu(0.5);
  CHECK(At(elu, {-1, 2})[0] == Approx(0.5 * (std::exp(-1.0) - 1)));
  CHECK(Slope(elu, {0, 1000})[0] == Approx(0.5));
  CHECK(Slope(elu, {0, 1000})[1] == 1);  // the exp branch stays finite
  CHECK(leaky.ToString() == "LeakyReLU(negative_slope=0.2)");
  CHECK(elu.ToString() == "ELU(alpha=0.5)");
  for (const auto& make :
       {Factory<nn::SiLU>(), Factory<nn::LeakyReLU>(0.1), Factory<nn::ELU>(1.5)}) {
    CheckLayer(make, Smooth());
  }
}

TEST_CASE("Hardtanh clamps, with gradient 0 at and beyond its bounds") {
  nn::Hardtanh ht(-0.5, 2);
  CHECK(At(ht, {-3, -0.5, 1, 2, 5}) == std::vector<double>{-0.5, -0.5, 1, 2, 2});
  CHECK(Slope(ht, {-3, -0.5, 1, 2, 5}) == std::vector<double>{0, 0, 1, 0, 0});
  CHECK(ht.ToString() == "Hardtanh(min_val=-0.5, max_val=2.0)");
  CHECK_THROWS_WITH(nn::Hardtanh(1, 1), "Hardtanh: min_val (1) must be less than max_val (1)");
  CheckLayer(Factory<nn::Hardtanh>(-1.0, 1.0), Smooth());
}

TEST_CASE("Softplus is log(1 + exp(beta x)) / beta, linear past the threshold") {
  nn::Softplus sp(2, 10);
  const std::vector<double> v = At(sp, {-1, 0, 4.9, 6, 1000});
  CHECK(v[0] == Approx(std::log1p(std::exp(-2.0)) / 2));
  CHECK(v[1] == Approx(std::log(2.0) / 2));
  CHECK(v[2] == Approx(std::log1p(std::exp(9.8)) / 2));
  CHECK(v[3] == 6);
  CHECK(v[4] == 1000);
  const std::vector<double> g = Slope(sp, {0, 6, 1000});
  CHECK(g[0] == Approx(0.5));
  CHECK(g[1] == 1);
  CHECK(g[2] == 1);
  // log1p keeps e^x in f32 where log(1 + e^x) would round to 0.
  CHECK(nn::softplus(scalar(-20.0f)).item<float>() == Approx(std::exp(-20.0)).epsilon(1e-5));
  CHECK(nn::Softplus().ToString() == "Softplus(beta=1.0, threshold=20.0)");
  CheckLayer(Factory<nn::Softplus>(1.5, 3.0), Smooth());
}

TEST_CASE("Softmax and LogSoftmax modules over a dim") {
  nn::Softmax sm(1);
  nn::LogSoftmax lsm(-1);
  const Tensor x = from_vector<double>({1, 2, 3, 0, 0, 0}, {2, 3});
  REQUIRE_TENSORS_CLOSE(sm(x), softmax(x, 1), 0, 0);
  REQUIRE_TENSORS_CLOSE(lsm(x), log_softmax(x, 1), 0, 0);
  CHECK(sm(x).to_vector<double>()[3] == Approx(1.0 / 3));
  CHECK(sm.ToString() == "Softmax(dim=1)");
  CheckLayer(Factory<nn::Softmax>(int64_t{0}), Smooth());
  CheckLayer(Factory<nn::LogSoftmax>(int64_t{1}), Smooth());
}

}  // namespace
}  // namespace tc
