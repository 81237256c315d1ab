// The DataLoader over an ArrayDataset: batches in order and converted per
// batch, seeded shuffles (the same per seed, new each epoch, every example
// once), drop_last, a resume from a saved position, the same batches with and
// without the prefetch thread (run under ThreadSanitizer by tools/test.sh),
// and the errors.
#include "nn/data/data_loader.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "catch2/catch.hpp"
#include "runtime/error.h"
#include "runtime/ops.h"

namespace tc::nn {
namespace {

// n examples: features u8 [n, 2] = (2i, 2i + 1), labels i64 [n] = i.
std::shared_ptr<ArrayDataset> Numbers(int64_t n, double scale = 1) {
  Array x{ElementType::kU8, {n, 2}, std::vector<uint8_t>(static_cast<size_t>(2 * n))};
  Array y{ElementType::kI64, {n}, std::vector<uint8_t>(static_cast<size_t>(8 * n))};
  for (int64_t i = 0; i < n; ++i) {
    x.bytes[2 * i] = static_cast<uint8_t>(2 * i);
    x.bytes[2 * i + 1] = static_cast<uint8_t>(2 * i + 1);
    std::memcpy(&y.bytes[8 * i], &i, 8);
  }
  return std::make_shared<ArrayDataset>(
      std::vector<ArrayDataset::Field>{{x, DType::kF32, scale}, {y, DType::kI64}});
}

// The labels of the next `batches` batches, each batch a vector.
std::vector<std::vector<int64_t>> Labels(DataLoader& loader, int64_t batches) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t b = 0; b < batches; ++b)
    out.push_back(loader.Next().value()[1].to_vector<int64_t>());
  return out;
}

TEST_CASE("batches in order, the last one partial, converted and scaled per batch") {
  DataLoader loader(Numbers(10, 0.5), {.batch_size = 4});
  CHECK(loader.batches_per_epoch() == 3);
  const std::vector<Tensor> first = loader.Next().value();
  CHECK(first[0].type().ToString() == "f32[4,2]");
  CHECK(first[0].to_vector<float>() == std::vector<float>{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5});
  CHECK(first[1].to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});
  loader.Next().value();
  const std::vector<Tensor> last = loader.Next().value();
  CHECK(last[1].to_vector<int64_t>() == std::vector<int64_t>{8, 9});
  CHECK(loader.position() == DataLoader::Position{1, 0});
  CHECK(loader.Next().value()[1].to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});

  DataLoader dropping(Numbers(10), {.batch_size = 4, .drop_last = true});
  CHECK(dropping.batches_per_epoch() == 2);
}

TEST_CASE("shuffles: the same for a seed, new each epoch, each example once") {
  DataLoader a(Numbers(50), {.batch_size = 7, .shuffle = true, .seed = 3});
  DataLoader b(Numbers(50), {.batch_size = 7, .shuffle = true, .seed = 3});
  DataLoader c(Numbers(50), {.batch_size = 7, .shuffle = true, .seed = 4});
  const auto two_epochs = Labels(a, 16);
  CHECK(Labels(b, 16) == two_epochs);
  CHECK(Labels(c, 16) != two_epochs);
  std::vector<int64_t> epoch0, epoch1;
  for (int i = 0; i < 8; ++i) {
    epoch0.insert(epoch0.end(), two_epochs[i].begin(), two_epochs[i].end());
    epoch1.insert(epoch1.end(), two_epochs[8 + i].begin(), two_epochs[8 + i].end());
  }
  CHECK(epoch0 != epoch1);
  std::sort(epoch0.begin(), epoch0.end());
  std::sort(epoch1.begin(), epoch1.end());
  std::vector<int64_t> all(50);
  for (int64_t i = 0; i < 50; ++i) all[i] = i;
  CHECK(epoch0 == all);
  CHECK(epoch1 == all);
}

TEST_CASE("a loader resumed at a saved position continues as an uninterrupted one") {
  for (const bool prefetch : {true, false}) {
    INFO("prefetch " << prefetch);
    DataLoader straight(Numbers(30), {.batch_size = 4, .shuffle = true, .seed = 9});
    const auto want = Labels(straight, 20);
    DataLoader first(Numbers(30),
                     {.batch_size = 4, .shuffle = true, .seed = 9, .prefetch = prefetch});
    Labels(first, 11);  // mid-epoch 1
    const DataLoader::Position saved = first.position();
    CHECK(saved == DataLoader::Position{1, 3});
    DataLoader resumed(Numbers(30),
                       {.batch_size = 4, .shuffle = true, .seed = 9, .prefetch = prefetch});
    REQUIRE(resumed.set_position(saved).ok());
    const auto rest = Labels(resumed, 9);
    CHECK(rest == std::vector<std::vector<int64_t>>(want.begin() + 11, want.end()));
  }
}

TEST_CASE("the prefetch thread gives the batches an inline loader does") {
  DataLoader threaded(Numbers(100), {.batch_size = 8, .shuffle = true, .seed = 1});
  DataLoader inline_loader(Numbers(100),
                           {.batch_size = 8, .shuffle = true, .seed = 1, .prefetch = false});
  for (int i = 0; i < 40; ++i) {
    INFO("batch " << i);
    const std::vector<Tensor> a = threaded.Next().value(), b = inline_loader.Next().value();
    REQUIRE(a[0].to_vector<float>() == b[0].to_vector<float>());
    REQUIRE(a[1].to_vector<int64_t>() == b[1].to_vector<int64_t>());
    if (i == 20) REQUIRE(threaded.set_position({0, 5}).ok());
    if (i == 20) REQUIRE(inline_loader.set_position({0, 5}).ok());
  }
}

TEST_CASE("loader and dataset errors name what was wrong") {
  CHECK_THROWS_WITH(DataLoader(Numbers(3), {.batch_size = 0}),
                    "DataLoader: batch_size must be >= 1, got 0");
  CHECK_THROWS_WITH(DataLoader(Numbers(3), {.batch_size = 4, .drop_last = true}),
                    "DataLoader: an epoch of 3 examples has no full batch of 4");
  DataLoader loader(Numbers(10), {.batch_size = 4});
  CHECK(loader.set_position({0, 3}).message() ==
        "DataLoader: position epoch 0 batch 3 is outside an epoch of 3 batches");
  Array x{ElementType::kU8, {3}, std::vector<uint8_t>(3)};
  Array y{ElementType::kU8, {4}, std::vector<uint8_t>(4)};
  CHECK_THROWS_WITH(ArrayDataset({{x, DType::kF32}, {y, DType::kI64}}),
                    "ArrayDataset: field 1 (u8[4]) has 4 rows, field 0 (u8[3]) 3");
  CHECK_THROWS_WITH(ArrayDataset({{x, DType::kI64, 0.5}}),
                    "ArrayDataset: field 0 converts to i64, which takes no scale");
}

}  // namespace
}  // namespace tc::nn
