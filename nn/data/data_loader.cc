#include "nn/data/data_loader.h"

#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "runtime/random.h"

namespace tc::nn {
namespace {

[[noreturn]] void Fail(absl::string_view what) {
  throw Error(absl::InvalidArgumentError(absl::StrCat("DataLoader: ", what)));
}

}  // namespace

std::vector<int64_t> ShuffledOrder(int64_t n, uint64_t stream) {
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(order[i], order[RandomBits(stream, static_cast<uint64_t>(i)) % (i + 1)]);
  }
  return order;
}

// ---- ArrayDataset

ArrayDataset::ArrayDataset(std::vector<Field> fields) : fields_(std::move(fields)) {
  for (size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    if (f.array.rows() != fields_[0].array.rows()) {
      throw Error(absl::InvalidArgumentError(absl::StrCat(
          "ArrayDataset: field ", i, " (", f.array.ToString(), ") has ", f.array.rows(),
          " rows, field 0 (", fields_[0].array.ToString(), ") ", fields_[0].array.rows())));
    }
    if (f.divisor != 1 && !IsFloating(f.dtype)) {
      throw Error(
          absl::InvalidArgumentError(absl::StrCat("ArrayDataset: field ", i, " converts to ",
                                                  DTypeName(f.dtype), ", which takes no divisor")));
    }
  }
}

int64_t ArrayDataset::size() const { return fields_.empty() ? 0 : fields_[0].array.rows(); }

std::vector<TensorType> ArrayDataset::field_types() const {
  std::vector<TensorType> types;
  for (const Field& f : fields_) types.push_back({f.dtype, f.array.row_shape()});
  return types;
}

absl::Status ArrayDataset::Gather(absl::Span<const int64_t> indices,
                                  absl::Span<const Tensor> fields) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (absl::Status s = fields_[i].array.GatherRows(indices, fields[i]); !s.ok()) return s;
    if (fields_[i].divisor != 1) {
      const Tensor& t = fields[i];
      if (t.dtype() == DType::kF32) {
        const float divisor = static_cast<float>(fields_[i].divisor);
        float* p = t.data<float>();
        for (int64_t e = 0; e < t.numel(); ++e) p[e] /= divisor;
      } else {
        double* p = t.data<double>();
        for (int64_t e = 0; e < t.numel(); ++e) p[e] /= fields_[i].divisor;
      }
    }
  }
  return absl::OkStatus();
}

// ---- TensorDataset

TensorDataset::TensorDataset(std::vector<Tensor> fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].dim() == 0 || fields[i].size(0) != fields[0].size(0)) {
      throw Error(absl::InvalidArgumentError(absl::StrCat(
          "TensorDataset: field ", i, " is ", fields[i].type().ToString(),
          "; every field needs dim 0 of size ", fields[0].dim() == 0 ? 0 : fields[0].size(0))));
    }
    fields_.push_back(fields[i].contiguous());
  }
}

int64_t TensorDataset::size() const { return fields_.empty() ? 0 : fields_[0].size(0); }

std::vector<TensorType> TensorDataset::field_types() const {
  std::vector<TensorType> types;
  for (const Tensor& t : fields_) {
    types.push_back({t.dtype(), Shape(t.shape().begin() + 1, t.shape().end())});
  }
  return types;
}

absl::Status TensorDataset::Gather(absl::Span<const int64_t> indices,
                                   absl::Span<const Tensor> fields) const {
  for (size_t f = 0; f < fields_.size(); ++f) {
    const Tensor& src = fields_[f];
    if (indices.empty()) continue;
    const size_t row = src.bytes() / static_cast<size_t>(src.size(0));
    for (size_t i = 0; i < indices.size(); ++i) {
      if (indices[i] < 0 || indices[i] >= src.size(0)) {
        return absl::OutOfRangeError(
            absl::StrCat("TensorDataset: example ", indices[i], " of ", src.size(0)));
      }
      std::memcpy(static_cast<char*>(fields[f].raw_data()) + i * row,
                  static_cast<const char*>(src.raw_data()) + indices[i] * row, row);
    }
  }
  return absl::OkStatus();
}

// ---- DataLoader

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  if (options_.batch_size < 1)
    Fail(absl::StrCat("batch_size must be >= 1, got ", options_.batch_size));
  const int64_t n = dataset_->size();
  batches_per_epoch_ = n / options_.batch_size;
  if (!options_.drop_last && n % options_.batch_size != 0) ++batches_per_epoch_;
  if (!options_.transforms.empty() && options_.transform_field >= dataset_->field_types().size()) {
    Fail(absl::StrCat("transform_field ", options_.transform_field, " of a dataset of ",
                      dataset_->field_types().size(), " fields"));
  }
  if (batches_per_epoch_ == 0) {
    Fail(absl::StrCat("an epoch of ", n, " examples has no ",
                      options_.drop_last ? "full batch" : "batch", " of ", options_.batch_size));
  }
  if (options_.ranks < 1 || options_.rank < 0 || options_.rank >= options_.ranks) {
    Fail(absl::StrCat("rank ", options_.rank, " of ", options_.ranks,
                      ": expected 0 <= rank < ranks"));
  }
  const int64_t last = options_.drop_last || n % options_.batch_size == 0 ? options_.batch_size
                                                                          : n % options_.batch_size;
  if (std::min(last, options_.batch_size) < options_.ranks) {
    Fail(absl::StrCat("a batch of ", last, " examples cannot be shared by ", options_.ranks,
                      " ranks, one example each at least",
                      last < options_.batch_size ? " (the epoch's last; drop_last drops it)" : ""));
  }
  if (options_.prefetch) {
    want_ = true;  // before the thread exists
    worker_ = std::thread([this] { Prefetch(); });
  }
}

DataLoader::~DataLoader() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

DataLoader::Position DataLoader::position() const {
  std::lock_guard<std::mutex> lock(mu_);
  return position_;
}

absl::Status DataLoader::set_position(Position position) {
  if (position.epoch < 0 || position.batch < 0 || position.batch >= batches_per_epoch_) {
    return absl::InvalidArgumentError(
        absl::StrCat("DataLoader: position epoch ", position.epoch, " batch ", position.batch,
                     " is outside an epoch of ", batches_per_epoch_, " batches"));
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    position_ = position;
    ready_at_.reset();
    ready_.reset();
    want_ = worker_.joinable();
  }
  changed_.notify_all();
  return absl::OkStatus();
}

NamedTensors DataLoader::state() const {
  const Position at = position();
  return {{"data_loader.epoch", scalar(static_cast<double>(at.epoch), DType::kI64)},
          {"data_loader.batch", scalar(static_cast<double>(at.batch), DType::kI64)}};
}

absl::Status DataLoader::load_state(const NamedTensors& state) {
  const std::string mismatch = DescribeMismatch(this->state(), state, "got");
  if (!mismatch.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("DataLoader state does not match: ", mismatch));
  }
  Position at;
  for (const auto& [name, t] : state) {
    (name == "data_loader.epoch" ? at.epoch : at.batch) = t.item<int64_t>();
  }
  return set_position(at);
}

DataLoader::Position DataLoader::After(Position at) const {
  return at.batch + 1 == batches_per_epoch_ ? Position{at.epoch + 1, 0}
                                            : Position{at.epoch, at.batch + 1};
}

std::shared_ptr<const std::vector<int64_t>> DataLoader::OrderOf(int64_t epoch) const {
  std::lock_guard<std::mutex> lock(order_mu_);
  if (order_epoch_ != epoch) {
    const int64_t n = dataset_->size();
    std::vector<int64_t> order;
    if (options_.shuffle) {
      order = ShuffledOrder(n, RandomBits(options_.seed, static_cast<uint64_t>(epoch)));
    } else {
      order.resize(n);
      for (int64_t i = 0; i < n; ++i) order[i] = i;
    }
    order_ = std::make_shared<const std::vector<int64_t>>(std::move(order));
    order_epoch_ = epoch;
  }
  return order_;
}

absl::StatusOr<std::vector<Tensor>> DataLoader::Make(Position at) const {
  // On the prefetch thread an exception would end the process: a dataset's
  // or a transform's tc::Error, and running out of memory, become statuses.
  try {
    return MakeOrThrow(at);
  } catch (const Error& e) {
    return e.status();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("DataLoader: out of memory making batch ", at.batch, " of epoch ", at.epoch));
  }
}

absl::StatusOr<std::vector<Tensor>> DataLoader::MakeOrThrow(Position at) const {
  const std::shared_ptr<const std::vector<int64_t>> order = OrderOf(at.epoch);
  // This rank's share of the global batch: its part of the batch's rows.
  const int64_t global_first = at.batch * options_.batch_size;
  const int64_t global_count = std::min(options_.batch_size, dataset_->size() - global_first);
  const int64_t first = global_first + global_count * options_.rank / options_.ranks;
  const int64_t count = global_first + global_count * (options_.rank + 1) / options_.ranks - first;
  std::vector<Tensor> fields;
  for (const TensorType& type : dataset_->field_types()) {
    Shape shape = type.shape;
    shape.insert(shape.begin(), count);
    fields.push_back(Tensor::Uninitialized(shape, type.dtype));
  }
  absl::Status s = dataset_->Gather(
      absl::MakeConstSpan(order->data() + first, static_cast<size_t>(count)), fields);
  if (!s.ok()) return s;
  if (!options_.transforms.empty()) {
    // Each rank's share draws its own numbers (with one rank, the batch's).
    const int64_t batches = at.epoch * batches_per_epoch_ + at.batch;
    Generator gen(RandomBits(options_.seed + 1,
                             static_cast<uint64_t>(batches * options_.ranks + options_.rank)));
    Tensor& images = fields[options_.transform_field];
    for (const auto& transform : options_.transforms) {
      absl::StatusOr<Tensor> done = transform->Apply(images, gen);
      if (!done.ok()) return done.status();
      images = *std::move(done);
    }
  }
  return fields;
}

absl::StatusOr<std::vector<Tensor>> DataLoader::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  const Position at = position_;
  // The thread may be making this very batch: wait for it rather than
  // make it twice.
  changed_.wait(lock, [&] { return !(making_.has_value() && *making_ == at); });
  std::optional<absl::StatusOr<std::vector<Tensor>>> batch;
  if (ready_at_.has_value() && *ready_at_ == at) {
    batch = std::move(ready_);
  } else {
    lock.unlock();
    batch = Make(at);
    lock.lock();
  }
  ready_at_.reset();
  ready_.reset();
  // A failed batch is not skipped: the next call makes it again.
  if (batch->ok()) position_ = After(at);
  want_ = worker_.joinable();
  lock.unlock();
  changed_.notify_all();
  return *std::move(batch);
}

void DataLoader::Prefetch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return want_ || stop_; });
    if (stop_) return;
    const Position target = position_;
    want_ = false;
    making_ = target;
    lock.unlock();
    absl::StatusOr<std::vector<Tensor>> batch = Make(target);
    lock.lock();
    making_.reset();
    if (position_ == target) {
      ready_at_ = target;
      ready_ = std::move(batch);
    }
    changed_.notify_all();
  }
}

}  // namespace tc::nn
