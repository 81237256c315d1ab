// Upsample and interpolate against values PyTorch 1.13's
// torch.nn.functional.interpolate gives on [[1, 2, 3], [4, 5, 6]] (computed
// with it once and written here), every mode's gradient against finite
// differences and compiled against eager, and the errors.
#include "nn/upsample.h"

#include <vector>

#include "catch2/catch.hpp"
#include "runtime/ops.h"
#include "tests/nn/layer_check.h"
#include "tests/test_util.h"

namespace tc {
namespace {

const Tensor OneToSix() { return from_vector<float>({1, 2, 3, 4, 5, 6}, {1, 1, 2, 3}); }

void CheckValues(const nn::UpsampleOptions& options, const Shape& shape,
                 const std::vector<float>& torch) {
  const Tensor y = nn::interpolate(OneToSix(), options);
  CHECK(y.shape() == shape);
  CHECK(testing::CompareTensors(y, from_vector(torch, shape), 1e-6, 1e-6) == "");
}

TEST_CASE("nearest and bilinear, to a size or by a factor, give PyTorch's values") {
  CheckValues({.scale_factor = 2, .mode = "bilinear"}, {1, 1, 4, 6},
              {1.0,  1.25, 1.75, 2.25, 2.75, 3.0,  1.75, 2.0,  2.5,  3.0,  3.5,  3.75,
               3.25, 3.5,  4.0,  4.5,  5.0,  5.25, 4.0,  4.25, 4.75, 5.25, 5.75, 6.0});
  CheckValues({.size = nn::IntPair(3, 4), .mode = "bilinear", .align_corners = true}, {1, 1, 3, 4},
              {1.0, 1.6666667, 2.3333335, 3.0, 2.5, 3.1666667, 3.8333335, 4.5, 4.0, 4.6666665,
               5.3333335, 6.0});
  CheckValues({.size = nn::IntPair(3, 5)}, {1, 1, 3, 5},
              {1, 1, 2, 2, 3, 1, 1, 2, 2, 3, 4, 4, 5, 5, 6});
  CheckValues({.scale_factor = 1.5}, {1, 1, 3, 4}, {1, 1, 2, 3, 1, 1, 2, 3, 4, 4, 5, 6});
  CheckValues({.scale_factor = 1.5, .mode = "bilinear"}, {1, 1, 3, 4},
              {1.0, 1.5, 2.1666667, 2.8333335, 2.5, 3.0, 3.6666665, 4.333333, 4.0, 4.5, 5.1666665,
               5.833333});
  // A whole factor in nearest mode repeats each pixel over a block.
  CheckValues({.scale_factor = 2}, {1, 1, 4, 6},
              {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6});
}

TEST_CASE("Upsample's gradients and compiled results in every mode") {
  for (const nn::UpsampleOptions& options :
       {nn::UpsampleOptions{.scale_factor = 3}, nn::UpsampleOptions{.scale_factor = 1.5},
        nn::UpsampleOptions{.size = nn::IntPair(5, 2), .mode = "bilinear"},
        nn::UpsampleOptions{
            .size = nn::IntPair(4, 7), .mode = "bilinear", .align_corners = true}}) {
    testing::CheckLayer([&] { return std::make_shared<nn::Upsample>(options); },
                        testing::RandomInput({2, 2, 3, 3}, 4));
  }
}

TEST_CASE("Upsample's repr and errors, as PyTorch's") {
  CHECK(nn::Upsample(2).ToString() == "Upsample(scale_factor=2.0, mode='nearest')");
  CHECK(nn::Upsample({.size = nn::IntPair(4, 6), .mode = "bilinear"}).ToString() ==
        "Upsample(size=(4, 6), mode='bilinear', align_corners=False)");
  CHECK_THROWS_WITH(nn::Upsample(nn::UpsampleOptions{}),
                    "Upsample: give either size or scale_factor, not both or neither");
  CHECK_THROWS_WITH(nn::Upsample(2, "bicubic"),
                    "Upsample: mode \"bicubic\" is not supported (\"nearest\", \"bilinear\")");
  CHECK_THROWS_WITH(nn::Upsample({.scale_factor = 2, .align_corners = true}),
                    "Upsample: align_corners applies to mode \"bilinear\" only");
  CHECK_THROWS_WITH(nn::Upsample(-1), "Upsample: scale_factor must be positive, got -1");
  CHECK_THROWS_WITH(nn::Upsample(0.1)(zeros({1, 1, 2, 2})),
                    "Upsample: scale_factor 0.1 makes dim 2 of f32[1,1,2,2] empty");
  CHECK_THROWS_WITH(nn::Upsample(2)(zeros({2, 2})),
                    "Upsample: expected input [N, C, H, W], got f32[2,2]");
}

}  // namespace
}  // namespace tc
