// Datasets and a DataLoader, as torch.utils.data's: a Dataset gives
// examples by index, each a list of fields (features, label); a DataLoader
// cuts an epoch into batches, shuffled by a seed (a new order each epoch, the
// same orders for the same seed), and prepares the next batch on a
// background thread while the caller trains on the current one. Its position
// (epoch and batch) goes into a checkpoint, so a resumed run sees the batches
// an uninterrupted one would, mid-epoch included.
//
//   auto data = std::make_shared<nn::ArrayDataset>(std::vector<nn::ArrayDataset::Field>{
//       {images, DType::kF32, 255}, {labels, DType::kI64}});
//   nn::DataLoader loader(data, {.batch_size = 64, .shuffle = true, .seed = 1});
//   for (int64_t i = 0; i < loader.batches_per_epoch(); ++i) {
//     std::vector<Tensor> batch = loader.Next().value();  // {x [64, 28, 28], y [64]}
//   }
#ifndef TENSORCUT_NN_DATA_DATA_LOADER_H_
#define TENSORCUT_NN_DATA_DATA_LOADER_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "nn/data/array.h"
#include "nn/data/transforms.h"
#include "nn/named_tensors.h"
#include "runtime/tensor.h"

namespace tc::nn {

// The permutation of [0, n) for `stream` (a Fisher-Yates shuffle driven by
// the counter RNG, runtime/random.h): the same for the same stream.
std::vector<int64_t> ShuffledOrder(int64_t n, uint64_t stream);

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // One example's fields: the dtype each converts to and its shape.
  virtual std::vector<TensorType> field_types() const = 0;
  // Writes examples `indices` into `fields`, one dense tensor per field of
  // shape [indices.size(), field shape...].
  virtual absl::Status Gather(absl::Span<const int64_t> indices,
                              absl::Span<const Tensor> fields) const = 0;
};

// Arrays of equal row counts as a dataset: row i of each is example i's
// field, converted to `dtype` and divided by `divisor` (u8 pixels to [0, 1]
// with 255, as torchvision's ToTensor) per batch, so the arrays stay in
// their stored type.
class ArrayDataset : public Dataset {
 public:
  struct Field {
    Array array;
    DType dtype = DType::kF32;
    double divisor = 1;  // floating fields only
  };
  // Throws tc::Error when the fields' row counts differ or a divisor is given
  // for a non-floating dtype.
  explicit ArrayDataset(std::vector<Field> fields);

  int64_t size() const override;
  std::vector<TensorType> field_types() const override;
  absl::Status Gather(absl::Span<const int64_t> indices,
                      absl::Span<const Tensor> fields) const override;

 private:
  std::vector<Field> fields_;
};

// Tensors of equal dim 0 as a dataset (PyTorch's TensorDataset): example i
// is row i of each, in its dtype.
class TensorDataset : public Dataset {
 public:
  // Throws tc::Error when the dim-0 sizes differ or a tensor is 0-d.
  explicit TensorDataset(std::vector<Tensor> fields);

  int64_t size() const override;
  std::vector<TensorType> field_types() const override;
  absl::Status Gather(absl::Span<const int64_t> indices,
                      absl::Span<const Tensor> fields) const override;

 private:
  std::vector<Tensor> fields_;  // contiguous
};

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;       // the order of epoch e is ShuffledOrder(n, RandomBits(seed, e))
  bool drop_last = false;  // else each epoch ends with its partial batch
  bool prefetch = true;    // prepare the next batch on a background thread
  // Applied in order to field `transform_field` (which must exist) of each batch (images; see
  // nn/data/transforms.h), drawing from Generator(RandomBits(seed + 1,
  // batches before this one)): a batch is transformed alike on every run.
  std::vector<std::shared_ptr<const Transform>> transforms = {};
  size_t transform_field = 0;
  // Data parallelism (dist/data_parallel.h): batches are the job's global
  // batches, and this process takes share `rank` of `ranks` of each, a
  // contiguous part of its rows (sizes differ by one at most). The position
  // is the global one, so that a checkpoint resumes at any number of ranks.
  int rank = 0;
  int ranks = 1;
};

// The data loader's state names start with this prefix (nn/checkpoint.h).
inline constexpr absl::string_view kDataLoaderStatePrefix = "data_loader.";

class DataLoader {
 public:
  // Throws tc::Error for batch_size < 1, an empty epoch (no examples, or
  // fewer than a batch with drop_last), a rank outside [0, ranks), or a
  // batch of fewer examples than ranks.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t batches_per_epoch() const { return batches_per_epoch_; }

  struct Position {
    int64_t epoch = 0, batch = 0;  // the next batch Next() returns
    bool operator==(const Position& o) const { return epoch == o.epoch && batch == o.batch; }
  };
  Position position() const;
  // Continues from `position` (a checkpoint's); an error for a batch
  // outside the epoch or a negative epoch.
  absl::Status set_position(Position position);
  // The position as checkpoint tensors, "data_loader.epoch" and
  // "data_loader.batch" (i64 scalars), beside a model's and an optimizer's
  // state (nn::SaveTensors); load_state continues from them.
  NamedTensors state() const;
  absl::Status load_state(const NamedTensors& state);

  // The batch at position(), a new tensor per field, and the position moves
  // on (to the next epoch after its last batch). A dataset's or a
  // transform's error is returned, and the position stays. One thread calls
  // Next and set_position; the loader's own thread only prefetches.
  absl::StatusOr<std::vector<Tensor>> Next();

 private:
  absl::StatusOr<std::vector<Tensor>> Make(Position at) const;
  absl::StatusOr<std::vector<Tensor>> MakeOrThrow(Position at) const;
  Position After(Position at) const;
  // The example order of `epoch`, cached for the epoch in progress.
  std::shared_ptr<const std::vector<int64_t>> OrderOf(int64_t epoch) const;
  void Prefetch();  // the background thread's loop

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t batches_per_epoch_ = 0;

  // std::mutex, which ThreadSanitizer sees (it does not see Debian's
  // uninstrumented Abseil locks). mu_ guards the fields after it.
  mutable std::mutex mu_;
  std::condition_variable changed_;  // any of them changed
  Position position_;
  // The batch the thread made for `ready_at_`, if any.
  std::optional<Position> ready_at_;
  std::optional<absl::StatusOr<std::vector<Tensor>>> ready_;
  std::optional<Position> making_;  // what the thread is making
  bool want_ = false;               // the thread should make position_'s batch
  bool stop_ = false;
  mutable std::mutex order_mu_;  // guards the two below
  mutable int64_t order_epoch_ = -1;
  mutable std::shared_ptr<const std::vector<int64_t>> order_;
  std::thread worker_;  // last: started when the rest exists
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_DATA_DATA_LOADER_H_
