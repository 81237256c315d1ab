#include "tools/training.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "codegen/fusing_compiler.h"
#include "dist/data_parallel.h"
#include "graph/decompositions.h"
#include "nn/checkpoint.h"
#include "nn/data/array.h"
#include "nn/data/csv.h"
#include "nn/data/data_loader.h"
#include "nn/data/npy.h"
#include "partition/strategies.h"
#include "runtime/bf16.h"
#include "runtime/error.h"
#include "runtime/random.h"
#include "tools/cli.h"
#include "tools/imported_model.h"

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
  virtual absl::Status Batch(int64_t step, TensorTree& inputs, TensorTree& targets) = 0;
};

namespace {

// Features (f32, each value divided by `divisor`) and i64 labels as one
// dataset, the arrays moved in: a braced list of Fields would copy them
// (an initializer list's elements are const), holding Fashion-MNIST's 47 MB
// of images twice at once.
std::shared_ptr<const nn::ArrayDataset> FeaturesAndLabels(nn::Array features, double divisor,
                                                          nn::Array labels) {
  std::vector<nn::ArrayDataset::Field> fields;
  fields.push_back({std::move(features), DType::kF32, divisor});
  fields.push_back({std::move(labels), DType::kI64});
  return std::make_shared<const nn::ArrayDataset>(std::move(fields));
}

// A dataset's examples in the model's input shape (each row reshaped to it),
// shuffled per epoch by the DataLoader from (seed, epoch). Each epoch ends
// with the examples that fill no whole batch, as a smaller batch, unless
// `drop_last`.
class LoaderData : public TrainingData {
 public:
  LoaderData(std::string name, std::shared_ptr<const nn::Dataset> data, Shape input_shape,
             uint64_t seed, bool drop_last, int rank, int ranks)
      : name_(std::move(name)),
        loader_(data, {.batch_size = input_shape[0],
                       .shuffle = true,
                       .seed = seed,
                       .drop_last = drop_last,
                       .rank = rank,
                       .ranks = ranks}),
        input_shape_(std::move(input_shape)),
        partial_(drop_last ? 0 : data->size() % input_shape_[0]) {}

  absl::string_view name() const override { return name_; }
  int64_t steps_per_epoch() const override { return loader_.batches_per_epoch(); }
  int64_t partial_batch() const override { return partial_; }

  absl::Status Batch(int64_t step, TensorTree& inputs, TensorTree& targets) override {
    const nn::DataLoader::Position at{step / steps_per_epoch(), step % steps_per_epoch()};
    if (!(loader_.position() == at)) TC_RETURN_IF_ERROR(loader_.set_position(at));
    TC_ASSIGN_OR_RETURN(std::vector<Tensor> fields, loader_.Next());
    Shape shape = input_shape_;
    shape[0] = fields[0].size(0);
    inputs = TensorTree::MakeLeaf(fields[0].reshape(shape));
    targets = TensorTree::MakeLeaf(fields[1]);
    return absl::OkStatus();
  }

 private:
  std::string name_;
  nn::DataLoader loader_;
  Shape input_shape_;
  int64_t partial_;
};

// kSyntheticBatches batches like the example: floating tensors drawn once
// from Generator(RandomBits(seed, i)) for batch i, the others kept. Share
// `rank` of `ranks` keeps its part of each tensor's rows (dim 0, the
// batch's), as a DataLoader's share does.
class SyntheticData : public TrainingData {
 public:
  SyntheticData(const TensorTree& inputs, const TensorTree& targets, uint64_t seed, int rank,
                int ranks) {
    for (int64_t i = 0; i < kSyntheticBatches; ++i) {
      Generator gen(RandomBits(seed, static_cast<uint64_t>(i)));
      auto draw = [&](const Tensor& t) {
        return IsFloating(t.dtype()) ? randn(t.shape(), t.dtype(), &gen) : t;
      };
      auto share = [&](const Tensor& t) {
        if (t.dim() == 0) return t;
        const int64_t rows = t.size(0);
        return t.slice(0, rows * rank / ranks, rows * (rank + 1) / ranks).contiguous();
      };
      TensorTree in = inputs.Map(draw);  // inputs first: the draw order of each batch
      TensorTree out = targets.Map(draw);
      batches_.push_back({in.Map(share), out.Map(share)});
    }
  }

  absl::string_view name() const override { return "synthetic"; }
  int64_t steps_per_epoch() const override { return kSyntheticBatches; }

  absl::Status Batch(int64_t step, TensorTree& inputs, TensorTree& targets) override {
    const auto& [in, out] = batches_[step % kSyntheticBatches];
    inputs = in;
    targets = out;
    return absl::OkStatus();
  }

 private:
  std::vector<std::pair<TensorTree, TensorTree>> batches_;
};

// The data-parallel backward of a run whose shares the trainer knows: it
// sets each step's share itself (BackwardAllReduce::SetShare), so the step
// need not all-reduce the batch sizes before each backward as Prepare would.
class SharesKnown : public BackwardRewriter {
 public:
  explicit SharesKnown(std::shared_ptr<dist::BackwardAllReduce> all_reduce)
      : all_reduce_(std::move(all_reduce)) {}
  absl::Status Rewrite(const JointGraph& joint, partition::PartitionResult& part) override {
    return all_reduce_->Rewrite(joint, part);
  }
  codegen::Executable Bind(codegen::Executable backward) const override {
    return all_reduce_->Bind(std::move(backward));
  }
  absl::Status Prepare(absl::Span<const Tensor>) override { return absl::OkStatus(); }

 private:
  std::shared_ptr<dist::BackwardAllReduce> all_reduce_;
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

// A user's data file: its training examples (f32 features flattened, i64
// labels), the test split when there is one, and the classifier's sizes.
struct UserData {
  std::shared_ptr<const nn::Dataset> train, test;
  int64_t features = 0, classes = 0;
};

bool IsDataFile(const std::string& path) {
  return absl::EndsWith(path, ".csv") || absl::EndsWith(path, ".npz") ||
         absl::EndsWith(path, ".safetensors");
}

// Features as f32 rows [N, product of the other dims], labels (integers) as
// i64 class indices; `classes` grows to the largest label + 1.
absl::StatusOr<std::shared_ptr<const nn::Dataset>> Examples(nn::Array features, nn::Array labels,
                                                            const std::string& where,
                                                            int64_t& classes) {
  if (features.shape.empty() || labels.shape.size() != 1 || labels.rows() != features.rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected features [N, ...] and labels [N], got ",
                     features.ToString(), " and ", labels.ToString()));
  }
  if (labels.type == nn::ElementType::kF32 || labels.type == nn::ElementType::kF64) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": labels ", labels.ToString(),
                                                   " are floats; class labels are integers"));
  }
  // NaN or infinite features would train into a NaN model: every format is
  // checked here, as CSV's reader checks its fields.
  if (absl::Status finite = features.CheckFinite(); !finite.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": features ", features.ToString(), ": ", finite.message()));
  }
  const Tensor all = tc::empty({labels.rows()}, DType::kI64);
  std::vector<int64_t> rows(static_cast<size_t>(labels.rows()));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
  TC_RETURN_IF_ERROR(labels.GatherRows(rows, all));
  const int64_t* label = all.data<int64_t>();
  for (int64_t i = 0; i < labels.rows(); ++i) {
    // The classifier has one output per class: an id column taken for the
    // labels would make it huge.
    constexpr int64_t kMaxClasses = 100000;
    if (label[i] < 0 || label[i] >= kMaxClasses) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": label ", label[i], " of example ", i,
                                                     " is not a class index in [0, ", kMaxClasses,
                                                     ")"));
    }
    classes = std::max(classes, label[i] + 1);
  }
  features.shape = {features.rows(), features.numel() / std::max<int64_t>(features.rows(), 1)};
  return FeaturesAndLabels(std::move(features), /*divisor=*/1, std::move(labels));
}

// The arrays `name` and, if there, `name`_test of an .npz or safetensors file.
absl::StatusOr<nn::Array> Find(const nn::NamedArrays& arrays, const std::string& name,
                               const std::string& path, const char* flag) {
  std::vector<std::string> names;
  for (const auto& [n, a] : arrays) {
    if (n == name) return a;
    names.push_back(n);
  }
  return absl::InvalidArgumentError(absl::StrCat("--data ", path, " has no array \"", name, "\" (",
                                                 flag,
                                                 "); its arrays: ", absl::StrJoin(names, ", ")));
}

absl::StatusOr<UserData> LoadUserData(const TrainOptions& o) {
  UserData data;
  const std::string& path = o.data_dir;
  if (absl::EndsWith(path, ".csv")) {
    TC_ASSIGN_OR_RETURN(nn::CsvData train, nn::ReadCsv(path, o.label_column));
    data.features = train.features.shape[1];
    if (!train.class_names.empty()) data.classes = static_cast<int64_t>(train.class_names.size());
    if (!o.test_data.empty()) {
      TC_ASSIGN_OR_RETURN(nn::CsvData test,
                          nn::ReadCsv(o.test_data, o.label_column, train.class_names));
      if (train.class_names.empty() != test.class_names.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--test-data ", o.test_data, ": its labels are ",
                         test.class_names.empty() ? "integers" : "names", " where --data ", path,
                         " has ", train.class_names.empty() ? "integers" : "names"));
      }
      if (test.feature_names != train.feature_names) {
        return absl::InvalidArgumentError(
            absl::StrCat("--test-data ", o.test_data, " has the columns ",
                         absl::StrJoin(test.feature_names, ", "), "; --data ", path, " has ",
                         absl::StrJoin(train.feature_names, ", ")));
      }
      TC_ASSIGN_OR_RETURN(data.test, Examples(std::move(test.features), std::move(test.labels),
                                              o.test_data, data.classes));
    }
    TC_ASSIGN_OR_RETURN(data.train, Examples(std::move(train.features), std::move(train.labels),
                                             path, data.classes));
    return data;
  }
  if (!o.test_data.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--test-data applies to CSV data; ", path,
                                                   " holds its test split as arrays \"", o.features,
                                                   "_test\" and \"", o.labels, "_test\""));
  }
  nn::NamedArrays arrays;
  if (absl::EndsWith(path, ".npz")) {
    TC_ASSIGN_OR_RETURN(arrays, nn::ReadNpz(path));
  } else {
    TC_ASSIGN_OR_RETURN(arrays, nn::LoadArrays(path));
  }
  TC_ASSIGN_OR_RETURN(nn::Array x, Find(arrays, o.features, path, "--features"));
  TC_ASSIGN_OR_RETURN(nn::Array y, Find(arrays, o.labels, path, "--labels"));
  data.features = x.numel() / std::max<int64_t>(x.rows(), 1);
  TC_ASSIGN_OR_RETURN(data.train, Examples(std::move(x), std::move(y), path, data.classes));
  absl::StatusOr<nn::Array> x_test = Find(arrays, o.features + "_test", path, "--features");
  absl::StatusOr<nn::Array> y_test = Find(arrays, o.labels + "_test", path, "--labels");
  if (x_test.ok() != y_test.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--data ", path, " has ", x_test.ok() ? o.features : o.labels, "_test but no ",
                     x_test.ok() ? o.labels : o.features, "_test: a test split needs both"));
  }
  if (x_test.ok() && y_test.ok()) {
    if (x_test->numel() / std::max<int64_t>(x_test->rows(), 1) != data.features) {
      return absl::InvalidArgumentError(absl::StrCat("--data ", path, ": ", o.features, "_test ",
                                                     x_test->ToString(),
                                                     " has other features than ", o.features));
    }
    TC_ASSIGN_OR_RETURN(data.test,
                        Examples(*std::move(x_test), *std::move(y_test), path, data.classes));
  }
  return data;
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
constexpr char kPrecisionKey[] = "tensorcut.precision";

absl::StatusOr<std::string> MetadataValue(const nn::Metadata& metadata, const char* key,
                                          const std::string& path) {
  auto it = metadata.find(key);
  if (it == metadata.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", path, " has no \"", key,
                     "\" metadata: it was not written by `tensorcut train`, `export` or `run`"));
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
                                               const CaptureOptions& capture, Precision precision) {
  absl::StatusOr<CompilerPipeline> pipeline = CompilerPipeline::Create(module, inputs, capture);
  if (!pipeline.ok()) return pipeline.status();
  IrOptions options;
  options.decompositions = decompositions;
  options.precision = precision;
  TC_RETURN_IF_ERROR(pipeline->generate_ir_for_training(options));
  return pipeline;
}

std::vector<std::string> PipelineStrategyNames() {
  std::vector<std::string> names = partition::StrategyNames();
  names.push_back("peak_budget");
  return names;
}

bool IsBudgetedStrategy(absl::string_view name) {
  return name == "budget" || name == "milp" || name == "peak_budget";
}

absl::StatusOr<partition::PartitionFn> PipelinePartitioner(absl::string_view name, double budget,
                                                           const CompilerPipeline& pipeline,
                                                           double milp_seconds,
                                                           partition::MilpSolve* solve,
                                                           PeakBudgetChoice* choice) {
  const std::vector<std::string> names = PipelineStrategyNames();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown partition strategy \"", name,
                                                   "\"; known: ", absl::StrJoin(names, ", ")));
  }
  if (name == "peak_budget" || name == "milp") {
    // Checked here as well, so that the error comes before any solving or
    // compiling.
    TC_RETURN_IF_ERROR(partition::CheckActivationMemoryBudget(budget));
    return name == "milp" ? partition::MilpPartitioner(budget, milp_seconds, solve)
                          : PeakBudgetPartitioner(pipeline, codegen::fusing(), budget, choice);
  }
  return partition::PartitionerByName(name, budget);
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

constexpr double kDefaultLr = 2e-3;  // as --lr

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainOptions& options) {
  if (!options.plan.empty()) return CreateFromPlan(options);
  if (options.batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch must be at least 1, got ", options.batch));
  }
  if (options.steps < 0 || (options.steps == 0 && options.epochs < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--steps must be positive or --epochs at least 1, got --steps ", options.steps,
                     " --epochs ", options.epochs));
  }
  if (options.partition == "peak_budget") {
    // TrainStep makes its pipeline itself; the strategy needs one to compile
    // its candidates in.
    return absl::InvalidArgumentError(absl::StrCat(
        "--partition peak_budget chooses by compiling candidate steps and is offered by "
        "partition, compare and graph, not train; train takes ",
        absl::StrJoin(partition::StrategyNames(), ", ")));
  }
  TC_ASSIGN_OR_RETURN(partition::PartitionFn partition_fn,
                      partition::PartitionerByName(options.partition, options.budget));
  std::unique_ptr<Trainer> t(new Trainer());
  t->options_ = options;
  ImportedClassifierSpec imported;
  if (!options.onnx.empty()) {
    TC_ASSIGN_OR_RETURN(imported, ImportedClassifier(options.onnx, options.loss, options.batch));
    t->spec_ = imported.spec;
    t->spec_.name = options.model;
  }
  if (std::error_code error; !options.data_dir.empty() &&
                             std::filesystem::exists(options.data_dir, error) &&
                             !std::filesystem::is_directory(options.data_dir, error)) {
    // What is neither a folder nor a file (a FIFO, as `--data <(...)` gives)
    // would be waited on, or read without end.
    if (absl::Status s = nn::CheckRegularFile(options.data_dir); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--data takes a data file (.csv, .npz, .safetensors) or a Fashion-MNIST folder: ",
          s.message()));
    }
  }
  if (IsDataFile(options.data_dir)) {
    // The user's data sizes a reference model: its features in, its classes
    // out; an imported model must fit the data.
    TC_ASSIGN_OR_RETURN(UserData data, LoadUserData(options));
    if (options.onnx.empty()) {
      TC_ASSIGN_OR_RETURN(t->spec_, nn::MakeClassifierFor(options.model, options.seed,
                                                          data.features, data.classes));
    } else if (data.features != imported.features || data.classes > imported.classes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--data ", options.data_dir, " has ", data.features, " features and ", data.classes,
          " classes; --onnx ", options.onnx, " takes ", imported.features,
          " values per example and scores ", imported.classes, " classes"));
    }
    t->train_set_ = std::move(data.train);
    t->test_set_ = std::move(data.test);
    t->data_description_ = absl::StrCat(
        options.data_dir, " (", t->train_set_->size(), " examples of ", data.features,
        " features, ", data.classes, " classes",
        t->test_set_ ? absl::StrCat("; ", t->test_set_->size(), " for testing") : "", ")");
  } else if (options.onnx.empty()) {
    TC_ASSIGN_OR_RETURN(t->spec_, nn::MakeModel(options.model, options.seed));
  }
  TC_ASSIGN_OR_RETURN(t->optimizer_,
                      MakeOptimizer(options.optimizer, t->spec_.module->named_parameters(),
                                    options.lr.value_or(kDefaultLr)));
  // What can be checked without data or compiling comes first.
  nn::Metadata metadata;
  if (!options.resume.empty()) {
    TC_ASSIGN_OR_RETURN(const nn::NamedTensors saved, nn::LoadTensors(options.resume, &metadata));
    TC_RETURN_IF_ERROR(t->CheckResumable(saved, metadata, options.resume));
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
  if (t->ranks() > 1) {
    // Every rank from rank 0's weights, also when resumed (each rank reads
    // the same checkpoint; the broadcast makes sure).
    TC_RETURN_IF_ERROR(dist::BroadcastModule(*options.group, *t->spec_.module));
    if (options.sync_batchnorm &&
        nn::ConvertSyncBatchNorm(*t->spec_.module, std::string(dist::ProcessGroup::kName)) > 0) {
      // Statistics over every rank's batch need every rank to hold as many rows.
      const int64_t ranks = t->ranks(), partial = t->data_->partial_batch();
      if (t->batch_ % ranks != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--sync_batchnorm needs equal shares: a batch of ", t->batch_,
                         " does not split into ", ranks, " ranks"));
      }
      if (partial % ranks != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--sync_batchnorm needs equal shares: each epoch's last batch has ", partial,
            " rows, which do not split into ", ranks, " ranks (--drop_last skips it)"));
      }
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

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::CreateFromPlan(const TrainOptions& given) {
  const std::string& path = given.plan;
  if (given.group != nullptr) {
    return absl::InvalidArgumentError(
        "a plan trains in one process; data-parallel training compiles the model (train)");
  }
  std::unique_ptr<Trainer> t(new Trainer());
  const Clock::time_point start = Clock::now();
  TC_ASSIGN_OR_RETURN(t->plan_, LoadPlan(path));
  t->compile_seconds_ = Seconds(start);
  const nn::Metadata& metadata = t->plan_->metadata();
  // The run the plan was exported from, or trained on by run: its model,
  // optimizer, seed, batch, precision and position are the plan's.
  TrainOptions options = given;
  TC_ASSIGN_OR_RETURN(options.model, MetadataValue(metadata, kModelKey, path));
  TC_ASSIGN_OR_RETURN(options.optimizer, MetadataValue(metadata, kOptimizerKey, path));
  TC_ASSIGN_OR_RETURN(options.seed, MetadataNumber(metadata, kSeedKey, path));
  TC_ASSIGN_OR_RETURN(const uint64_t batch, MetadataNumber(metadata, kBatchKey, path));
  options.batch = static_cast<int64_t>(std::min<uint64_t>(batch, 1 << 30));
  TC_ASSIGN_OR_RETURN(const std::string drop_last, MetadataValue(metadata, kDropLastKey, path));
  options.drop_last = drop_last == "true";
  TC_ASSIGN_OR_RETURN(const std::string precision, MetadataValue(metadata, kPrecisionKey, path));
  TC_ASSIGN_OR_RETURN(options.precision, ParsePrecision(precision));
  TC_ASSIGN_OR_RETURN(const std::string data, MetadataValue(metadata, kDataKey, path));
  t->options_ = options;
  t->spec_.name = options.model;
  t->spec_.description = absl::StrCat("plan ", path);
  TC_RETURN_IF_ERROR(t->CheckResumable(t->plan_->optimizer().state(), metadata, path));
  // The batch the plan takes: one input and one target tensor, their
  // symbolic dims at the sizes the plan was compiled for.
  const StepProgram& program = t->plan_->compiled().program();
  std::vector<Tensor> leaves;
  bool any_batch = false;  // whether the inputs' first dim is symbolic
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (program.inputs[i].kind != InputDescriptor::Kind::kUserInput) continue;
    const TensorType& type = program.forward.placeholders()[i]->type();
    if (leaves.empty()) any_batch = !type.shape.empty() && IsSymbolic(type.shape[0]);
    Shape shape;
    for (int64_t d : type.shape) shape.push_back(DimHint(d));
    leaves.push_back(zeros(shape, type.dtype));
  }
  if (IsDataFile(options.data_dir)) {
    TC_ASSIGN_OR_RETURN(UserData user, LoadUserData(options));
    const int64_t features = leaves.size() == 2 && leaves[0].dim() >= 1 && leaves[0].size(0) > 0
                                 ? leaves[0].numel() / leaves[0].size(0)
                                 : -1;
    if (user.features != features) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--data ", options.data_dir, " has ", user.features, " features; plan ", path,
          " takes an input and a target with ", features, " values per example"));
    }
    t->train_set_ = std::move(user.train);
    t->test_set_ = std::move(user.test);
    t->data_description_ =
        absl::StrCat(options.data_dir, " (", t->train_set_->size(), " examples of ", user.features,
                     " features, ", user.classes, " classes)");
  } else if (data == "synthetic") {
    // A reference model's synthetic batches come from its example batch.
    absl::StatusOr<nn::ModelSpec> model = nn::MakeModel(options.model, options.seed);
    if (!model.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("plan ", path, " trained on synthetic batches of model \"", options.model,
                       "\", which is not a reference model: give --data"));
    }
    t->spec_.inputs = model->inputs;
    t->spec_.targets = model->targets;
  } else if (data == "user") {
    return absl::InvalidArgumentError(
        absl::StrCat("plan ", path,
                     " was trained on a user's data file: give it (--data FILE.csv, .npz or "
                     ".safetensors)"));
  }
  if (t->spec_.inputs.kind() == TreeKind::kNone) {
    if (leaves.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "plan ", path, " takes ", leaves.size(),
          " batch tensors; run trains plans of one input and one target tensor on data"));
    }
    t->spec_.inputs = TensorTree::MakeLeaf(leaves[0]);
    t->spec_.targets = TensorTree::MakeLeaf(leaves[1]);
  }
  TC_RETURN_IF_ERROR(t->MakeData());
  if (t->data_->partial_batch() > 0 && !any_batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan ", path, " takes batches of exactly ", options.batch, " examples, and each epoch of ",
        t->data_description_, " ends with ", t->data_->partial_batch(),
        "; export the plan from this data, or with --drop_last"));
  }
  TC_RETURN_IF_ERROR(t->RestorePosition(metadata, path));
  t->last_step_ = options.steps > 0 ? options.steps : options.epochs * t->steps_per_epoch();
  if (t->step_ > t->last_step_) {
    return absl::InvalidArgumentError(absl::StrCat("plan ", path, " is at step ", t->step_,
                                                   ", past the last step ", t->last_step_,
                                                   " that --steps/--epochs ask for"));
  }
  return t;
}

absl::Status Trainer::CheckResumable(const nn::NamedTensors& saved, const nn::Metadata& metadata,
                                     const std::string& path) {
  TC_RETURN_IF_ERROR(CheckMetadata(metadata, kModelKey, spec_.name, "--model", path));
  TC_RETURN_IF_ERROR(
      CheckMetadata(metadata, kOptimizerKey, options_.optimizer, "--optimizer", path));
  TC_RETURN_IF_ERROR(
      CheckMetadata(metadata, kSeedKey, absl::StrCat(options_.seed), "--seed", path));
  // Every step updates every parameter with a gradient, so the optimizer has
  // taken as many steps as training: a checkpoint where they differ was put
  // together from two runs, or edited.
  TC_ASSIGN_OR_RETURN(const uint64_t step, MetadataNumber(metadata, kStepKey, path));
  if (step > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, ": metadata \"", kStepKey,
                                                   "\" is ", step, ", out of range"));
  }
  int64_t optimizer_steps = 0;
  for (const auto& [name, t] : saved) {
    if (absl::StartsWith(name, nn::kOptimizerStatePrefix) && absl::EndsWith(name, ".step") &&
        !nn::IsGroupOptionName(name) && t.dtype() == DType::kI64 && t.numel() == 1) {
      optimizer_steps = std::max(optimizer_steps, t.item<int64_t>());
    }
  }
  if (static_cast<uint64_t>(optimizer_steps) != step) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", path, ": metadata \"", kStepKey, "\" is ", step,
                     " but its optimizer state has taken ", optimizer_steps,
                     " steps; the checkpoint was not written by one `tensorcut train` run"));
  }
  // Mixed precision keeps f32 weights, so either precision resumes either's
  // checkpoint; train says when the precision changes.
  if (auto it = metadata.find(kPrecisionKey); it != metadata.end()) {
    TC_ASSIGN_OR_RETURN(checkpoint_precision_, ParsePrecision(it->second));
  }
  return absl::OkStatus();
}

absl::Status Trainer::MakeData() {
  if (train_set_ == nullptr && !TakesFashionMnist(spec_)) {
    data_ = std::make_unique<SyntheticData>(spec_.inputs, spec_.targets, options_.seed, rank(),
                                            ranks());
    spec_.inputs.ForEachLeaf([&](const Tensor& x) {
      if (batch_ == 0 && !x.shape().empty()) batch_ = x.size(0);
    });
    data_description_ = "synthetic batches like the model's example inputs";
    return absl::OkStatus();
  }
  std::string name = "user";
  if (train_set_ == nullptr) {
    // Fashion-MNIST as stored, bytes; each batch divided by 255.
    TC_ASSIGN_OR_RETURN(nn::ImageArrays train, nn::LoadFashionMnistArrays(options_.data_dir, true));
    const Tensor& example = spec_.inputs.leaf();
    const int64_t values = example.numel() / example.size(0);
    const int64_t rows = train.images.shape[1], cols = train.images.shape[2];
    if (rows * cols != values) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--data ", options_.data_dir, ": images are ", rows, "x", cols, " (", rows * cols,
          " values each); ", options_.model, " takes ", values, " values per example (28x28)"));
    }
    train_set_ = FeaturesAndLabels(std::move(train.images), 255, std::move(train.labels));
    name = "fashion-mnist";
    data_description_ = "Fashion-MNIST";
  }
  if (train_set_->size() < options_.batch) {
    return absl::InvalidArgumentError(absl::StrCat("--batch ", options_.batch, " exceeds the ",
                                                   train_set_->size(), " training examples"));
  }
  Shape shape = spec_.inputs.leaf().shape();
  shape[0] = options_.batch;
  data_ = std::make_unique<LoaderData>(name, train_set_, shape, options_.seed, options_.drop_last,
                                       rank(), ranks());
  batch_ = options_.batch;
  return absl::OkStatus();
}

absl::Status Trainer::Compile(const partition::PartitionFn& partition_fn) {
  const Clock::time_point start = Clock::now();
  TensorTree inputs, targets;
  TC_RETURN_IF_ERROR(data_->Batch(0, inputs, targets));
  // min_cut is the step's default partition, whose programs the compile
  // cache keeps (pipeline/step_cache.h).
  TrainStepOptions step_options{
      .partition_fn = options_.partition == "min_cut" ? partition::PartitionFn() : partition_fn,
      .precision = options_.precision,
      // Every size the data has is known: another is a defect.
      .automatic_dynamic = false,
      .return_outputs = true};
  // Batches of two sizes: one compiled step for any batch size, planned for
  // each size on its first run. The loaders' data is one input tensor and
  // one target tensor, the placeholders "arg0" and "arg1".
  if (data_->partial_batch() > 0) step_options.dynamic_dims = {{"arg0", {0}}, {"arg1", {0}}};
  if (ranks() > 1) {
    all_reduce_ = std::make_shared<dist::BackwardAllReduce>(*options_.group);
    step_options.backward_rewriter = std::make_shared<SharesKnown>(all_reduce_);
  }
  TC_ASSIGN_OR_RETURN(train_step_, TrainStep::Create(*spec_.module, spec_.loss, inputs, targets,
                                                     *optimizer_, step_options));
  compile_seconds_ = Seconds(start);
  return absl::OkStatus();
}

absl::Status Trainer::Restore(const nn::Metadata& metadata) {
  TC_RETURN_IF_ERROR(nn::load(*spec_.module, options_.resume, optimizer_.get()));
  return RestorePosition(metadata, options_.resume);
}

absl::Status Trainer::RestorePosition(const nn::Metadata& metadata, const std::string& path) {
  // CheckResumable checked the step's range.
  TC_ASSIGN_OR_RETURN(const uint64_t step, MetadataNumber(metadata, kStepKey, path));
  TC_ASSIGN_OR_RETURN(const uint64_t rng_seed, MetadataNumber(metadata, kRngSeedKey, path));
  TC_ASSIGN_OR_RETURN(const uint64_t rng_offset, MetadataNumber(metadata, kRngOffsetKey, path));
  // The checkpoint holds the learning rate it was trained with; a given
  // --lr replaces it (train says so).
  nn::Optimizer& optimizer = this->optimizer();
  checkpoint_lr_ = optimizer.lr();
  if (options_.lr.has_value()) optimizer.set_lr(*options_.lr);
  step_ = first_step_ = static_cast<int64_t>(step);
  DefaultGenerator().Reseed(rng_seed);
  DefaultGenerator().Advance(rng_offset);
  return absl::OkStatus();
}

absl::StatusOr<StepStats> Trainer::Step() {
  TensorTree inputs, targets;
  TC_RETURN_IF_ERROR(data_->Batch(step_, inputs, targets));
  // This rank's share of the global batch weighs its gradients in the
  // backward's sum.
  if (all_reduce_ != nullptr) {
    const int64_t total = GlobalRows(step_);
    const Tensor first = Flatten(inputs).first[0];
    TC_RETURN_IF_ERROR(all_reduce_->SetShare(first.dim() == 0 ? total : first.size(0), total));
  }
  std::vector<Tensor> batch = Flatten(inputs).first;
  for (Tensor& t : Flatten(targets).first) batch.push_back(std::move(t));
  std::vector<Tensor> outputs;
  absl::StatusOr<double> loss;
  if (plan_ != nullptr) {
    loss = plan_->Run(batch);
    outputs = plan_->outputs();
  } else {
    loss = train_step_->Run(batch);
    TC_ASSIGN_OR_RETURN(const TensorTree out, train_step_->outputs());
    outputs = Flatten(out).first;
  }
  if (!loss.ok()) return loss.status();
  StepStats stats{*loss, NAN, 0};
  inputs.ForEachLeaf([&](const Tensor& x) {
    if (stats.examples == 0 && !x.shape().empty()) stats.examples = x.size(0);
  });
  if (targets.is_leaf() && targets.leaf().dtype() == DType::kI64 && outputs.size() == 1) {
    TC_ASSIGN_OR_RETURN(stats.accuracy,
                        CatchErrors([&] { return Accuracy(outputs[0], targets.leaf()); }));
  }
  ++step_;
  if (ranks() > 1) {
    // The whole batch's loss and accuracy: each rank's, weighted by its rows.
    const double rows = static_cast<double>(stats.examples);
    const Tensor totals =
        from_vector<double>({stats.loss * rows, stats.accuracy * rows, rows}, {3});
    TC_RETURN_IF_ERROR(options_.group->AllReduceSum({totals}));
    const std::vector<double> sums = totals.to_vector<double>();
    stats = {sums[0] / sums[2], sums[1] / sums[2], static_cast<int64_t>(sums[2])};
  }
  return stats;
}

nn::NamedTensors Trainer::SavedTensors() const {
  nn::NamedTensors tensors = spec_.module->state_dict();
  for (auto& entry : optimizer_->state()) tensors.push_back(std::move(entry));
  return tensors;
}

uint64_t Trainer::SaveBytes() const {
  if (plan_ != nullptr) {
    // A plan of the same step, its header longer by the position at most.
    std::error_code error;
    const uintmax_t size = std::filesystem::file_size(options_.plan, error);
    return (error ? 0 : static_cast<uint64_t>(size)) + 4096;
  }
  // A tensor's header entry (name, dtype, shape, offsets) and the metadata
  // are far below this per tensor.
  constexpr uint64_t kHeaderBytesPerTensor = 512;
  uint64_t bytes = 4096;
  for (const auto& [name, tensor] : SavedTensors()) {
    bytes += static_cast<uint64_t>(tensor.bytes()) + kHeaderBytesPerTensor;
  }
  return bytes;
}

absl::Status Trainer::Save(const std::string& path) const {
  if (rank() != 0) return absl::OkStatus();
  if (plan_ != nullptr) return SavePlan(path);
  return nn::SaveTensors(SavedTensors(), path, Position());
}

absl::Status Trainer::SavePlan(const std::string& path) const {
  return tc::SavePlan(plan_ != nullptr ? plan_->compiled() : train_step_->compiled(), path,
                      Position());
}

nn::Metadata Trainer::Position() const {
  return {
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
      {kPrecisionKey, std::string(PrecisionName(options_.precision))},
  };
}

int64_t Trainer::steps_per_epoch() const { return data_->steps_per_epoch(); }

// The test pass's batch: its batch and inference arena are the process's
// peak beside the training state (batches of 1000 put `train --model mlp`'s
// peak resident set 8 MiB higher, over 100 MiB).
constexpr int64_t kTestBatch = 250;

absl::StatusOr<std::optional<double>> Trainer::TestAccuracy() {
  if (synthetic() || rank() != 0 || plan_ != nullptr) return std::optional<double>();
  if (test_set_ == nullptr && data_->name() == "fashion-mnist") {
    TC_ASSIGN_OR_RETURN(nn::ImageArrays test, nn::LoadFashionMnistArrays(options_.data_dir, false));
    test_set_ = FeaturesAndLabels(std::move(test.images), 255, std::move(test.labels));
  }
  if (test_set_ == nullptr || test_set_->size() == 0) return std::optional<double>();
  spec_.module->eval();
  absl::StatusOr<double> accuracy = CompiledAccuracy(
      *spec_.module, test_set_, spec_.inputs.leaf().shape(), kTestBatch, options_.precision);
  spec_.module->train();
  if (!accuracy.ok()) return accuracy.status();
  return *accuracy;
}

int64_t Trainer::last_batch() const {
  return data_->partial_batch() > 0 ? data_->partial_batch() : batch_;
}

int64_t Trainer::GlobalRows(int64_t step) const {
  const int64_t per_epoch = data_->steps_per_epoch();
  return step % per_epoch == per_epoch - 1 ? last_batch() : batch_;
}

bool Trainer::synthetic() const { return data_->name() == "synthetic"; }

std::string PrecisionLine(Precision precision) {
  if (precision != Precision::kBF16 || !CpuHasBf16()) return "";
  return "precision bf16: matmul, linear and convolutions on bf16 operands, accumulated in f32\n";
}

absl::StatusOr<double> CompiledAccuracy(nn::Module& model, std::shared_ptr<const nn::Dataset> data,
                                        Shape input_shape, int64_t batch, Precision precision) {
  const int64_t examples = data->size();
  input_shape[0] = std::min(batch, examples);
  TC_ASSIGN_OR_RETURN(Function eval, compile(model, TensorTree::MakeLeaf(tc::empty(input_shape)),
                                             {.training = false,
                                              .precision = precision,
                                              .dynamic_dims = {{"arg", {0}}},
                                              .automatic_dynamic = false}));
  nn::DataLoader loader(std::move(data), {.batch_size = input_shape[0], .prefetch = false});
  double correct = 0;
  for (int64_t b = 0; b < loader.batches_per_epoch(); ++b) {
    TC_ASSIGN_OR_RETURN(std::vector<Tensor> fields, loader.Next());
    Shape shape = input_shape;
    shape[0] = fields[0].size(0);
    TC_ASSIGN_OR_RETURN(TensorTree out, eval(TensorTree::MakeLeaf(fields[0].reshape(shape))));
    correct += Accuracy(out.leaf(), fields[1]) * static_cast<double>(shape[0]);
  }
  return correct / static_cast<double>(examples);
}

}  // namespace tc
