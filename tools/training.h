// Compiling a reference model (nn/models/models.h) for training, and the
// resumable training loop behind `tensorcut train`, as a library so that tests
// can run it.
//
//   TrainOptions options;
//   options.model = "linear";
//   options.steps = 20;
//   std::unique_ptr<Trainer> t = Trainer::Create(options).value();
//   while (t->step() < t->last_step()) t->Step().value();
//   t->Save("linear.safetensors").IgnoreError();
//
//   options.steps = 50;                        // later, maybe in another process:
//   options.resume = "linear.safetensors";     // continues at step 21; after step 50
//   t = Trainer::Create(options).value();      // the parameters are bit for bit those
//   while (t->step() < t->last_step()) ...     // of 50 steps in one run
//
// The batches are a pure function of (seed, step), so a resumed run sees
// exactly the batches the uninterrupted run would have:
//  - Fashion-MNIST, for a model whose input is one f32 tensor of 784 values per
//    example with i64 class labels (mlp): `batch` images per step, flattened
//    to the model's input shape, in an order shuffled per epoch from (seed,
//    epoch);
//  - otherwise synthetic data: an epoch of kSyntheticBatches batches shaped
//    like the model's example inputs and targets, batch i's floating tensors
//    drawn from a Generator seeded by (seed, i) (integer targets stay the
//    example's).
#ifndef TENSORCUT_TOOLS_TRAINING_H_
#define TENSORCUT_TOOLS_TRAINING_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dist/data_parallel.h"
#include "dist/process_group.h"
#include "graph/decompositions.h"
#include "nn/checkpoint.h"
#include "nn/data/data_loader.h"
#include "nn/data/idx.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "partition/milp.h"
#include "partition/partition.h"
#include "pipeline/compiler_pipeline.h"
#include "pipeline/peak_budget.h"
#include "pipeline/plan.h"
#include "pipeline/train_step.h"

namespace tc {

// The capture of `module` on `inputs` and its joint graph, by default with the
// default decompositions: where every partition strategy starts, and what
// the partition reports describe. Training passes nullptr: the kernels of
// linear, softmax and the normalisations run faster than their decompositions.
// `capture` may make dims symbolic (training with a partial last batch);
// `precision` kBF16 places the casts of mixed precision in the joint graph.
absl::StatusOr<CompilerPipeline> JointPipeline(
    nn::Module& module, const TensorTree& inputs,
    const DecompositionTable* decompositions = &DefaultDecompositions(),
    const CaptureOptions& capture = {}, Precision precision = Precision::kF32);

// The partition strategies of the subcommands that hold a model's pipeline
// (partition, compare, graph): PartitionerByName's, then "peak_budget"
// (pipeline/peak_budget.h, choosing with the fusing compiler). milp stops
// after `milp_seconds`; each call stores milp's solve in `*solve`, and
// peak_budget's choice in `*choice`, when given. InvalidArgument naming the
// known strategies, or for a budget outside [0, 1]. The PartitionFn refers
// to `pipeline`, `*solve` and `*choice`: they must outlive it.
std::vector<std::string> PipelineStrategyNames();
// Whether the strategy reads a budget: budget, milp and peak_budget.
bool IsBudgetedStrategy(absl::string_view name);
absl::StatusOr<partition::PartitionFn> PipelinePartitioner(absl::string_view name, double budget,
                                                           const CompilerPipeline& pipeline,
                                                           double milp_seconds = 10,
                                                           partition::MilpSolve* solve = nullptr,
                                                           PeakBudgetChoice* choice = nullptr);

// "sgd" (plain SGD), "adam" or "adamw" over `params`; InvalidArgument
// naming the known ones otherwise.
absl::StatusOr<std::unique_ptr<nn::Optimizer>> MakeOptimizer(absl::string_view name,
                                                             nn::ParamList params, double lr);

inline constexpr int64_t kSyntheticBatches = 10;

class TrainingData;  // the batches of a run (training.cc)

struct TrainOptions {
  std::string model = "mlp";
  // An ONNX model file trained instead of `model` (tools/imported_model.h),
  // with `loss` over its outputs; `model` names its checkpoints.
  std::string onnx;
  std::string loss = "cross_entropy";
  // A plan file (tensorcut export, or a checkpoint of run) trained instead
  // of a model: its model, optimizer, seed, batch, precision and position are
  // the plan's, its data the model's unless data_dir is a data file.
  std::string plan;
  uint64_t seed = 0;  // parameters, synthetic data, data order
  // A folder of Fashion-MNIST IDX files, or a file of the user's data for the
  // mlp models: FILE.csv (its label_column), FILE.npz or FILE.safetensors
  // (arrays `features` and `labels`, a test split in `<features>_test` and
  // `<labels>_test`).
  std::string data_dir = nn::kFashionMnistDir;
  std::string label_column = "label";
  std::string features = "x", labels = "y";
  std::string test_data;   // a CSV of the same columns: the test split
  int64_t batch = 100;     // Fashion-MNIST only; synthetic data keeps the example batch
  bool drop_last = false;  // skip each epoch's last batch when it is smaller
  int64_t epochs = 1;
  int64_t steps = 0;  // the step to stop at, from the start of training; 0: after `epochs`
  std::string optimizer = "adam";
  // Unset: 2e-3 afresh, and the checkpoint's own when resumed.
  std::optional<double> lr;
  std::string partition = "min_cut";  // partition::PartitionerByName
  double budget = 0.5;                // for partition "budget"
  std::string resume;                 // a checkpoint Save() wrote; empty: start afresh
  // kBF16: the step's and the test pass's products in bf16 mixed precision
  // (codegen/autocast.h).
  Precision precision = Precision::kF32;
  // Data parallelism (dist/): every rank of the group starts from rank 0's
  // parameters, takes its share of each global batch of `batch` (the same
  // training at any number of ranks), and averages the gradients with the
  // others before each update. nullptr: this process alone.
  dist::ProcessGroup* group = nullptr;
  // With a group: BatchNorm normalises by every rank's batch together
  // (nn::ConvertSyncBatchNorm); false: by each rank's own.
  bool sync_batchnorm = false;
};

// Over the step's whole batch: with a group, every rank's share.
struct StepStats {
  double loss = 0;
  double accuracy = 0;   // NaN unless the model classifies (i64 class-label targets)
  int64_t examples = 0;  // in the step's batch
};

class Trainer {
 public:
  // Builds the model, its data and its compiled training step, and with
  // options.resume loads the checkpoint: an error names an unknown model,
  // strategy or optimizer, a missing or unreadable checkpoint, and one written
  // for another model, optimizer, seed or batch.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const TrainOptions& options);

  // One step: the compiled forward and backward (the loss and the
  // model's outputs from one forward), then the optimizer's update.
  absl::StatusOr<StepStats> Step();

  // Atomically (nn::SaveTensors) writes the parameters, buffers, optimizer
  // state and, as metadata, the position: model, optimizer, step, epoch,
  // seed, batch, data and the default generator's offset. With a group,
  // rank 0 writes and the others return at once. Trained from a plan, it
  // writes SavePlan's file.
  absl::Status Save(const std::string& path) const;
  // The compiled step as a plan file (pipeline/plan.h) with the position in
  // its header: what `tensorcut run` trains on from there.
  absl::Status SavePlan(const std::string& path) const;
  // At least the bytes Save writes (its tensors and a bound on its header):
  // what a run checks the checkpoint's folder has free before it trains.
  uint64_t SaveBytes() const;

  int64_t step() const { return step_; }              // steps done, from the start of training
  int64_t first_step() const { return first_step_; }  // step() when created
  int64_t last_step() const { return last_step_; }
  int64_t steps_per_epoch() const;
  int64_t batch() const { return batch_; }
  // The size of each epoch's last batch: batch() unless it is partial.
  int64_t last_batch() const;
  bool synthetic() const;
  // This process's rank in options.group and their number (0 and 1 without one).
  int rank() const { return options_.group != nullptr ? options_.group->rank() : 0; }
  int ranks() const { return options_.group != nullptr ? options_.group->size() : 1; }
  // "Fashion-MNIST", "data.csv (4 features, 3 classes)", or the synthetic batches.
  const std::string& data_description() const { return data_description_; }
  // The accuracy on the data's test set (Fashion-MNIST's 10,000 images, or
  // the user data's test split), through a compiled inference function in
  // eval mode (BatchNorm on its running statistics); nullopt for synthetic
  // data, data without a test split, and on ranks other than 0. The module is back in training mode
  // after.
  absl::StatusOr<std::optional<double>> TestAccuracy();
  double compile_seconds() const { return compile_seconds_; }
  // The compiled step the trainer runs: its partition's report, its joint
  // graph's size, what a plan file saves (pipeline/plan.h).
  const TrainStep& train_step() const { return *train_step_; }
  double lr() const { return optimizer().lr(); }
  // The learning rate the resumed checkpoint was trained with; unset afresh.
  std::optional<double> checkpoint_lr() const { return checkpoint_lr_; }
  // The precision the resumed checkpoint was trained in; unset afresh and for
  // checkpoints from before it was saved.
  std::optional<Precision> checkpoint_precision() const { return checkpoint_precision_; }
  const nn::ModelSpec& spec() const { return spec_; }
  nn::Optimizer& optimizer() const { return plan_ != nullptr ? plan_->optimizer() : *optimizer_; }
  // Whether the step was loaded from options.plan; then there is no
  // train_step(), and no module.
  bool from_plan() const { return plan_ != nullptr; }

  ~Trainer();

 private:
  Trainer() = default;
  // The steps of Create: the checkpoint's model, optimizer and seed against
  // the options, its optimizer's step count against its step; the data source (and batch_); the
  // capture, partition and compiled step; the checkpoint's tensors, step and generator.
  static absl::StatusOr<std::unique_ptr<Trainer>> CreateFromPlan(const TrainOptions& options);
  absl::Status CheckResumable(const nn::NamedTensors& saved, const nn::Metadata& metadata,
                              const std::string& path);
  absl::Status MakeData();
  absl::Status Compile(const partition::PartitionFn& partition_fn);
  absl::Status Restore(const nn::Metadata& metadata);
  // The step, the generator and --lr from a checkpoint's or plan's metadata.
  absl::Status RestorePosition(const nn::Metadata& metadata, const std::string& path);
  nn::Metadata Position() const;  // what Save and SavePlan write as metadata
  // What Save writes: the module's state, then the optimizer's.
  nn::NamedTensors SavedTensors() const;
  // The rows of step `step`'s whole batch, over every rank.
  int64_t GlobalRows(int64_t step) const;

  TrainOptions options_;
  nn::ModelSpec spec_;
  std::unique_ptr<TrainingData> data_;
  std::string data_description_;
  // The user's data or Fashion-MNIST as stored, and the test split (null
  // when there is none).
  std::shared_ptr<const nn::Dataset> train_set_, test_set_;
  int64_t batch_ = 0;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<TrainStep> train_step_;
  std::unique_ptr<LoadedStep> plan_;  // options.plan's, instead of train_step_
  // With a group: the gradients' average over the ranks, in the compiled
  // backward (dist/data_parallel.h).
  std::shared_ptr<dist::BackwardAllReduce> all_reduce_;
  double compile_seconds_ = 0;
  std::optional<double> checkpoint_lr_;
  std::optional<Precision> checkpoint_precision_;
  int64_t step_ = 0, first_step_ = 0, last_step_ = 0;
};

// What `demo` and `train` print under --precision bf16 where bf16 runs
// ("precision bf16: ...\n"); empty for f32 and on a CPU without bf16
// instructions (codegen::WithPrecision reports that itself).
std::string PrecisionLine(Precision precision);

// The fraction of `data`'s examples (inputs, class labels) `model`
// classifies right, through one compiled inference function (the batch dim
// a symbol) over batches of `batch`, the last one smaller. `input_shape` is
// the model's input at any batch size; the caller sets the module's mode
// (eval, for BatchNorm's running statistics).
absl::StatusOr<double> CompiledAccuracy(nn::Module& model, std::shared_ptr<const nn::Dataset> data,
                                        Shape input_shape, int64_t batch,
                                        Precision precision = Precision::kF32);

}  // namespace tc

#endif  // TENSORCUT_TOOLS_TRAINING_H_
