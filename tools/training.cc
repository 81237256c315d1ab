#include "tools/training.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/fusing_compiler.h"
#include "graph/decompositions.h"
#include "nn/checkpoint.h"
#include "nn/data/data_loader.h"
#include "partition/strategies.h"
#include "runtime/error.h"
#include "runtime/random.h"
#include "tools/cli.h"

namespace tc {

// The batches of one run: batch `step` is a pure function of (seed, step).
class TrainingData {
 public:
  virtual ~TrainingData() = default;
  virtual absl::string_view name() const = 0;  // saved in checkpoints
  virtual int64_t steps_per_epoch() const = 0;
  // The size of each epoch's last batch, when smaller than the others; 0
  // when every batch is full.
  virtual int64_t partial_batch() const { return 0; }
  // The inputs and targets of step `step`, 0 being the first of training.
  virtual void Batch(int64_t step, TensorTree& inputs, TensorTree& targets) = 0;
};

namespace {

// Fashion-MNIST images flattened to the model's input shape, shuffled per
// epoch by the counter RNG from (seed, epoch). Each epoch ends with the
// images that fill no whole batch, as a smaller batch, unless `drop_last`.
class FashionData : public TrainingData {
 public:
  FashionData(nn::LabeledImages data, Shape input_shape, uint64_t seed, bool drop_last)
      : data_(std::move(data)),
        x_(tc::empty(input_shape)),
        y_(tc::empty({input_shape[0]}, DType::kI64)),
        seed_(seed) {
    const int64_t images = data_.labels.numel(), batch = input_shape[0];
    full_batches_ = images / batch;
    if (!drop_last && images % batch != 0) {
      input_shape[0] = images % batch;
      x_partial_ = tc::empty(input_shape);
      y_partial_ = tc::empty({input_shape[0]}, DType::kI64);
    }
  }

  absl::string_view name() const override { return "fashion-mnist"; }
  int64_t steps_per_epoch() const override {
    return full_batches_ + (x_partial_.defined() ? 1 : 0);
  }
  int64_t partial_batch() const override { return x_partial_.defined() ? x_partial_.size(0) : 0; }

  void Batch(int64_t step, TensorTree& inputs, TensorTree& targets) override {
    const int64_t epoch = step / steps_per_epoch(), index = step % steps_per_epoch();
    if (epoch != order_epoch_) Shuffle(epoch);
    const bool partial = index == full_batches_;
    const Tensor& x = partial ? x_partial_ : x_;
    const Tensor& y = partial ? y_partial_ : y_;
    Gather(data_, order_, index * x_.size(0), x, y);
    inputs = TensorTree::MakeLeaf(x);
    targets = TensorTree::MakeLeaf(y);
  }

 private:
  void Shuffle(int64_t epoch) {
    order_ =
        nn::ShuffledOrder(data_.labels.numel(), RandomBits(seed_, static_cast<uint64_t>(epoch)));
    order_epoch_ = epoch;
  }

  nn::LabeledImages data_;
  Tensor x_, y_;                  // refilled each step: the previous step's backward has run
  Tensor x_partial_, y_partial_;  // the last batch, when partial
  int64_t full_batches_ = 0;
  uint64_t seed_;
  std::vector<int64_t> order_;
  int64_t order_epoch_ = -1;
};

// kSyntheticBatches batches like the example: floating tensors drawn once
// from Generator(RandomBits(seed, i)) for batch i, the others kept.
class SyntheticData : public TrainingData {
 public:
  SyntheticData(const TensorTree& inputs, const TensorTree& targets, uint64_t seed) {
    for (int64_t i = 0; i < kSyntheticBatches; ++i) {
      Generator gen(RandomBits(seed, static_cast<uint64_t>(i)));
      auto draw = [&](const Tensor& t) {
        return IsFloating(t.dtype()) ? randn(t.shape(), t.dtype(), &gen) : t;
      };
      TensorTree in = inputs.Map(draw);  // inputs first: the draw order of each batch
      batches_.push_back({std::move(in), targets.Map(draw)});
    }
  }

  absl::string_view name() const override { return "synthetic"; }
  int64_t steps_per_epoch() const override { return kSyntheticBatches; }

  void Batch(int64_t step, TensorTree& inputs, TensorTree& targets) override {
    const auto& [in, out] = batches_[step % kSyntheticBatches];
    inputs = in;
    targets = out;
  }

 private:
  std::vector<std::pair<TensorTree, TensorTree>> batches_;
};

// Whether `spec` takes Fashion-MNIST: one f32 input of 784 values per example
// and i64 class labels, one per example.
bool TakesFashionMnist(const nn::ModelSpec& spec) {
  if (!spec.inputs.is_leaf() || !spec.targets.is_leaf()) return false;
  const Tensor& x = spec.inputs.leaf();
  const Tensor& y = spec.targets.leaf();
  return x.dtype() == DType::kF32 && x.shape().size() >= 2 && x.numel() == x.size(0) * 784 &&
         y.dtype() == DType::kI64 && y.shape() == Shape{x.size(0)};
}

// The checkpoint metadata keys of the training position.
constexpr char kModelKey[] = "tensorcut.model";
constexpr char kOptimizerKey[] = "tensorcut.optimizer";
constexpr char kStepKey[] = "tensorcut.step";
constexpr char kEpochKey[] = "tensorcut.epoch";
constexpr char kSeedKey[] = "tensorcut.seed";
constexpr char kBatchKey[] = "tensorcut.batch";
constexpr char kDataKey[] = "tensorcut.data";
constexpr char kDropLastKey[] = "tensorcut.drop_last";
constexpr char kRngSeedKey[] = "tensorcut.rng_seed";  // the default generator's
constexpr char kRngOffsetKey[] = "tensorcut.rng_offset";

absl::StatusOr<std::string> MetadataValue(const nn::Metadata& metadata, const char* key,
                                          const std::string& path) {
  auto it = metadata.find(key);
  if (it == metadata.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", path, " has no \"", key,
                     "\" metadata: it was not written by `tensorcut train`"));
  }
  return it->second;
}

absl::StatusOr<uint64_t> MetadataNumber(const nn::Metadata& metadata, const char* key,
                                        const std::string& path) {
  TC_ASSIGN_OR_RETURN(std::string text, MetadataValue(metadata, key, path));
  uint64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, ": metadata \"", key,
                                                   "\" is \"", text, "\", not a number"));
  }
  return value;
}

// OK when the checkpoint's `key` is `expected`; otherwise names the flag.
absl::Status CheckMetadata(const nn::Metadata& metadata, const char* key,
                           const std::string& expected, absl::string_view flag,
                           const std::string& path) {
  TC_ASSIGN_OR_RETURN(std::string value, MetadataValue(metadata, key, path));
  if (value == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, " was written with ", flag,
                                                 " ", value, ", not ", expected));
}

}  // namespace

absl::StatusOr<CompilerPipeline> JointPipeline(nn::Module& module, const TensorTree& inputs,
                                               const DecompositionTable* decompositions,
                                               const CaptureOptions& capture) {
  absl::StatusOr<CompilerPipeline> pipeline = CompilerPipeline::Create(module, inputs, capture);
  if (!pipeline.ok()) return pipeline.status();
  IrOptions options;
  options.decompositions = decompositions;
  TC_RETURN_IF_ERROR(pipeline->generate_ir_for_training(options));
  return pipeline;
}

absl::StatusOr<std::unique_ptr<nn::Optimizer>> MakeOptimizer(absl::string_view name,
                                                             nn::ParamList params, double lr) {
  if (name == "sgd") return std::make_unique<nn::SGD>(std::move(params), lr);
  if (name == "adam") return std::make_unique<nn::Adam>(std::move(params), lr);
  if (name == "adamw") return std::make_unique<nn::AdamW>(std::move(params), lr);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer \"", name, "\"; known optimizers: sgd, adam, adamw"));
}

Trainer::~Trainer() = default;

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainOptions& options) {
  if (options.batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch must be at least 1, got ", options.batch));
  }
  if (options.steps < 0 || (options.steps == 0 && options.epochs < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--steps must be positive or --epochs at least 1, got --steps ", options.steps,
                     " --epochs ", options.epochs));
  }
  TC_ASSIGN_OR_RETURN(partition::PartitionFn partition_fn,
                      partition::PartitionerByName(options.partition, options.budget));
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel(options.model, options.seed));

  std::unique_ptr<Trainer> t(new Trainer());
  t->options_ = options;
  t->spec_ = std::move(spec);
  TC_ASSIGN_OR_RETURN(
      t->optimizer_,
      MakeOptimizer(options.optimizer, t->spec_.module->named_parameters(), options.lr));
  // What can be checked without data or compiling comes first.
  nn::Metadata metadata;
  if (!options.resume.empty()) {
    TC_RETURN_IF_ERROR(nn::LoadTensors(options.resume, &metadata).status());
    TC_RETURN_IF_ERROR(t->CheckResumable(metadata));
  }
  TC_RETURN_IF_ERROR(t->MakeData());
  if (!options.resume.empty()) {
    const std::string batch = absl::StrCat(t->batch_);
    TC_RETURN_IF_ERROR(CheckMetadata(metadata, kBatchKey, batch, "--batch", options.resume));
    // Whether epochs end with their partial batch decides where they end.
    // Checkpoints from before partial batches were trained have no key:
    // their epochs dropped it.
    if (t->data_->partial_batch() > 0 || options.drop_last) {
      nn::Metadata with_default = metadata;
      with_default.try_emplace(kDropLastKey, "true");
      TC_RETURN_IF_ERROR(CheckMetadata(with_default, kDropLastKey,
                                       options.drop_last ? "true" : "false", "--drop-last",
                                       options.resume));
    }
  }
  TC_RETURN_IF_ERROR(t->Compile(partition_fn));

  manual_seed(options.seed);
  // After the capture, so that nothing the capture did to the module survives.
  if (!options.resume.empty()) {
    TC_RETURN_IF_ERROR(t->Restore(metadata));
  }
  t->last_step_ = options.steps > 0 ? options.steps : options.epochs * t->steps_per_epoch();
  if (t->step_ > t->last_step_) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", options.resume, " is at step ",
                                                   t->step_, ", past the last step ", t->last_step_,
                                                   " that --steps/--epochs ask for"));
  }
  return t;
}

absl::Status Trainer::CheckResumable(const nn::Metadata& metadata) const {
  const std::string& path = options_.resume;
  absl::Status s = CheckMetadata(metadata, kModelKey, spec_.name, "--model", path);
  if (s.ok()) s = CheckMetadata(metadata, kOptimizerKey, options_.optimizer, "--optimizer", path);
  if (s.ok()) s = CheckMetadata(metadata, kSeedKey, absl::StrCat(options_.seed), "--seed", path);
  return s;
}

absl::Status Trainer::MakeData() {
  if (!TakesFashionMnist(spec_)) {
    data_ = std::make_unique<SyntheticData>(spec_.inputs, spec_.targets, options_.seed);
    spec_.inputs.ForEachLeaf([&](const Tensor& x) {
      if (batch_ == 0 && !x.shape().empty()) batch_ = x.size(0);
    });
    return absl::OkStatus();
  }
  TC_ASSIGN_OR_RETURN(nn::LabeledImages data, nn::LoadFashionMnist(options_.data_dir, true));
  const Tensor& example = spec_.inputs.leaf();
  const int64_t values = example.numel() / example.size(0);
  const int64_t rows = data.images.size(2), cols = data.images.size(3);
  if (rows * cols != values) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data ", options_.data_dir, ": images are ", rows, "x", cols, " (", rows * cols,
        " values each); ", options_.model, " takes ", values, " values per example (28x28)"));
  }
  if (data.labels.numel() < options_.batch) {
    return absl::InvalidArgumentError(absl::StrCat("--batch ", options_.batch, " exceeds the ",
                                                   data.labels.numel(), " training images"));
  }
  Shape shape = spec_.inputs.leaf().shape();
  shape[0] = options_.batch;
  data_ = std::make_unique<FashionData>(std::move(data), shape, options_.seed, options_.drop_last);
  batch_ = options_.batch;
  return absl::OkStatus();
}

absl::Status Trainer::Compile(const partition::PartitionFn& partition_fn) {
  const Clock::time_point start = Clock::now();
  TensorTree inputs, targets;
  data_->Batch(0, inputs, targets);
  // Batches of two sizes: one compiled step for any batch size, planned
  // for each size on its first call. Fashion-MNIST's input is one tensor,
  // the placeholder "arg".
  CaptureOptions capture;
  if (data_->partial_batch() > 0) capture.dynamic_dims = {{"arg", {0}}};
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline,
                      JointPipeline(*spec_.module, inputs, /*decompositions=*/nullptr, capture));
  pipeline_ = std::make_unique<CompilerPipeline>(std::move(pipeline));
  TC_ASSIGN_OR_RETURN(partition_, pipeline_->partition(partition_fn, joint()));
  TC_ASSIGN_OR_RETURN(step_fn_, pipeline_->compile_training(codegen::fusing(), partition_));
  compile_seconds_ = Seconds(start);
  return absl::OkStatus();
}

absl::Status Trainer::Restore(const nn::Metadata& metadata) {
  const std::string& path = options_.resume;
  TC_ASSIGN_OR_RETURN(const uint64_t step, MetadataNumber(metadata, kStepKey, path));
  if (step > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, ": metadata \"", kStepKey,
                                                   "\" is ", step, ", out of range"));
  }
  TC_ASSIGN_OR_RETURN(const uint64_t rng_seed, MetadataNumber(metadata, kRngSeedKey, path));
  TC_ASSIGN_OR_RETURN(const uint64_t rng_offset, MetadataNumber(metadata, kRngOffsetKey, path));
  TC_RETURN_IF_ERROR(nn::load(*spec_.module, path, optimizer_.get()));
  // The checkpoint holds the learning rate it was trained with; --lr holds
  // over it, so a resumed run may change it.
  optimizer_->set_lr(options_.lr);
  step_ = first_step_ = static_cast<int64_t>(step);
  DefaultGenerator().Reseed(rng_seed);
  DefaultGenerator().Advance(rng_offset);
  return absl::OkStatus();
}

absl::StatusOr<StepStats> Trainer::Step() {
  TensorTree inputs, targets;
  data_->Batch(step_, inputs, targets);
  TC_ASSIGN_OR_RETURN(TensorTree out, step_fn_(inputs));
  return CatchErrors([&] {
    const Tensor loss = spec_.loss(out, targets);
    optimizer_->zero_grad();
    loss.backward();
    optimizer_->step();
    ++step_;
    StepStats stats{loss.to(DType::kF64).item<double>(), NAN, 0};
    inputs.ForEachLeaf([&](const Tensor& x) {
      if (stats.examples == 0 && !x.shape().empty()) stats.examples = x.size(0);
    });
    if (targets.is_leaf() && targets.leaf().dtype() == DType::kI64 && out.is_leaf()) {
      stats.accuracy = Accuracy(out.leaf().detach(), targets.leaf());
    }
    return stats;
  });
}

absl::Status Trainer::Save(const std::string& path) const {
  nn::NamedTensors tensors = spec_.module->state_dict();
  for (auto& entry : optimizer_->state()) tensors.push_back(std::move(entry));
  const nn::Metadata metadata = {
      {kModelKey, spec_.name},
      {kOptimizerKey, options_.optimizer},
      {kStepKey, absl::StrCat(step_)},
      {kEpochKey, absl::StrCat(step_ / steps_per_epoch())},
      {kSeedKey, absl::StrCat(options_.seed)},
      {kBatchKey, absl::StrCat(batch_)},
      {kDataKey, std::string(data_->name())},
      {kDropLastKey, options_.drop_last ? "true" : "false"},
      {kRngSeedKey, absl::StrCat(DefaultGenerator().seed())},
      {kRngOffsetKey, absl::StrCat(DefaultGenerator().offset())},
  };
  return nn::SaveTensors(tensors, path, metadata);
}

int64_t Trainer::steps_per_epoch() const { return data_->steps_per_epoch(); }

absl::StatusOr<std::optional<double>> Trainer::TestAccuracy() {
  if (synthetic()) return std::optional<double>();
  TC_ASSIGN_OR_RETURN(nn::LabeledImages test, nn::LoadFashionMnist(options_.data_dir, false));
  if (test.labels.numel() == 0) return std::optional<double>();
  spec_.module->eval();
  absl::StatusOr<double> accuracy =
      CompiledAccuracy(*spec_.module, test, spec_.inputs.leaf().shape(), 1000);
  spec_.module->train();
  if (!accuracy.ok()) return accuracy.status();
  return *accuracy;
}

int64_t Trainer::last_batch() const {
  return data_->partial_batch() > 0 ? data_->partial_batch() : batch_;
}

bool Trainer::synthetic() const { return data_->name() == "synthetic"; }

absl::StatusOr<double> CompiledAccuracy(nn::Module& model, const nn::LabeledImages& data,
                                        Shape input_shape, int64_t batch) {
  const int64_t images = data.labels.numel();
  input_shape[0] = std::min(batch, images);
  TC_ASSIGN_OR_RETURN(
      Function eval,
      compile(model, TensorTree::MakeLeaf(tc::empty(input_shape)),
              {.training = false, .dynamic_dims = {{"arg", {0}}}, .automatic_dynamic = false}));
  std::vector<int64_t> order(images);
  for (int64_t i = 0; i < images; ++i) order[i] = i;
  double correct = 0;
  for (int64_t first = 0; first < images; first += input_shape[0]) {
    Shape rows = input_shape;
    rows[0] = std::min(input_shape[0], images - first);
    const Tensor x = tc::empty(rows), y = tc::empty({rows[0]}, DType::kI64);
    Gather(data, order, first, x, y);
    TC_ASSIGN_OR_RETURN(TensorTree out, eval(TensorTree::MakeLeaf(x)));
    correct += Accuracy(out.leaf(), y) * static_cast<double>(rows[0]);
  }
  return correct / static_cast<double>(images);
}

}  // namespace tc
