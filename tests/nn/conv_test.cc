// Conv1d, Conv2d with per-dimension arguments and groups, and ConvTranspose2d:
// PyTorch's weight layouts and output sizes, hand-worked values, gradients
// against finite differences, and the compiled function against eager.
#include "nn/conv.h"

#include "catch2/catch.hpp"
#include "nn/init.h"
#include "tests/nn/layer_check.h"
#include "tests/nn/nn_test_util.h"

namespace tc {
namespace {

using testing::CheckLayer;
using testing::Names;
using testing::Random;
using testing::RandomInput;

template <typename M, typename... Args>
testing::ModuleFactory Factory(Args... args) {
  return [=] {
    Generator gen(5);
    auto m = std::make_shared<M>(args..., &gen);
    m->to(DType::kF64);
    return m;
  };
}

void Set(const Tensor& param, std::vector<double> values) {
  nn::CopyValues(param, from_vector<double>(values, param.shape()).to(param.dtype()));
}

TEST_CASE("Conv1d: weight [out, in / groups, k], a hand-worked case") {
  nn::Conv1d conv(1, 1, 3);
  CHECK(Names(conv.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(conv.weight().shape() == Shape{1, 1, 3});
  Set(conv.weight(), {1, 0, -1});
  Set(conv.bias(), {0.5});
  // y[i] = x[i] - x[i + 2] + 0.5.
  const Tensor y = conv(from_vector<float>({1, 2, 4, 8, 16}, {1, 1, 5}));
  CHECK(y.to_vector<float>() == std::vector<float>{-2.5f, -5.5f, -11.5f});
  CHECK(nn::Conv1d(4, 6, 3, 2, 1, 1, 2).weight().shape() == Shape{6, 2, 3});
  CHECK(nn::Conv1d(4, 6, 3, 2, 1, 1, 2)(zeros({2, 4, 9})).shape() == Shape{2, 6, 5});
}

TEST_CASE("Conv1d gradients and compiled result, with stride, padding, dilation, groups") {
  CheckLayer(Factory<nn::Conv1d>(int64_t{4}, int64_t{6}, int64_t{3}, int64_t{2}, int64_t{1},
                                 int64_t{2}, int64_t{2}, true),
             RandomInput({2, 4, 9}, 1));
}

TEST_CASE("Conv2d takes a kernel, stride, padding and dilation per dim") {
  nn::Conv2d conv(3, 4, {2, 3}, {2, 1}, {1, 0}, {1, 2});
  CHECK(conv.weight().shape() == Shape{4, 3, 2, 3});
  // H: (7 + 2 - 2) / 2 + 1 = 4; W: (8 - 2 * 2 - 1) / 1 + 1 = 4.
  CHECK(conv(zeros({2, 3, 7, 8})).shape() == Shape{2, 4, 4, 4});
  CHECK(conv.ToString() ==
        "Conv2d(3, 4, kernel_size=(2, 3), stride=(2, 1), padding=(1, 0), dilation=(1, 2))");
  CHECK(nn::Conv2d(3, 8, 3).ToString() == "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))");
  CheckLayer(Factory<nn::Conv2d>(int64_t{3}, int64_t{4}, nn::IntPair(2, 3), nn::IntPair(2, 1),
                                 nn::IntPair(1, 0), nn::IntPair(1, 2), int64_t{1}, true),
             RandomInput({2, 3, 7, 8}, 2));
}

TEST_CASE("a depthwise Conv2d (groups = channels) convolves each channel alone") {
  nn::Conv2d conv(3, 3, 3, 1, 1, 1, /*groups=*/3, /*bias=*/false);
  CHECK(conv.weight().shape() == Shape{3, 1, 3, 3});
  conv.to(DType::kF64);
  const Tensor x = Random({2, 3, 5, 5}, DType::kF64, 3);
  const Tensor y = conv(x);
  for (int64_t c = 0; c < 3; ++c) {
    nn::Conv2d single(1, 1, 3, 1, 1, 1, 1, false);
    single.to(DType::kF64);
    nn::CopyValues(single.weight(), slice(conv.weight(), 0, c, c + 1));
    REQUIRE_TENSORS_CLOSE(slice(y, 1, c, c + 1), single(slice(x, 1, c, c + 1)), 1e-12, 1e-12);
  }
  CheckLayer(Factory<nn::Conv2d>(int64_t{3}, int64_t{3}, nn::IntPair(3), nn::IntPair(1),
                                 nn::IntPair(1), nn::IntPair(1), int64_t{3}, true),
             RandomInput({2, 3, 5, 5}, 4));
}

TEST_CASE("ConvTranspose2d: weight [in, out / groups, kh, kw] and PyTorch's output size") {
  nn::ConvTranspose2d up(1, 1, 2, /*stride=*/2, 0, 0, 1, /*bias=*/false);
  CHECK(up.weight().shape() == Shape{1, 1, 2, 2});
  Set(up.weight(), {1, 2, 3, 4});
  // Each input pixel spreads its value times the kernel over its own 2x2 block.
  const Tensor y = up(from_vector<float>({1, 10}, {1, 1, 1, 2}));
  CHECK(y.shape() == Shape{1, 1, 2, 4});
  CHECK(y.to_vector<float>() == std::vector<float>{1, 2, 10, 20, 3, 4, 30, 40});
  // (5 - 1) * 2 - 2 * 1 + 1 * (3 - 1) + 1 + 1 = 10.
  nn::ConvTranspose2d t(4, 6, 3, 2, 1, /*output_padding=*/1, /*groups=*/2);
  CHECK(t.weight().shape() == Shape{4, 3, 3, 3});
  CHECK(t(zeros({2, 4, 5, 5})).shape() == Shape{2, 6, 10, 10});
  CHECK(t.ToString() ==
        "ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
        "output_padding=(1, 1), groups=2)");
}

TEST_CASE("ConvTranspose2d is the data gradient of the Conv2d with its weight") {
  nn::ConvTranspose2d t(4, 6, 3, 2, 1, 1, 2, false);
  t.to(DType::kF64);
  nn::Conv2d conv(6, 4, 3, 2, 1, 1, 2, false);
  conv.to(DType::kF64);
  nn::CopyValues(conv.weight(), t.weight());
  // <t(x), z> = <x, conv(z)> for any x and z.
  const Tensor x = Random({2, 4, 5, 5}, DType::kF64, 5), z = Random({2, 6, 10, 10}, DType::kF64, 6);
  CHECK(sum(t(x) * z).item<double>() == Approx(sum(x * conv(z)).item<double>()).epsilon(1e-12));
  CheckLayer(Factory<nn::ConvTranspose2d>(int64_t{4}, int64_t{6}, nn::IntPair(3), nn::IntPair(2),
                                          nn::IntPair(1), nn::IntPair(1), int64_t{2}, true,
                                          nn::IntPair(1)),
             RandomInput({2, 4, 3, 4}, 7));
}

TEST_CASE("convolutions initialise as PyTorch: U(-1/sqrt(fan_in), 1/sqrt(fan_in))") {
  Generator gen(3);
  // fan_in = 8 / 2 * 3 = 12 for the 1-d, 6 / 2 * 2 * 2 = 12 for the transposed one.
  for (const Tensor& w : {nn::Conv1d(8, 16, 3, 1, 0, 1, 2, true, &gen).weight(),
                          nn::ConvTranspose2d(8, 6, 2, 1, 0, 0, 2, true, 1, &gen).weight()}) {
    const std::vector<float> v = w.to_vector<float>();
    const float bound = 1 / std::sqrt(12.0f);
    CHECK(*std::max_element(v.begin(), v.end()) <= bound);
    CHECK(*std::min_element(v.begin(), v.end()) >= -bound);
    CHECK(*std::max_element(v.begin(), v.end()) > 0.8 * bound);
  }
}

TEST_CASE("convolutions name the layer, what they expected and what came") {
  CHECK_THROWS_WITH(nn::Conv1d(3, 4, 3)(zeros({2, 4, 5})),
                    "Conv1d: expected input [N, C, L] with C = 3, got f32[2,4,5]");
  CHECK_THROWS_WITH(nn::Conv2d(3, 4, 3)(zeros({3, 5, 5})),
                    "Conv2d: expected input [N, C, H, W] with C = 3, got f32[3,5,5]");
  CHECK_THROWS_WITH(nn::Conv2d(3, 4, {3, 0}), "Conv2d: kernel_size must be positive, got (3, 0)");
  CHECK_THROWS_WITH(nn::Conv2d(3, 4, 3, 1, -1), "Conv2d: padding must be >= 0, got -1");
  CHECK_THROWS_WITH(nn::ConvTranspose2d(2, 2, 3, 2, 0, 2),
                    "ConvTranspose2d: output_padding (2) must be smaller than stride (2)");
  CHECK_THROWS_WITH(nn::ConvTranspose2d(2, 2, 3, 1, 2)(zeros({1, 2, 1, 1})),
                    "ConvTranspose2d: input f32[1,2,1,1] gives an empty output [1,2,-1,-1]");
}

}  // namespace
}  // namespace tc
