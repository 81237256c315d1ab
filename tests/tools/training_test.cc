// The training loop behind `tensorcut train`: N steps, a checkpoint, then a
// resumed run to N+M gives bit for bit the state of N+M steps in one run; and
// the errors for inputs that cannot work; accuracy over the class dim of
// each kind of model.
#include "tools/training.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "nn/checkpoint.h"
#include "runtime/ops.h"
#include "tools/cli.h"

namespace tc {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

TEST_CASE("accuracy reads the classes from dim 1, or from the last dim of a language model") {
  // Rows [N, C]: the argmax of row 0 is 1, of row 1 is 0.
  const Tensor rows = from_vector(std::vector<float>{0.1f, 0.9f, 0.8f, 0.2f}, {2, 2});
  CHECK(Accuracy(rows, from_vector(std::vector<int64_t>{1, 1}, {2})) == 0.5);
  // A segmentation [N, C, H, W] = [1, 2, 1, 2]: class 1 wins at pixel 0,
  // class 0 at pixel 1.
  const Tensor pixels = from_vector(std::vector<float>{0.f, 5.f, 1.f, 0.f}, {1, 2, 1, 2});
  CHECK(Accuracy(pixels, from_vector(std::vector<int64_t>{1, 0}, {1, 1, 2})) == 1.0);
  // A language model [T, N, V] = [1, 2, 3] against labels [T, N]: token 1
  // wins at position 0, token 0 at position 1.
  const Tensor tokens = from_vector(std::vector<float>{0.f, 5.f, 1.f, 1.f, 0.f, 0.f}, {1, 2, 3});
  CHECK(Accuracy(tokens, from_vector(std::vector<int64_t>{1, 1}, {1, 2})) == 0.5);
  REQUIRE_THROWS_WITH(Accuracy(rows, from_vector(std::vector<int64_t>{1, 1, 0}, {3})),
                      "accuracy: labels i64[3] fit no class dim of logits f32[2,2]");
  // [T, N, V] with N == V: either dim could hold the classes.
  REQUIRE_THROWS_WITH(
      Accuracy(from_vector(std::vector<float>(8, 0.f), {2, 2, 2}),
               from_vector(std::vector<int64_t>{0, 0, 0, 0}, {2, 2})),
      "accuracy: labels i64[2,2] fit logits f32[2,2,2] with the classes in dim 1 or in the last "
      "dim");
  REQUIRE_THROWS_WITH(
      Accuracy(from_vector(std::vector<float>{1.f}, {}), from_vector(std::vector<int64_t>{0}, {})),
      "accuracy: labels i64[] fit no class dim of logits f32[]");
}

std::unique_ptr<Trainer> Make(const TrainOptions& options) {
  absl::StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(options);
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  return *std::move(t);
}

// Runs `t` to its last step; the losses of its first and last steps.
std::pair<double, double> RunToEnd(Trainer& t) {
  double first = NAN, last = NAN;
  while (t.step() < t.last_step()) {
    absl::StatusOr<StepStats> stats = t.Step();
    INFO(stats.status().ToString());
    REQUIRE(stats.ok());
    if (std::isnan(first)) first = stats->loss;
    last = stats->loss;
  }
  return {first, last};
}

// REQUIREs the same names and the same bytes.
void RequireSameBits(const nn::NamedTensors& a, const nn::NamedTensors& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    REQUIRE(a[i].first == b[i].first);
    const Tensor x = a[i].second.contiguous(), y = b[i].second.contiguous();
    REQUIRE(x.type() == y.type());
    REQUIRE(std::memcmp(x.raw_data(), y.raw_data(), x.bytes()) == 0);
  }
}

// Parameters, buffers and optimizer state, cloned.
nn::NamedTensors State(const Trainer& t) {
  nn::NamedTensors all = t.spec().module->named_parameters();
  for (auto& e : t.spec().module->named_buffers()) all.push_back(std::move(e));
  for (auto& e : t.optimizer().state()) all.push_back(std::move(e));
  for (auto& e : all) e.second = e.second.clone();
  return all;
}

// N steps and a checkpoint, then a resumed run to N+M, against N+M steps in
// one run.
void RequireResumeIsExact(TrainOptions options, int64_t n, int64_t m) {
  const std::string path = TempPath(options.model + "_resume.safetensors");
  options.steps = n + m;
  std::unique_ptr<Trainer> whole = Make(options);
  const auto [first_loss, last_loss] = RunToEnd(*whole);

  options.steps = n;
  std::unique_ptr<Trainer> part = Make(options);
  RunToEnd(*part);
  const nn::NamedTensors after_n = State(*part);
  REQUIRE(part->Save(path).ok());

  options.steps = n + m;
  options.resume = path;
  std::unique_ptr<Trainer> resumed = Make(options);
  REQUIRE(resumed->step() == n);
  RunToEnd(*resumed);
  REQUIRE(resumed->step() == n + m);
  RequireSameBits(State(*resumed), State(*whole));

  // The M steps did train: the parameters moved and the loss fell.
  REQUIRE(std::memcmp(after_n[0].second.raw_data(),
                      whole->spec().module->named_parameters()[0].second.raw_data(),
                      after_n[0].second.bytes()) != 0);
  REQUIRE(last_loss < first_loss);
}

TEST_CASE("resuming linear (synthetic data, Adam) across an epoch is bit for bit exact") {
  TrainOptions options;
  options.model = "linear";
  options.lr = 0.05;
  RequireResumeIsExact(options, /*n=*/7, /*m=*/8);  // epochs are kSyntheticBatches = 10 steps
}

TEST_CASE("resuming convbn (BatchNorm buffers, SGD, budget partition) is bit for bit exact") {
  TrainOptions options;
  options.model = "convbn";
  options.optimizer = "sgd";
  options.lr = 0.1;
  options.partition = "budget";
  options.budget = 0.5;
  RequireResumeIsExact(options, /*n=*/12, /*m=*/5);
}

TEST_CASE("resuming mlp on Fashion-MNIST mid-epoch is bit for bit exact") {
  TrainOptions options;
  options.model = "mlp";
  options.batch = 32;
  options.optimizer = "adamw";
  RequireResumeIsExact(options, /*n=*/4, /*m=*/4);
}

TEST_CASE("an epoch ends with its partial batch unless drop_last; resuming across it is exact") {
  TrainOptions options;
  options.model = "mlp";
  options.batch = 128;
  std::unique_ptr<Trainer> t = Make(options);
  CHECK(t->steps_per_epoch() == 469);  // 468 batches of 128, then one of 96
  CHECK(t->last_batch() == 96);
  options.drop_last = true;
  t = Make(options);
  CHECK(t->steps_per_epoch() == 468);
  CHECK(t->last_batch() == 128);

  // 60,000 images in batches of 9,000: six, then one of 6,000, which the
  // compiled step trains as any other size; resumed across it, exactly.
  options.drop_last = false;
  options.batch = 9000;
  t = Make(options);
  REQUIRE(t->steps_per_epoch() == 7);
  REQUIRE(t->last_batch() == 6000);
  RequireResumeIsExact(options, /*n=*/6, /*m=*/2);

  // Epochs of 7 steps cannot continue as epochs of 6.
  const std::string path = TempPath("mlp_partial.safetensors");
  REQUIRE(Make(options)->Save(path).ok());
  options.resume = path;
  options.drop_last = true;
  absl::StatusOr<std::unique_ptr<Trainer>> dropped = Trainer::Create(options);
  REQUIRE_FALSE(dropped.ok());
  CHECK(dropped.status().message() ==
        "checkpoint " + path + " was written with --drop-last false, not true");
}

// A plan exported before training, trained N steps from it and saved, then
// M more from that: bit for bit the N+M steps of the model in one run.
void RequirePlanRunIsExact(TrainOptions options, int64_t n, int64_t m) {
  const std::string exported = TempPath(options.model + ".tcplan");
  const std::string trained = TempPath(options.model + "_trained.tcplan");
  options.steps = n + m;
  std::unique_ptr<Trainer> whole = Make(options);
  REQUIRE(whole->SavePlan(exported).ok());
  RunToEnd(*whole);

  TrainOptions from_plan;
  from_plan.plan = exported;
  from_plan.steps = n;
  std::unique_ptr<Trainer> part = Make(from_plan);
  REQUIRE(part->from_plan());
  REQUIRE(part->batch() == whole->batch());
  RunToEnd(*part);
  REQUIRE(part->Save(trained).ok());
  from_plan.plan = trained;
  from_plan.steps = n + m;
  std::unique_ptr<Trainer> resumed = Make(from_plan);
  REQUIRE(resumed->step() == n);
  RunToEnd(*resumed);
  REQUIRE(resumed->Save(trained).ok());

  nn::Metadata metadata;
  const nn::NamedTensors saved = nn::LoadTensors(trained, &metadata).value();
  CHECK(metadata.at("tensorcut.step") == absl::StrCat(n + m));
  nn::NamedTensors in_plan;
  for (const auto& [name, tensor] : State(*whole)) {
    for (const auto& [saved_name, saved_tensor] : saved) {
      if (saved_name == name) in_plan.emplace_back(name, saved_tensor);
    }
  }
  RequireSameBits(in_plan, State(*whole));
}

TEST_CASE("a plan trained by run, saved and run again, ends where the model's run does") {
  TrainOptions options;
  options.model = "convbn";  // BatchNorm buffers, SGD, a budget partition
  options.optimizer = "sgd";
  options.lr = 0.1;
  options.partition = "budget";
  RequirePlanRunIsExact(options, /*n=*/4, /*m=*/3);
  options = {};
  options.model = "mlp_dropout";  // the generator's state, Fashion-MNIST's order
  options.batch = 32;
  RequirePlanRunIsExact(options, /*n=*/3, /*m=*/2);
  options = {};
  options.model = "mlp";  // a symbolic batch: epochs end with 6,000 of 9,000
  options.batch = 9000;
  RequirePlanRunIsExact(options, /*n=*/6, /*m=*/2);
}

TEST_CASE("a plan that is not a run's, or a run a plan cannot do, is refused") {
  TrainOptions options;
  options.plan = TempPath("missing.tcplan");
  absl::StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(options);
  CHECK(t.status().message() ==
        options.plan + ": cannot open checkpoint " + options.plan + ": No such file or directory");
  // A plan a program saved with no run's position.
  std::unique_ptr<Trainer> model = Make({.model = "linear"});
  const std::string bare = TempPath("bare.tcplan");
  REQUIRE(SavePlan(model->train_step().compiled(), bare).ok());
  t = Trainer::Create({.plan = bare});
  CHECK(t.status().message() == "checkpoint " + bare +
                                    " has no \"tensorcut.model\" metadata: it was not written by "
                                    "`tensorcut train`, `export` or `run`");
}

TEST_CASE("after training, the test set's accuracy; synthetic data has none") {
  TrainOptions options;
  options.model = "mlp";
  options.steps = 30;
  std::unique_ptr<Trainer> t = Make(options);
  RunToEnd(*t);
  const absl::StatusOr<std::optional<double>> accuracy = t->TestAccuracy();
  REQUIRE(accuracy.ok());
  REQUIRE(accuracy->has_value());
  CHECK(**accuracy > 0.5);  // ten classes: chance is 0.1
  CHECK(**accuracy <= 1);
  CHECK(t->spec().module->is_training());

  options.model = "linear";
  t = Make(options);
  CHECK_FALSE(t->TestAccuracy().value().has_value());
}

TEST_CASE("resuming mlp_dropout on Fashion-MNIST mid-epoch is bit for bit exact") {
  // The checkpoint holds the generator's state: the resumed run draws the
  // masks the uninterrupted one drew.
  TrainOptions options;
  options.model = "mlp_dropout";
  options.batch = 32;
  options.optimizer = "sgd";
  options.lr = 0.05;
  RequireResumeIsExact(options, /*n=*/4, /*m=*/4);
}

TEST_CASE("a checkpoint's metadata holds the training position") {
  TrainOptions options;
  options.model = "linear";
  options.steps = 13;
  options.seed = 4;
  std::unique_ptr<Trainer> t = Make(options);
  RunToEnd(*t);
  const std::string path = TempPath("position.safetensors");
  REQUIRE(t->Save(path).ok());
  nn::Metadata metadata;
  REQUIRE(nn::LoadTensors(path, &metadata).ok());
  REQUIRE(metadata["tensorcut.model"] == "linear");
  REQUIRE(metadata["tensorcut.optimizer"] == "adam");
  REQUIRE(metadata["tensorcut.step"] == "13");
  REQUIRE(metadata["tensorcut.epoch"] == "1");
  REQUIRE(metadata["tensorcut.seed"] == "4");
  REQUIRE(metadata["tensorcut.batch"] == "4");
  REQUIRE(metadata["tensorcut.data"] == "synthetic");
  // What a run checks is free before it trains covers what a save writes.
  CHECK(std::filesystem::file_size(path) <= t->SaveBytes());
  CHECK(t->SaveBytes() < std::filesystem::file_size(path) + 64 * 1024);
}

std::string CreateError(const TrainOptions& options) {
  absl::StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(options);
  REQUIRE(!t.ok());
  return std::string(t.status().message());
}

TEST_CASE("Trainer::Create names what is wrong") {
  TrainOptions options;
  options.model = "linear";
  options.steps = 3;

  TrainOptions bad = options;
  bad.model = "resnet";
  REQUIRE(CreateError(bad) ==
          "unknown model \"resnet\"; known models: linear, convbn, structured, mlp, mlp_dropout, "
          "cnn, transformer, transformer_dropout; in the zoo: resnet18, vgg11, mobilenetv2, unet, "
          "gpt, lstm");
  bad = options;
  bad.partition = "peak_budget";
  REQUIRE(CreateError(bad) ==
          "--partition peak_budget chooses by compiling candidate steps and is offered by "
          "partition, compare and graph, not train; train takes default, min_cut, budget, "
          "recompute_all, milp");
  bad = options;
  bad.optimizer = "lion";
  REQUIRE(CreateError(bad) == "unknown optimizer \"lion\"; known optimizers: sgd, adam, adamw");
  bad = options;
  bad.partition = "magic";
  REQUIRE(CreateError(bad).find("magic") != std::string::npos);
  bad = options;
  bad.resume = TempPath("missing.safetensors");
  REQUIRE(CreateError(bad) ==
          "cannot open checkpoint " + bad.resume + ": No such file or directory");

  // A checkpoint of linear after 3 steps, resumed as something else.
  const std::string path = TempPath("linear3.safetensors");
  std::unique_ptr<Trainer> t = Make(options);
  RunToEnd(*t);
  REQUIRE(t->Save(path).ok());
  bad = options;
  bad.resume = path;
  bad.model = "convbn";
  REQUIRE(CreateError(bad) ==
          "checkpoint " + path + " was written with --model linear, not convbn");
  bad.model = "linear";
  bad.optimizer = "sgd";
  REQUIRE(CreateError(bad) == "checkpoint " + path + " was written with --optimizer adam, not sgd");
  bad.optimizer = "adam";
  bad.steps = 2;
  REQUIRE(CreateError(bad) == "checkpoint " + path +
                                  " is at step 3, past the last step 2 that --steps/--epochs "
                                  "ask for");

  // A step past int64 (it once became step -1, and a read before the data).
  {
    nn::Metadata metadata;
    const nn::NamedTensors tensors = nn::LoadTensors(path, &metadata).value();
    metadata["tensorcut.step"] = "18446744073709551615";
    const std::string huge = TempPath("linear_huge_step.safetensors");
    REQUIRE(nn::SaveTensors(tensors, huge, metadata).ok());
    bad.resume = huge;
    REQUIRE(CreateError(bad) == "checkpoint " + huge +
                                    ": metadata \"tensorcut.step\" is 18446744073709551615, out of "
                                    "range");
    bad.resume = path;
  }

  // nn::save's checkpoints have no position.
  REQUIRE(nn::save(*t->spec().module, path).ok());
  bad.steps = 5;
  REQUIRE(CreateError(bad) == "checkpoint " + path +
                                  " has no \"tensorcut.model\" metadata: it was not written by "
                                  "`tensorcut train`, `export` or `run`");
}

// A Fashion-MNIST-like folder of `n` images of rows x cols and their labels.
std::string ImageFolder(const std::string& name, uint32_t n, uint32_t rows, uint32_t cols) {
  const std::string dir = TempPath(name);
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& file, std::vector<uint32_t> dims, size_t bytes) {
    std::string b = {0, 0, 8, static_cast<char>(dims.size())};
    for (uint32_t d : dims) {
      for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<char>(d >> s));
    }
    b.append(bytes, '\1');
    std::ofstream(dir + "/" + file, std::ios::binary) << b;
  };
  write("train-images-idx3-ubyte", {n, rows, cols}, size_t{n} * rows * cols);
  write("train-labels-idx1-ubyte", {n}, n);
  return dir;
}

TEST_CASE("images of another size than the model takes are an error, not a crash") {
  TrainOptions options;
  options.model = "mlp";
  options.batch = 4;
  options.steps = 1;
  for (const auto [rows, cols] : {std::pair<uint32_t, uint32_t>{14, 14}, {28, 29}, {56, 56}}) {
    INFO(rows << "x" << cols);
    options.data_dir = ImageFolder(absl::StrCat("images_", rows, "x", cols), 8, rows, cols);
    REQUIRE(CreateError(options) ==
            absl::StrCat("--data ", options.data_dir, ": images are ", rows, "x", cols, " (",
                         rows * cols, " values each); mlp takes 784 values per example (28x28)"));
  }
  options.data_dir = ImageFolder("images_28x28", 8, 28, 28);
  REQUIRE(Make(options) != nullptr);
}

}  // namespace
}  // namespace tc
