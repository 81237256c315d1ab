// Tensor handles, storage, views, creation and printing.
#include <cmath>
#include <cstdint>
#include <sstream>

#include "catch2/catch.hpp"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

TEST_CASE("storage is 64-byte aligned and zero-filled") {
  for (int64_t n : {1, 3, 17, 1000}) {
    Tensor t = empty({n}, DType::kF64);
    CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0);
    for (double v : t.to_vector<double>()) CHECK(v == 0);
  }
  CHECK(empty({0, 3}).raw_data() == nullptr);
}

TEST_CASE("freed large buffers are kept for reuse until released") {
  ReleaseCachedBuffers();
  void* first = nullptr;
  {
    Storage s(1 << 20);
    first = s.data();
  }
  {
    Storage again(1 << 20);  // the same size: the kept buffer
    CHECK(again.data() == first);
  }
  CHECK(ReleaseCachedBuffers() == (1 << 20));
  CHECK(ReleaseCachedBuffers() == 0);
  { Storage small(1024); }  // under 64 KiB: back to malloc at once
  CHECK(ReleaseCachedBuffers() == 0);
}

TEST_CASE("copies of a tensor share storage; clone does not") {
  Tensor a = zeros({2, 2});
  Tensor b = a;
  b.set<float>({0, 1}, 5.f);
  CHECK(a.at<float>({0, 1}) == 5.f);
  Tensor c = a.clone();
  c.set<float>({0, 1}, 7.f);
  CHECK(a.at<float>({0, 1}) == 5.f);
  CHECK(c.storage() != a.storage());
}

TEST_CASE("views share storage and see writes") {
  Tensor x = from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor t = x.transpose(0, 1);
  CHECK(t.shape() == Shape{3, 2});
  CHECK(t.storage() == x.storage());
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.at<float>({2, 1}) == 5.f);
  x.set<float>({1, 2}, 50.f);
  CHECK(t.at<float>({2, 1}) == 50.f);

  Tensor s = x.slice(1, 1, 3);
  CHECK(s.storage() == x.storage());
  CHECK(s.shape() == Shape{2, 2});
  CHECK(s.at<float>({1, 0}) == 4.f);

  Tensor e = from_vector<float>({1, 2, 3}, {3}).expand({2, 3});
  CHECK(e.strides() == std::vector<int64_t>{0, 1});
  CHECK(e.at<float>({1, 2}) == 3.f);

  Tensor r = x.reshape({3, 2});
  CHECK(r.storage() == x.storage());
  CHECK(r.at<float>({2, 1}) == 50.f);
}

TEST_CASE("contiguous() copies only when needed and keeps values") {
  Tensor x = testing::Random({3, 4}, DType::kF64, 1);
  CHECK(x.contiguous().same(x));
  Tensor t = x.transpose(0, 1);
  Tensor c = t.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.strides() == std::vector<int64_t>{3, 1});
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 3; ++j) CHECK(c.at<double>({i, j}) == x.at<double>({j, i}));
  }
}

TEST_CASE("creation ops fill as documented") {
  CHECK(zeros({2}).to_vector<float>() == std::vector<float>{0, 0});
  CHECK(ones({2}, DType::kI64).to_vector<int64_t>() == std::vector<int64_t>{1, 1});
  CHECK(full({3}, 2.5, DType::kF64).to_vector<double>() == std::vector<double>{2.5, 2.5, 2.5});
  CHECK(scalar(4).dim() == 0);
  CHECK(scalar(4).item<float>() == 4.f);
  CHECK(arange(4).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(arange(1, 2, 0.25, DType::kF64).to_vector<double>() ==
        std::vector<double>{1, 1.25, 1.5, 1.75});
  CHECK(arange(3, 1).numel() == 0);
  CHECK(from_vector<bool>({true, false}, {2}).to_vector<bool>() == std::vector<bool>{true, false});
}

TEST_CASE("creation errors are statuses") {
  CHECK(Call(OpKind::kFull, {},
             {{"shape", std::vector<int64_t>{2, -1}}, {"value", 0.0}, {"dtype", DType::kF32}})
            .status()
            .message() == "full: shape [2,-1] has a negative dimension");
  CHECK(Call(OpKind::kArange, {},
             {{"start", 0.0}, {"end", 1.0}, {"step", 0.0}, {"dtype", DType::kI64}})
            .status()
            .message() == "arange: step must be nonzero");
  CHECK_THROWS_WITH(full({2}, 1e30, DType::kI64),
                    "full: value 1e+30 cannot be converted to i64 without overflow");
  CHECK_THROWS_WITH(full({2}, std::nan(""), DType::kI64),
                    "full: value nan cannot be converted to i64 without overflow");
  CHECK(full({1}, -0x1p63, DType::kI64).item<int64_t>() == INT64_MIN);
  CHECK_THROWS_WITH(full({1}, 0x1p63, DType::kI64),
                    "full: value 9.22337e+18 cannot be converted to i64 without overflow");
  CHECK_THROWS_WITH(from_vector<float>({1, 2, 3}, {2, 2}),
                    "from_vector: 3 values do not fill shape [2,2]");
  CHECK_THROWS_WITH(randn({2}, DType::kI64), "random tensors must be f32 or f64, got i64");
  CHECK_THROWS_WITH(zeros({2, 2}).at<float>({2, 0}), "index 2 out of range for dim 0 of f32[2,2]");
  CHECK_THROWS_WITH(zeros({2, 2}).item<float>(), "item() needs a one-element tensor, got f32[2,2]");
}

TEST_CASE("random tensors are reproducible from a seed and roughly distributed") {
  Generator g1(7), g2(7), g3(8);
  Tensor a = randn({1000}, DType::kF64, &g1);
  Tensor b = randn({1000}, DType::kF64, &g2);
  Tensor c = randn({1000}, DType::kF64, &g3);
  CHECK(a.to_vector<double>() == b.to_vector<double>());
  CHECK(a.to_vector<double>() != c.to_vector<double>());
  // A second draw continues the stream instead of repeating it.
  CHECK(randn({1000}, DType::kF64, &g1).to_vector<double>() != a.to_vector<double>());

  Generator g(1);
  std::vector<double> n = randn({100000}, DType::kF64, &g).to_vector<double>();
  double sum = 0, sq = 0;
  for (double v : n) {
    sum += v;
    sq += v * v;
  }
  CHECK(std::abs(sum / n.size()) < 0.02);
  CHECK(std::abs(sq / n.size() - 1) < 0.02);
  std::vector<double> u = rand({100000}, DType::kF64, &g, 2, 4).to_vector<double>();
  double lo = 10, hi = -10, usum = 0;
  for (double v : u) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    usum += v;
  }
  CHECK(lo >= 2);
  CHECK(hi < 4);
  CHECK(std::abs(usum / u.size() - 3) < 0.01);
}

TEST_CASE("printing shows dtype, shape and values") {
  std::ostringstream os;
  os << from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  CHECK(os.str() == "Tensor(i64[2,2],\n [[1, 2],\n [3, 4]])");
  std::ostringstream big;
  big << arange(10);
  CHECK(big.str() == "Tensor(i64[10],\n [0, 1, 2, ..., 7, 8, 9])");
  std::ostringstream i32;
  i32 << from_vector<int32_t>({-7, 2147483647}, {2});
  CHECK(i32.str() == "Tensor(i32[2],\n [-7, 2147483647])");
  std::ostringstream undef;
  undef << Tensor();
  CHECK(undef.str() == "Tensor(undefined)");
}

}  // namespace
}  // namespace tc
