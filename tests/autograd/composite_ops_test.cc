// The ops written with other ops (select, stack, squeeze, unsqueeze, the
// logical ops, masked_fill, linear without a bias, the sum of bools), as PyTorch's of the same
// names: values against hand-worked ones, gradients against finite
// differences in f64, and every error a caller can hit.
#include "autodiff/gradcheck.h"
#include "catch2/catch.hpp"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using testing::ThrownMessage;

Tensor Iota(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return reshape(arange(0, static_cast<double>(n), 1, DType::kF64), shape);
}

Tensor Bools(const std::vector<int64_t>& values, std::vector<int64_t> shape) {
  return from_vector(values, shape).to(DType::kBool);
}

Tensor Grad(Shape shape, uint64_t seed) {
  Tensor t = testing::Random(shape, DType::kF64, seed);
  t.requires_grad_();
  return t;
}

TEST_CASE("select takes one index of a dim and drops the dim") {
  const Tensor x = Iota({2, 3, 4});
  CHECK(select(x, 1, 2).shape() == Shape{2, 4});
  CHECK(select(x, 1, 2).to_vector<double>() == std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23});
  CHECK(select(x, -1, -1).to_vector<double>() ==
        std::vector<double>{3, 7, 11, 15, 19, 23});  // last of the last dim
  CHECK(select(x, 0, 1).to_vector<double>() ==
        slice(x, 0, 1, 2).reshape({3, 4}).to_vector<double>());
  CHECK(ThrownMessage([&] { select(x, 1, 3); }) ==
        "select: index 3 is out of range for dim 1 of f64[2,3,4]");
  CHECK(ThrownMessage([&] { select(x, 1, -4); }) ==
        "select: index -4 is out of range for dim 1 of f64[2,3,4]");
  CHECK(ThrownMessage([&] { select(x, 3, 0); }).find("dim 3") != std::string::npos);
  REQUIRE(gradcheck([](const TensorList& in) { return TensorList{select(in[0], -2, 1)}; },
                    {Grad({2, 3, 4}, 1)})
              .ok());
}

TEST_CASE("stack joins tensors along a new dim") {
  const Tensor a = Iota({2, 2}), b = Iota({2, 2}) + 10.0;
  CHECK(stack({a, b}, 0).shape() == Shape{2, 2, 2});
  CHECK(stack({a, b}, 0).to_vector<double>() == std::vector<double>{0, 1, 2, 3, 10, 11, 12, 13});
  CHECK(stack({a, b}, -1).shape() == Shape{2, 2, 2});
  CHECK(stack({a, b}, -1).to_vector<double>() == std::vector<double>{0, 10, 1, 11, 2, 12, 3, 13});
  CHECK(stack({a, b}, 1).to_vector<double>() == std::vector<double>{0, 1, 10, 11, 2, 3, 12, 13});
  CHECK(ThrownMessage([&] { stack({}, 0); }) == "stack: expects a non-empty list of tensors");
  CHECK(ThrownMessage([&] {
          stack({a, Iota({2, 3})}, 0);
        }) == "stack: every tensor must be f64[2,2], tensor 1 is f64[2,3]");
  CHECK(ThrownMessage([&] { stack({a, b}, 3); }).find("dim 3") != std::string::npos);
  REQUIRE(gradcheck(
              [](const TensorList& in) {
                return TensorList{stack({in[0], in[1], in[0]}, 1)};
              },
              {Grad({3, 2}, 2), Grad({3, 2}, 3)})
              .ok());
}

TEST_CASE("squeeze and unsqueeze remove and insert size-1 dims") {
  const Tensor x = Iota({2, 1, 3, 1});
  CHECK(squeeze(x).shape() == Shape{2, 3});
  CHECK(squeeze(x, 1).shape() == Shape{2, 3, 1});
  CHECK(squeeze(x, -1).shape() == Shape{2, 1, 3});
  CHECK(squeeze(x, 0).shape() == Shape{2, 1, 3, 1});  // size 2: unchanged, as PyTorch
  CHECK(squeeze(scalar(2.0)).shape() == Shape{});
  CHECK(squeeze(scalar(2.0), 0).shape() == Shape{});  // PyTorch accepts dim 0 and -1 of a scalar
  CHECK(unsqueeze(Iota({2, 3}), 0).shape() == Shape{1, 2, 3});
  CHECK(unsqueeze(Iota({2, 3}), 2).shape() == Shape{2, 3, 1});
  CHECK(unsqueeze(Iota({2, 3}), -1).shape() == Shape{2, 3, 1});
  CHECK(unsqueeze(Iota({2, 3}), -3).shape() == Shape{1, 2, 3});
  CHECK(unsqueeze(Iota({2, 3}), 1).to_vector<double>() == Iota({2, 3}).to_vector<double>());
  CHECK(ThrownMessage([&] { unsqueeze(Iota({2, 3}), 3); }).find("dim 3") != std::string::npos);
  CHECK(ThrownMessage([&] { squeeze(x, 4); }).find("dim 4") != std::string::npos);
  REQUIRE(
      gradcheck(
          [](const TensorList& in) { return TensorList{unsqueeze(squeeze(in[0], 1), 0) * 2.0}; },
          {Grad({2, 1, 3}, 4)})
          .ok());
}

TEST_CASE("logical ops combine truth values into bool") {
  const Tensor a = Bools({1, 1, 0, 0}, {4}), b = Bools({1, 0, 1, 0}, {4});
  CHECK(logical_and(a, b).dtype() == DType::kBool);
  CHECK(logical_and(a, b).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 0});
  CHECK(logical_or(a, b).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1, 0});
  CHECK(logical_not(a).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 1, 1});
  // Numbers: nonzero is true; broadcasting as the elementwise ops.
  const Tensor n = from_vector<double>({0.0, -2.5, 0.0, 3.0}, {2, 2});
  CHECK(logical_and(n, Bools({1, 1}, {2})).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 1, 0, 1});
  CHECK(logical_or(n, Bools({1, 0}, {2, 1})).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 1, 0, 1});
  CHECK(logical_not(from_vector<int64_t>({0, 7}, {2})).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 0});
  CHECK(!ThrownMessage([&] { logical_and(a, Bools({1, 0, 1}, {3})); }).empty());
}

TEST_CASE("masked_fill sets the masked elements and passes no gradient to them") {
  const Tensor x = Iota({2, 3});
  const Tensor rows = Bools({0, 1, 1}, {3});
  CHECK(masked_fill(x, rows, -1).to_vector<double>() == std::vector<double>{0, -1, -1, 3, -1, -1});
  const Tensor column = Bools({1, 0}, {2, 1});
  CHECK(masked_fill(x, column, 9).to_vector<double>() == std::vector<double>{9, 9, 9, 3, 4, 5});
  CHECK(ThrownMessage([&] {
          masked_fill(x, Bools({1, 0, 1, 0, 1, 0}, {2, 1, 3}), 0);
        }) == "masked_fill: mask bool[2,1,3] does not broadcast to the input f64[2,3]");
  CHECK(ThrownMessage([&] {
          masked_fill(x, from_vector<int64_t>({1, 0, 1}, {3}), 0);
        }) == "masked_fill: mask must be bool, got i64[3]");
  Tensor leaf = Iota({2, 3});
  leaf.requires_grad_();
  sum(masked_fill(leaf, rows, 5)).backward();
  CHECK(leaf.grad().to_vector<double>() == std::vector<double>{1, 0, 0, 1, 0, 0});
  REQUIRE(
      gradcheck([rows](const TensorList& in) { return TensorList{masked_fill(in[0], rows, 2)}; },
                {Grad({4, 3}, 5)})
          .ok());
}

TEST_CASE("the sum of a bool tensor counts its true elements, in i64") {
  const Tensor flags = Bools({1, 0, 1, 1, 0, 1}, {2, 3});
  CHECK(sum(flags).dtype() == DType::kI64);
  CHECK(sum(flags).item<int64_t>() == 4);
  CHECK(sum(flags, {1}).to_vector<int64_t>() == std::vector<int64_t>{2, 2});
  CHECK(sum(gt(Iota({5}), scalar(1.5, DType::kF64))).item<int64_t>() == 3);
}

TEST_CASE("linear without a bias is x w^T at any rank") {
  const Tensor x = Iota({2, 2, 3}), w = Iota({4, 3});
  const Tensor expected = matmul(x, transpose(w, 0, 1));
  CHECK(linear(x, w).shape() == Shape{2, 2, 4});
  CHECK(linear(x, w).to_vector<double>() == expected.to_vector<double>());
  CHECK(linear(Iota({3}), w).shape() == Shape{4});
  CHECK(linear(Iota({3}), w).to_vector<double>() == std::vector<double>{5, 14, 23, 32});
  CHECK(ThrownMessage([&] { linear(scalar(1.0, DType::kF64), w); }) ==
        "linear: input must have rank >= 1, got a scalar");
  CHECK(ThrownMessage([&] { linear(x, Iota({3})); }) ==
        "linear: weight must be [out, in], got f64[3]");
  REQUIRE(gradcheck([](const TensorList& in) { return TensorList{linear(in[0], in[1])}; },
                    {Grad({2, 3, 5}, 6), Grad({4, 5}, 7)})
              .ok());
}

}  // namespace
}  // namespace tc
