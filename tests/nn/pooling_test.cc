// MaxPool2d and AvgPool2d with rectangular windows, ceil_mode, max pooling's
// dilation and count_include_pad, and AdaptiveAvgPool2d: hand-worked values as PyTorch
// gives them, gradients against finite differences, the compiled function
// against eager, errors.
#include "nn/pooling.h"

#include "catch2/catch.hpp"
#include "tests/nn/layer_check.h"
#include "tests/nn/nn_test_util.h"

namespace tc {
namespace {

using testing::CheckLayer;
using testing::Random;
using testing::RandomInput;

template <typename M, typename... Args>
testing::ModuleFactory Factory(Args... args) {
  return [=] { return std::make_shared<M>(args...); };
}

// [[1, 2, 3], [4, 5, 6], [7, 8, 9]] as [1, 1, 3, 3].
Tensor OneToNine() { return from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}); }

std::vector<float> Values(const Tensor& t) { return t.to_vector<float>(); }

TEST_CASE("ceil_mode keeps the partial windows at the bottom and right") {
  CHECK(Values(nn::MaxPool2d(2)(OneToNine())) == std::vector<float>{5});
  const Tensor max = nn::MaxPool2d(2, 2, 0, /*ceil_mode=*/true)(OneToNine());
  CHECK(max.shape() == Shape{1, 1, 2, 2});
  CHECK(Values(max) == std::vector<float>{5, 6, 8, 9});
  // The divisor of a partial window counts only what lies inside the input.
  const Tensor avg = nn::AvgPool2d(2, 2, 0, /*ceil_mode=*/true)(OneToNine());
  CHECK(Values(avg) == std::vector<float>{3, 4.5, 7.5, 9});
  // A last window that would start in the right padding only is dropped:
  // (3 + 2 - 2 + 1) / 2 + 1 = 3, but window 2 starts at 4 - 1 = 3 >= 3.
  CHECK(nn::MaxPool2d(2, 2, 1, true)(zeros({1, 1, 3, 3})).shape() == Shape{1, 1, 2, 2});
  CHECK(nn::MaxPool2d(3, 2, 0, true)(zeros({1, 1, 6, 6})).shape() == Shape{1, 1, 3, 3});
}

TEST_CASE("the functional max_pool2d and avg_pool2d take ceil_mode as the layers do") {
  const Tensor max = nn::max_pool2d(OneToNine(), 2, 2, 0, /*ceil_mode=*/true);
  CHECK(Values(max) == std::vector<float>{5, 6, 8, 9});
  CHECK(Values(nn::max_pool2d(OneToNine(), 2, std::nullopt)) == std::vector<float>{5});
  const Tensor avg = nn::avg_pool2d(OneToNine(), 2, 2, 1, true, /*count_include_pad=*/false);
  CHECK(Values(avg) == Values(nn::AvgPool2d(2, 2, 1, true, false)(OneToNine())));
  CHECK(testing::ThrownMessage([] {
          nn::max_pool2d(zeros({1, 3, 3}), 2, std::nullopt);
        }).find("MaxPool2d: expected input [N, C, H, W]") == 0);
}

TEST_CASE("count_include_pad decides whether the zero padding counts in the divisor") {
  // Window (0, 0) covers rows and cols -1..1: four input values 1, 2, 4, 5.
  const Tensor with = nn::AvgPool2d(3, 2, 1)(OneToNine());
  const Tensor without = nn::AvgPool2d(3, 2, 1, false, /*count_include_pad=*/false)(OneToNine());
  CHECK(Values(with)[0] == Approx(12.0 / 9));
  CHECK(Values(without)[0] == Approx(3));
  CHECK(Values(without) == std::vector<float>{3, 4, 6, 7});
  // ceil_mode with padding counted: the overhang beyond the padding is not.
  const Tensor both = nn::AvgPool2d(2, 2, 1, true)(OneToNine());
  CHECK(both.shape() == Shape{1, 1, 2, 2});
  CHECK(Values(both) == std::vector<float>{0.25, 5.0 / 4, 11.0 / 4, 28.0 / 4});
}

TEST_CASE("a ceil_mode overhang is never counted; the padding is with count_include_pad") {
  // 4x4 ones, k 3, s 2, p 1: windows start at -1, 1 and 3; the last reaches
  // row 5, one past the padding.
  const Tensor x = ones({1, 1, 4, 4});
  const std::vector<float> with = Values(nn::AvgPool2d(3, 2, 1, true)(x));
  REQUIRE(with.size() == 9);
  CHECK(with[0] == Approx(4.0 / 9));  // 4 inputs, 9 counted
  CHECK(with[2] == Approx(2.0 / 6));  // rows -1..1, cols 3..4 counted
  CHECK(with[4] == 1);
  CHECK(with[8] == Approx(1.0 / 4));  // rows and cols 3..4 counted
  const std::vector<float> without = Values(nn::AvgPool2d(3, 2, 1, true, false)(x));
  CHECK(without == std::vector<float>(9, 1));
  // ceil_mode also takes an input smaller than the kernel, as PyTorch.
  CHECK(Values(nn::MaxPool2d(2, 2, 0, true)(from_vector<float>({7}, {1, 1, 1, 1}))) ==
        std::vector<float>{7});
  CHECK(Values(nn::AvgPool2d(2, 2, 0, true)(from_vector<float>({7}, {1, 1, 1, 1}))) ==
        std::vector<float>{7});
}

// [1 .. n*n] row-major as [1, 1, n, n].
Tensor Counting(int64_t n) {
  std::vector<float> v(n * n);
  for (int64_t i = 0; i < n * n; ++i) v[i] = static_cast<float>(i + 1);
  return from_vector<float>(v, {1, 1, n, n});
}

TEST_CASE("MaxPool2d's dilation spaces the window's taps, as PyTorch") {
  // A 2x2 kernel with dilation 2 reads rows and cols i and i + 2: on rising
  // values its maximum is always the last tap, x[i + 2][j + 2].
  const Tensor spaced = nn::MaxPool2d({.kernel_size = 2, .stride = 1, .dilation = 2})(Counting(5));
  CHECK(spaced.shape() == Shape{1, 1, 3, 3});
  CHECK(Values(spaced) == std::vector<float>{13, 14, 15, 18, 19, 20, 23, 24, 25});
  // With ceil_mode on 6x6 (stride 2, extent 3): windows start at 0, 2 and 4;
  // the last one's second tap (6) is past the input, so its maximum is at 4.
  const Tensor ceil = nn::max_pool2d(
      Counting(6), {.kernel_size = 2, .stride = 2, .dilation = 2, .ceil_mode = true});
  CHECK(Values(ceil) == std::vector<float>{15, 17, 17, 27, 29, 29, 27, 29, 29});
  // One dilation per dim, and the repr names it.
  nn::MaxPool2d rows({.kernel_size = 2, .dilation = {2, 1}});
  CHECK(rows(Counting(4)).shape() == Shape{1, 1, 1, 2});
  CHECK(Values(rows(Counting(4))) == std::vector<float>{10, 12});
  CHECK(rows.ToString() ==
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=(2, 1), ceil_mode=False)");
  CHECK_THROWS_WITH(nn::MaxPool2d({.kernel_size = 2, .dilation = 0}),
                    "MaxPool2d: dilation must be positive, got 0");
  CHECK_THROWS_WITH(nn::MaxPool2d({.kernel_size = 2, .dilation = int64_t{1} << 40}),
                    "MaxPool2d: dilation must be at most 2^31, got 1099511627776");
  CHECK_THROWS_WITH(
      nn::MaxPool2d({.kernel_size = 3, .dilation = 2})(zeros({1, 1, 4, 4})),
      "MaxPool2d: input f32[1,1,4,4] is smaller than the kernel 3 with padding 0 and dilation 2");
  CheckLayer(
      [] {
        return std::make_shared<nn::MaxPool2d>(nn::MaxPool2dOptions{
            .kernel_size = 3, .stride = 2, .padding = 1, .dilation = 2, .ceil_mode = true});
      },
      RandomInput({2, 2, 8, 7}, 7));
}

TEST_CASE("rectangular windows and strides") {
  nn::MaxPool2d pool({1, 2}, nn::IntPair(1, 2));
  CHECK(Values(pool(OneToNine())) == std::vector<float>{2, 5, 8});
  CHECK(pool.ToString() ==
        "MaxPool2d(kernel_size=(1, 2), stride=(1, 2), padding=0, dilation=1, ceil_mode=False)");
  CHECK(nn::AvgPool2d({2, 3}, std::nullopt, {1, 1})(zeros({2, 3, 5, 7})).shape() ==
        Shape{2, 3, 3, 3});
  CHECK(nn::AvgPool2d(2).ToString() == "AvgPool2d(kernel_size=2, stride=2, padding=0)");
  // A tuple argument prints as a tuple, as in PyTorch.
  CHECK(nn::AvgPool2d({2, 2}, std::nullopt, 0, true, false).ToString() ==
        "AvgPool2d(kernel_size=(2, 2), stride=(2, 2), padding=0)");
}

TEST_CASE("AdaptiveAvgPool2d averages PyTorch's overlapping bands") {
  CHECK(Values(nn::AdaptiveAvgPool2d(1)(OneToNine())) == std::vector<float>{5});
  // Rows and cols [0, 2) and [1, 3).
  CHECK(Values(nn::AdaptiveAvgPool2d(2)(OneToNine())) == std::vector<float>{3, 4, 6, 7});
  CHECK(Values(nn::AdaptiveAvgPool2d({3, 1})(OneToNine())) == std::vector<float>{2, 5, 8});
  CHECK(nn::AdaptiveAvgPool2d({2, 3})(zeros({2, 4, 6, 6})).shape() == Shape{2, 4, 2, 3});
  CHECK(nn::AdaptiveAvgPool2d(1).ToString() == "AdaptiveAvgPool2d(output_size=1)");
}

TEST_CASE("AdaptiveAvgPool1d averages PyTorch's bands over the last dim") {
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5}, {1, 1, 5});
  // [0, 3) and [2, 5): the bands overlap on the middle element.
  CHECK(Values(nn::AdaptiveAvgPool1d(2)(x)) == std::vector<float>{2, 4});
  CHECK(Values(nn::AdaptiveAvgPool1d(5)(x)) == std::vector<float>{1, 2, 3, 4, 5});
  CHECK(Values(nn::AdaptiveAvgPool1d(1)(x)) == std::vector<float>{3});
  // [C, L], even windows.
  const Tensor rows = from_vector<float>({1, 2, 3, 4, 10, 20, 30, 40}, {2, 4});
  CHECK(nn::AdaptiveAvgPool1d(2)(rows).shape() == Shape{2, 2});
  CHECK(Values(nn::AdaptiveAvgPool1d(2)(rows)) == std::vector<float>{1.5, 3.5, 15, 35});
  CHECK(nn::AdaptiveAvgPool1d(3)(zeros({2, 4, 7})).shape() == Shape{2, 4, 3});
  CHECK(nn::AdaptiveAvgPool1d(3).ToString() == "AdaptiveAvgPool1d(output_size=3)");
  CHECK(testing::ThrownMessage([] { nn::AdaptiveAvgPool1d(0); }) ==
        "AdaptiveAvgPool1d: output_size must be positive, got 0");
  CHECK(testing::ThrownMessage([] {
          nn::AdaptiveAvgPool1d(2)(zeros({1, 1, 2, 2}));
        }).find("AdaptiveAvgPool1d") != std::string::npos);
  CheckLayer(Factory<nn::AdaptiveAvgPool1d>(int64_t{3}), RandomInput({2, 3, 7}, 5));
  CheckLayer(Factory<nn::AdaptiveAvgPool1d>(int64_t{2}), RandomInput({3, 8}, 6));
}

TEST_CASE("pooling gradients and compiled results") {
  CheckLayer(Factory<nn::MaxPool2d>(nn::IntPair(3, 2), std::optional<nn::IntPair>(nn::IntPair(2)),
                                    nn::IntPair(1), true),
             RandomInput({2, 2, 6, 5}, 1));
  CheckLayer(Factory<nn::AvgPool2d>(nn::IntPair(3), std::optional<nn::IntPair>(nn::IntPair(2)),
                                    nn::IntPair(1), true, false),
             RandomInput({2, 2, 6, 5}, 2));
  CheckLayer(Factory<nn::AvgPool2d>(nn::IntPair(3), std::optional<nn::IntPair>(nn::IntPair(2)),
                                    nn::IntPair(1), true, true),
             RandomInput({2, 2, 4, 4}, 6));
  CheckLayer(Factory<nn::AvgPool2d>(nn::IntPair(2), std::optional<nn::IntPair>(), nn::IntPair(1),
                                    true, true),
             RandomInput({2, 2, 5, 5}, 3));
  CheckLayer(Factory<nn::AdaptiveAvgPool2d>(nn::IntPair(2, 3)), RandomInput({2, 2, 5, 7}, 4));
  CheckLayer(Factory<nn::AdaptiveAvgPool2d>(nn::IntPair(1)), RandomInput({2, 2, 3, 3}, 5));
}

TEST_CASE("pooling layers name the layer, what they expected and what came") {
  CHECK_THROWS_WITH(nn::MaxPool2d(3, 1, 2),
                    "MaxPool2d: padding should be at most half of the kernel size, got padding=2 "
                    "and kernel_size=3");
  CHECK_THROWS_WITH(nn::AvgPool2d(2)(zeros({3, 4, 4})),
                    "AvgPool2d: expected input [N, C, H, W], got f32[3,4,4]");
  CHECK_THROWS_WITH(nn::MaxPool2d(4)(zeros({1, 1, 3, 3})),
                    "MaxPool2d: input f32[1,1,3,3] is smaller than the kernel 4 with padding 0");
  CHECK_THROWS_WITH(nn::AdaptiveAvgPool2d({0, 1}),
                    "AdaptiveAvgPool2d: output_size must be positive, got (0, 1)");
}

}  // namespace
}  // namespace tc
