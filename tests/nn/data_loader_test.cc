// The DataLoader over an ArrayDataset: batches in order and converted per
// batch, seeded shuffles (the same per seed, new each epoch, every example
// once), drop_last, a resume from a saved position, the same batches with and
// without the prefetch thread (run under ThreadSanitizer by tools/test.sh),
// and the errors.
#include "nn/data/data_loader.h"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "runtime/error.h"
#include "runtime/ops.h"

namespace tc::nn {
namespace {

// n examples: features u8 [n, 2] = (2i, 2i + 1), labels i64 [n] = i.
std::shared_ptr<ArrayDataset> Numbers(int64_t n, double divisor = 1) {
  Array x{ElementType::kU8, {n, 2}, std::vector<uint8_t>(static_cast<size_t>(2 * n))};
  Array y{ElementType::kI64, {n}, std::vector<uint8_t>(static_cast<size_t>(8 * n))};
  for (int64_t i = 0; i < n; ++i) {
    x.bytes[2 * i] = static_cast<uint8_t>(2 * i);
    x.bytes[2 * i + 1] = static_cast<uint8_t>(2 * i + 1);
    std::memcpy(&y.bytes[8 * i], &i, 8);
  }
  return std::make_shared<ArrayDataset>(
      std::vector<ArrayDataset::Field>{{x, DType::kF32, divisor}, {y, DType::kI64}});
}

// The labels of the next `batches` batches, each batch a vector.
std::vector<std::vector<int64_t>> Labels(DataLoader& loader, int64_t batches) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t b = 0; b < batches; ++b)
    out.push_back(loader.Next().value()[1].to_vector<int64_t>());
  return out;
}

TEST_CASE("batches in order, the last one partial, converted and divided per batch") {
  DataLoader loader(Numbers(10, 2), {.batch_size = 4});
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

TEST_CASE("ranks take contiguous shares of each global batch, together the whole batch") {
  // 23 examples in batches of 7: 7, 7, 7 and a last batch of 2.
  for (const bool shuffle : {false, true}) {
    INFO("shuffle " << shuffle);
    DataLoader whole(Numbers(23), {.batch_size = 7, .shuffle = shuffle, .seed = 5});
    const auto want = Labels(whole, 8);  // two epochs
    DataLoader share0(Numbers(23),
                      {.batch_size = 7, .shuffle = shuffle, .seed = 5, .rank = 0, .ranks = 2});
    DataLoader share1(Numbers(23),
                      {.batch_size = 7, .shuffle = shuffle, .seed = 5, .rank = 1, .ranks = 2});
    CHECK(share0.batches_per_epoch() == 4);
    const auto got0 = Labels(share0, 8), got1 = Labels(share1, 8);
    for (size_t b = 0; b < want.size(); ++b) {
      INFO("batch " << b);
      const size_t half = want[b].size() / 2;  // rank 0 takes the smaller share
      CHECK(got0[b] == std::vector<int64_t>(want[b].begin(), want[b].begin() + half));
      CHECK(got1[b] == std::vector<int64_t>(want[b].begin() + half, want[b].end()));
    }
    // The position is the global batch's.
    CHECK(share1.position() == whole.position());
  }
}

TEST_CASE("a share of a batch has one example at least") {
  CHECK_THROWS_WITH(DataLoader(Numbers(10), {.batch_size = 4, .rank = 2, .ranks = 2}),
                    "DataLoader: rank 2 of 2: expected 0 <= rank < ranks");
  CHECK_THROWS_WITH(DataLoader(Numbers(10), {.batch_size = 2, .ranks = 3}),
                    "DataLoader: a batch of 2 examples cannot be shared by 3 ranks, one example "
                    "each at least");
  CHECK_THROWS_WITH(DataLoader(Numbers(9), {.batch_size = 4, .ranks = 2}),
                    "DataLoader: a batch of 1 examples cannot be shared by 2 ranks, one example "
                    "each at least (the epoch's last; drop_last drops it)");
  CHECK(DataLoader(Numbers(9), {.batch_size = 4, .drop_last = true, .ranks = 2})
            .batches_per_epoch() == 2);
}

TEST_CASE("the position goes into checkpoint tensors and back") {
  DataLoader loader(Numbers(30), {.batch_size = 4, .shuffle = true, .seed = 9});
  Labels(loader, 10);
  const NamedTensors state = loader.state();
  REQUIRE(state.size() == 2);
  CHECK(state[0].first == "data_loader.epoch");
  CHECK(state[0].second.item<int64_t>() == 1);
  CHECK(state[1].second.item<int64_t>() == 2);
  DataLoader resumed(Numbers(30), {.batch_size = 4, .shuffle = true, .seed = 9});
  REQUIRE(resumed.load_state({state[1], state[0]}).ok());  // any order
  CHECK(Labels(resumed, 3) == Labels(loader, 3));
  CHECK(resumed.load_state({state[0]}).message() ==
        "DataLoader state does not match: missing: data_loader.batch");
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

// A dataset whose examples from `bad` on fail as a user's Gather may: by
// throwing tc::Error.
class Failing : public Dataset {
 public:
  int64_t size() const override { return 10; }
  std::vector<TensorType> field_types() const override { return {{DType::kI64, {}}}; }
  absl::Status Gather(absl::Span<const int64_t> indices,
                      absl::Span<const Tensor> fields) const override {
    for (size_t i = 0; i < indices.size(); ++i) {
      if (indices[i] >= 6) throw Error(absl::InvalidArgumentError("example 6 is unreadable"));
      fields[0].data<int64_t>()[i] = indices[i];
    }
    return absl::OkStatus();
  }
};

TEST_CASE("a dataset's exception, on the prefetch thread or not, comes back as a status") {
  for (const bool prefetch : {true, false}) {
    INFO("prefetch " << prefetch);
    DataLoader loader(std::make_shared<Failing>(), {.batch_size = 4, .prefetch = prefetch});
    CHECK(loader.Next().ok());
    CHECK(loader.Next().status().message() == "example 6 is unreadable");
    CHECK(loader.position() == DataLoader::Position{0, 1});  // the failed batch is not skipped
    CHECK(loader.Next().status().message() == "example 6 is unreadable");
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
                    "ArrayDataset: field 0 converts to i64, which takes no divisor");
}

// Images [n, c, h, w] with every value distinct: i * 1000 + k * 100 + y * 10 + x.
Tensor Images(int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          v.push_back(static_cast<float>(i * 1000 + k * 100 + y * 10 + x));
  return from_vector<float>(v, {n, c, h, w});
}

TEST_CASE("Normalize, RandomHorizontalFlip and RandomCrop on hand-made images") {
  Generator gen(5);
  const Tensor normalized = Normalize({100, 200}, {2, 4}).Apply(Images(1, 2, 1, 2), gen).value();
  CHECK(normalized.to_vector<float>() == std::vector<float>{-50, -49.5f, -25, -24.75f});

  const Tensor flipped = RandomHorizontalFlip(1).Apply(Images(2, 1, 2, 3), gen).value();
  CHECK(flipped.to_vector<float>() ==
        std::vector<float>{2, 1, 0, 12, 11, 10, 1002, 1001, 1000, 1012, 1011, 1010});
  CHECK(RandomHorizontalFlip(0).Apply(Images(2, 1, 2, 3), gen).value().to_vector<float>() ==
        Images(2, 1, 2, 3).to_vector<float>());
  // p = 0.5 over 400 images: about half flipped.
  const Tensor many = RandomHorizontalFlip().Apply(Images(400, 1, 1, 2), gen).value();
  int flips = 0;
  for (int64_t i = 0; i < 400; ++i)
    flips += many.to_vector<float>()[2 * i] > many.to_vector<float>()[2 * i + 1];
  CHECK(flips > 160);
  CHECK(flips < 240);

  // A 3x3 crop of 4x4 images padded by 1: each output is the padded image's
  // window at some offset in [-1, 2] x [-1, 2], and offsets vary.
  const Tensor source = Images(30, 2, 4, 4);
  const Tensor crops = RandomCrop(3, 1).Apply(source, gen).value();
  REQUIRE(crops.shape() == Shape{30, 2, 3, 3});
  const std::vector<float> src = source.to_vector<float>(), out = crops.to_vector<float>();
  std::set<std::pair<int, int>> offsets;
  for (int i = 0; i < 30; ++i) {
    bool found = false;
    for (int oy = -1; oy <= 2 && !found; ++oy) {
      for (int ox = -1; ox <= 2 && !found; ++ox) {
        bool same = true;
        for (int k = 0; k < 2; ++k)
          for (int y = 0; y < 3; ++y)
            for (int x = 0; x < 3; ++x) {
              const int sy = oy + y, sx = ox + x;
              const float want = sy < 0 || sy >= 4 || sx < 0 || sx >= 4
                                     ? 0.0f
                                     : src[((i * 2 + k) * 4 + sy) * 4 + sx];
              same = same && out[((i * 2 + k) * 3 + y) * 3 + x] == want;
            }
        if (same) found = true, offsets.insert({oy, ox});
      }
    }
    INFO("image " << i);
    REQUIRE(found);
  }
  CHECK(offsets.size() > 4);

  CHECK(RandomCrop(5, 0).Apply(source, gen).status().message() ==
        "RandomCrop: a 5x5 crop of f32[30,2,4,4] padded by 0 does not fit");
  CHECK(Normalize({0}, {1}).Apply(source, gen).status().message() ==
        "Normalize: 1 channels' statistics for a batch of 2 channels, f32[30,2,4,4]");
  CHECK(RandomHorizontalFlip().Apply(zeros({2, 3}), gen).status().message() ==
        "RandomHorizontalFlip: expected a contiguous floating batch [N, C, H, W], got f32[2,3]");
  CHECK_THROWS_WITH(Normalize({0, 1}, {1, 0}),
                    "Normalize: a standard deviation must be > 0, got 0");
}

TEST_CASE("a loader's transforms are the same on every run and after a resume") {
  Array images{ElementType::kU8, {20, 1, 4, 4}, std::vector<uint8_t>(320)};
  for (size_t i = 0; i < images.bytes.size(); ++i) images.bytes[i] = static_cast<uint8_t>(i % 251);
  auto data =
      std::make_shared<ArrayDataset>(std::vector<ArrayDataset::Field>{{images, DType::kF32, 255}});
  DataLoaderOptions options{.batch_size = 6, .shuffle = true, .seed = 2};
  options.transforms = {
      std::make_shared<RandomCrop>(4, 1), std::make_shared<RandomHorizontalFlip>(),
      std::make_shared<Normalize>(std::vector<double>{0.5}, std::vector<double>{0.25})};
  auto run = [&](int64_t skip, int64_t batches) {
    DataLoader loader(data, options);
    if (skip > 0) REQUIRE(loader.set_position({skip / 4, skip % 4}).ok());
    std::vector<std::vector<float>> out;
    for (int64_t b = 0; b < batches; ++b)
      out.push_back(loader.Next().value()[0].to_vector<float>());
    return out;
  };
  const auto straight = run(0, 10);
  CHECK(run(0, 10) == straight);
  // The transforms ran: without them the same loader gives other values.
  const auto transforms = options.transforms;
  options.transforms.clear();
  CHECK(run(0, 10) != straight);
  options.transforms = transforms;
  CHECK(run(5, 5) == std::vector<std::vector<float>>(straight.begin() + 5, straight.end()));
  CHECK(straight[0] != straight[4]);  // epoch 1 crops and flips differently
}

}  // namespace
}  // namespace tc::nn
