// The training subcommands. `tensorcut train` trains a reference model
// through the compiled pipeline (tools/training.h) with a progress line,
// writing a resumable checkpoint at every epoch's end and at the last step;
// `tensorcut export` compiles the same step and saves it as a plan file
// (pipeline/plan.h); `tensorcut run` trains a plan as train trains a model,
// the plan its own checkpoint.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "dist/process_group.h"
#include "nn/checkpoint.h"
#include "partition/report.h"
#include "runtime/threads.h"
#include "tools/cli.h"
#include "tools/flags.h"
#include "tools/subcommands.h"
#include "tools/training.h"

namespace tc {
namespace {

// The signal that asked training to stop (SIGINT, SIGTERM), or 0: the loop
// saves and returns at the end of the current step.
std::atomic<int> stop_signal{0};

const char* StopReason(int signal) {
  return signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)";
}

// While alive, SIGINT and SIGTERM reach no thread that computes: they are
// blocked in the thread that makes this, and so in every thread it starts
// later (OpenMP's, the data loader's), and one thread of its own waits for
// them. A handler run on a compute thread in the middle of a oneDNN kernel
// has crashed that kernel. Made before anything starts a thread.
//
// Until TrainingStarts(), a signal ends the process at once, saying
// `before_training`: loading a large file or compiling writes nothing and
// could keep a user waiting for minutes. After it, the signal sets
// stop_signal and the loop saves at the end of its step.
class StopOnSignals {
 public:
  StopOnSignals(const char* command, std::string before_training)
      : command_(command), before_training_(std::move(before_training)) {
    stop_signal = 0;
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals_, &previous_);
    waiter_ = std::thread([this] {
      const timespec tick = {0, 50 * 1000 * 1000};  // how soon it sees done_
      while (!done_) {
        const int signal = sigtimedwait(&signals_, nullptr, &tick);
        if (signal <= 0) continue;
        if (!training_) {
          const std::string line = absl::StrCat("tensorcut ", command_, ": ", StopReason(signal),
                                                before_training_, "\n");
          std::fwrite(line.data(), 1, line.size(), stderr);
          std::fflush(stderr);
          std::_Exit(kExitInterrupted);
        }
        stop_signal = signal;
      }
    });
  }
  void TrainingStarts() { training_ = true; }
  ~StopOnSignals() {
    done_ = true;
    waiter_.join();
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  const char* const command_;
  const std::string before_training_;
  sigset_t signals_, previous_;
  std::atomic<bool> done_{false}, training_{false};
  std::thread waiter_;
};

// Training done so far in epochs: 2.50 is halfway through the third.
double Epochs(const Trainer& t) { return static_cast<double>(t.step()) / t.steps_per_epoch(); }

// What compiling the step did: "compiled in 6 ms with min_cut: joint graph
// ...; 8 values (1.80 MB) saved for backward".
void PrintCompiled(const Trainer& t, const std::string& partition) {
  const StepSummary& made = t.train_step().summary();
  std::printf(
      "compiled in %.0f ms with %s%s: joint graph %d nodes -> forward %d + backward %d; "
      "%d values (%.2f MB) saved for backward\n",
      1e3 * t.compile_seconds(), partition.c_str(), made.cached ? " (the cached program)" : "",
      made.joint_nodes, made.forward_nodes, made.backward_nodes, made.saved_values,
      made.saved_bytes / 1e6);
}

// The data flags train, run and export read.
void DataOptions(TrainOptions& options) {
  options.data_dir = absl::GetFlag(FLAGS_data);
  options.label_column = absl::GetFlag(FLAGS_label_column);
  options.features = absl::GetFlag(FLAGS_features);
  options.labels = absl::GetFlag(FLAGS_labels);
  options.test_data = absl::GetFlag(FLAGS_test_data);
}

// The model, its data, optimizer and compiling: the flags train and export
// share.
absl::StatusOr<TrainOptions> ModelOptions() {
  TrainOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  options.onnx = absl::GetFlag(FLAGS_onnx);
  options.loss = absl::GetFlag(FLAGS_loss);
  if (!options.onnx.empty()) {
    if (FlagGiven("model")) {
      return absl::InvalidArgumentError("--model and --onnx: give one model to train, not both");
    }
    // The file's name names the model in the banner and the checkpoints.
    options.model = std::filesystem::path(options.onnx).stem().string();
  } else if (FlagGiven("loss")) {
    return absl::InvalidArgumentError(
        "--loss applies to --onnx models; a reference model (--model) has its own loss");
  }
  options.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_seed));
  DataOptions(options);
  options.batch = absl::GetFlag(FLAGS_batch);
  options.drop_last = absl::GetFlag(FLAGS_drop_last);
  options.optimizer = absl::GetFlag(FLAGS_optimizer);
  if (FlagGiven("lr")) options.lr = absl::GetFlag(FLAGS_lr);
  options.partition = absl::GetFlag(FLAGS_partition);
  TC_ASSIGN_OR_RETURN(options.budget, BudgetFraction());
  TC_ASSIGN_OR_RETURN(options.precision, ParsePrecision(absl::GetFlag(FLAGS_precision)));
  return options;
}

// The plan file --plan names; `what` says what the subcommand does with it.
absl::StatusOr<std::string> PlanPath(absl::string_view what) {
  const std::string plan = absl::GetFlag(FLAGS_plan);
  if (plan.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--plan FILE is required: the plan ", what));
  }
  return OutputPath(plan);
}

// train (a model, `plan` false) or run (a plan file).
absl::Status Run(dist::ProcessGroup& group, bool plan) {
  TrainOptions options;
  if (plan) {
    TC_ASSIGN_OR_RETURN(options.plan, PlanPath("to train (tensorcut export writes one)"));
    DataOptions(options);
    if (FlagGiven("lr")) options.lr = absl::GetFlag(FLAGS_lr);
  } else {
    TC_ASSIGN_OR_RETURN(options, ModelOptions());
    options.sync_batchnorm = absl::GetFlag(FLAGS_sync_batchnorm);
    if (!absl::GetFlag(FLAGS_resume).empty())
      options.resume = OutputPath(absl::GetFlag(FLAGS_resume));
  }
  if (group.size() > 1) options.group = &group;
  options.epochs = absl::GetFlag(FLAGS_epochs);
  options.steps = absl::GetFlag(FLAGS_steps);
  // A plan trains on in place unless told otherwise: it is its own checkpoint.
  const std::string flag = absl::GetFlag(FLAGS_checkpoint);
  const std::string checkpoint =
      !flag.empty() ? OutputPath(flag)
      : plan        ? options.plan
                    : OutputPath(absl::StrCat("tensorcut_", options.model, ".safetensors"));
  const int save_every = absl::GetFlag(FLAGS_save_every);
  if (save_every < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--save-every must be 0 or more steps, got ", save_every));
  }
  // Checked before anything is trained: a run must not be lost at its end.
  // Rank 0 writes the checkpoints.
  if (absl::Status s = group.rank() == 0 ? nn::CheckWritable(checkpoint) : absl::OkStatus();
      !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--checkpoint ", checkpoint, ": ", s.message()));
  }
  const char* command = plan ? "run" : "train";
  // How a user goes on from the checkpoint.
  const std::string continues =
      absl::StrCat(plan ? "tensorcut run --plan " : "--resume ", checkpoint, " continues");
  StopOnSignals stop_on_signals(command, absl::StrCat(" before the first step: nothing saved (",
                                                      checkpoint, " is as it was)"));

  TC_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(options));
  Trainer& t = *trainer;
  // Rank 0 saves; a checkpoint that cannot fit must not end a run.
  if (absl::Status s = group.rank() == 0 ? CheckFreeSpace(checkpoint, t.SaveBytes(), "checkpoint")
                                         : absl::OkStatus();
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("--checkpoint ", checkpoint, ": ", s.message()));
  }
  if (t.synthetic()) {
    for (const char* name : {"batch", "data", "drop_last"}) {
      if (FlagGiven(name)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", name, " applies to the models trained on Fashion-MNIST (mlp, mlp_dropout); ",
            options.model, " trains on synthetic batches of its example inputs' size"));
      }
    }
  }
  std::printf("tensorcut %s: %s (%s)\n", command, t.spec().name.c_str(),
              t.spec().description.c_str());
  const std::string last =
      t.last_batch() == t.batch() ? "" : absl::StrCat(" (the last of ", t.last_batch(), ")");
  std::printf("data: %s, %lld steps per epoch of %lld%s; %s lr %g\n", t.data_description().c_str(),
              static_cast<long long>(t.steps_per_epoch()), static_cast<long long>(t.batch()),
              last.c_str(), options.optimizer.c_str(), t.lr());
  if (plan) {
    std::printf("loaded at step %lld and compiled for this CPU in %.0f ms\n",
                static_cast<long long>(t.step()), 1e3 * t.compile_seconds());
  } else {
    PrintCompiled(t, options.partition);
  }
  std::printf("%s", PrecisionLine(options.precision).c_str());
  if (group.size() > 1) {
    std::printf(
        "data parallel: %d ranks, each %lld examples of a batch of %lld and %d thread%s%s\n",
        group.size(), static_cast<long long>(t.batch() / group.size()),
        static_cast<long long>(t.batch()), NumThreads(), NumThreads() == 1 ? "" : "s",
        options.sync_batchnorm ? "; BatchNorm over every rank's batch" : "");
  }
  if (plan && options.lr.has_value() && t.checkpoint_lr() != options.lr) {
    std::printf("--lr %g replaces the plan's learning rate %g\n", *options.lr,
                t.checkpoint_lr().value_or(0));
  }
  if (!options.resume.empty()) {
    std::printf("resumed from %s at step %lld (epoch %.2f)\n", options.resume.c_str(),
                static_cast<long long>(t.step()), Epochs(t));
    if (options.lr.has_value() && t.checkpoint_lr() != options.lr) {
      std::printf("--lr %g replaces the checkpoint's learning rate %g\n", *options.lr,
                  t.checkpoint_lr().value_or(0));
    }
    if (t.checkpoint_precision().has_value() && t.checkpoint_precision() != options.precision) {
      const std::string now(PrecisionName(options.precision));
      const std::string before(PrecisionName(*t.checkpoint_precision()));
      if (FlagGiven("precision")) {
        std::printf("--precision %s replaces the checkpoint's %s\n", now.c_str(), before.c_str());
      } else {
        std::printf("training in %s; the checkpoint was trained in %s (--precision %s keeps it)\n",
                    now.c_str(), before.c_str(), before.c_str());
      }
    }
  }

  const int64_t every = std::min<int64_t>(100, t.steps_per_epoch());
  ProgressBar progress(t.step(), t.last_step(), t.batch(), every,
                       t.synthetic() ? "examples/s" : "img/s");
  const Clock::time_point start = Clock::now();
  int64_t examples = 0;
  int64_t saved_step = -1;  // the step of the last checkpoint this run wrote
  stop_on_signals.TrainingStarts();
  while (t.step() < t.last_step() && stop_signal == 0) {
    absl::StatusOr<StepStats> stepped = t.Step();
    if (absl::IsDeadlineExceeded(stepped.status()) && t.rank() == 0 && t.step() != saved_step &&
        t.step() != t.first_step()) {
      // Another rank stopped answering. A step that fails leaves the
      // parameters and the optimizer as the last step every rank finished
      // left them (a BatchNorm's running statistics may hold the failed
      // step's batch too): that step is saved before the job ends.
      const absl::Status saved = t.Save(checkpoint);
      return absl::Status(
          stepped.status().code(),
          absl::StrCat(stepped.status().message(), "; ",
                       saved.ok() ? absl::StrCat("checkpoint ", checkpoint, " saved at step ",
                                                 t.step(), "; ", continues)
                                  : absl::StrCat("saving failed: ", saved.message())));
    }
    TC_ASSIGN_OR_RETURN(StepStats stats, std::move(stepped));
    examples += stats.examples;
    if (!std::isfinite(stats.loss)) {
      // The update it made is not saved: the last checkpoint stays as it was.
      return absl::AbortedError(absl::StrCat(
          "step ", t.step(), ": the loss is ", stats.loss, "; training stopped without saving (",
          saved_step >= 0 ? absl::StrCat(checkpoint, " holds step ", saved_step)
                          : absl::StrCat(checkpoint, " is as it was before this run"),
          ")"));
    }
    progress.Update(t.step(), stats.loss, stats.accuracy);
    if (t.step() % t.steps_per_epoch() == 0 || t.step() == t.last_step() ||
        (save_every > 0 && t.step() % save_every == 0)) {
      TC_RETURN_IF_ERROR(t.Save(checkpoint));
      saved_step = t.step();
    }
  }
  if (stop_signal != 0) {
    const char* why = StopReason(stop_signal);
    // Only progress this run made is saved: stopped before its first step
    // ended, it leaves an earlier checkpoint as it was.
    if (t.step() == t.first_step()) {
      return absl::CancelledError(absl::StrCat(why, " before the first step: nothing saved (",
                                               checkpoint, " is as it was)"));
    }
    if (saved_step != t.step()) TC_RETURN_IF_ERROR(t.Save(checkpoint));
    return absl::CancelledError(absl::StrCat(why, " at step ", t.step(), ": checkpoint ",
                                             checkpoint, " saved; ", continues));
  }
  const int64_t steps = t.step() - t.first_step();
  if (steps == 0) {
    std::printf("nothing to train: already at step %lld\n", static_cast<long long>(t.step()));
    return absl::OkStatus();
  }
  const double seconds = Seconds(start);
  std::printf("trained %lld steps in %.1fs (%.0f %s)\n", static_cast<long long>(steps), seconds,
              examples / seconds, t.synthetic() ? "examples/s" : "img/s");
  TC_ASSIGN_OR_RETURN(const std::optional<double> accuracy, t.TestAccuracy());
  if (accuracy) {
    std::printf("test accuracy %.2f%% on %s test set\n", 100 * *accuracy,
                t.data_description() == "Fashion-MNIST" ? "Fashion-MNIST's" : "the data's");
  }
  std::printf("checkpoint: %s (step %lld, epoch %.2f)\n", checkpoint.c_str(),
              static_cast<long long>(t.step()), Epochs(t));
  return absl::OkStatus();
}

}  // namespace

// Under mpirun, one rank of a data-parallel job: rank 0 prints the
// progress and writes the checkpoints; each rank runs one intra-op thread
// unless --threads says otherwise. A rank's error names it, and ends the job.
int TrainCommand() {
  const double timeout = absl::GetFlag(FLAGS_collective_timeout);
  if (!(timeout > 0 && timeout <= 1e6)) {
    return ExitCode(
        "train", absl::InvalidArgumentError(absl::StrCat(
                     "--collective_timeout must be seconds above 0 (up to 1e6), got ", timeout)));
  }
  absl::StatusOr<dist::ProcessGroup*> group =
      dist::ProcessGroup::World({.timeout = absl::Seconds(timeout)});
  if (!group.ok()) return ExitCode("train", group.status());
  if ((*group)->size() == 1) return ExitCode("train", Run(**group, /*plan=*/false));
  if (!FlagGiven("threads")) SetNumThreads(1);
  if ((*group)->rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) {
    return ExitCode("train", absl::InternalError("cannot silence stdout on ranks other than 0"));
  }
  const absl::Status s = Run(**group, /*plan=*/false);
  if (s.ok()) return 0;
  (*group)->Leave();
  return ExitCode(absl::StrCat("train (", (*group)->Describe(), ")"), s);
}

int RunCommand() {
  absl::StatusOr<dist::ProcessGroup*> group = dist::ProcessGroup::World();
  if (!group.ok()) return ExitCode("run", group.status());
  return ExitCode("run", Run(**group, /*plan=*/true));
}

namespace {

absl::Status Export() {
  TC_ASSIGN_OR_RETURN(TrainOptions options, ModelOptions());
  TC_ASSIGN_OR_RETURN(const std::string path, PlanPath("to write"));
  if (absl::Status s = nn::CheckWritable(path); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--plan ", path, ": ", s.message()));
  }
  TC_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(options));
  const Trainer& t = *trainer;
  std::printf("tensorcut export: %s (%s)\n", t.spec().name.c_str(), t.spec().description.c_str());
  std::printf("data: %s, batches of %lld; %s lr %g\n", t.data_description().c_str(),
              static_cast<long long>(t.batch()), options.optimizer.c_str(), t.lr());
  PrintCompiled(t, options.partition);
  std::printf("%s", PrecisionLine(options.precision).c_str());
  TC_RETURN_IF_ERROR(t.SavePlan(path));
  std::error_code error;
  const uintmax_t bytes = std::filesystem::file_size(path, error);
  std::printf("plan: %s (%.2f MB); tensorcut run --plan %s trains it\n", path.c_str(),
              error ? 0.0 : static_cast<double>(bytes) / 1e6, path.c_str());
  return absl::OkStatus();
}

}  // namespace

int ExportCommand() { return ExitCode("export", Export()); }

}  // namespace tc
