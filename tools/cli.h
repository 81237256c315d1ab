// Helpers the `tensorcut` subcommands share: wall-clock timing, resident
// memory, a training progress line, output paths and files, and batches
// gathered from a dataset.
//
//   ProgressBar bar(/*first_step=*/0, /*last_step=*/600, /*items_per_step=*/100, /*every=*/100);
//   for (int64_t step = 1; step <= 600; ++step) bar.Update(step, loss, accuracy);
//   // on a terminal: one bar, redrawn; otherwise a line every 100 steps:
//   //   step 100/600 loss 0.4673 acc 83.5% 1889 img/s ETA 26s
//   double ms = MedianMs(5, [&] { step_fn(); });
//   ResetPeakResident();
//   const int64_t before = ResidentBytes();
//   step_fn();
//   const int64_t growth = PeakResidentBytes() - before;  // what the step added at its peak
#ifndef TENSORCUT_TOOLS_CLI_H_
#define TENSORCUT_TOOLS_CLI_H_

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nn/data/idx.h"
#include "runtime/tensor.h"

namespace tc {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since);

// The program's exit codes besides 0 (the README lists them).
inline constexpr int kExitFailed = 1;         // anything else that went wrong
inline constexpr int kExitBadInput = 2;       // a flag, a file, a model or data refused
inline constexpr int kExitInterrupted = 130;  // SIGINT or SIGTERM stopped training

// `text` as a terminal can show it: valid UTF-8 and line breaks and tabs
// as they are, every other control byte and every byte of an invalid UTF-8
// sequence as \xNN (a NUL from a UTF-16 file's name or contents, an escape
// sequence). What messages that quote a user's input are printed through.
std::string Printable(absl::string_view text);

// A subcommand's exit code: 0 for OK; otherwise prints
// "tensorcut <subcommand>: <message>" (Printable) to stderr and returns the code of the
// status: Cancelled (an interrupt) kExitInterrupted; InvalidArgument,
// NotFound, OutOfRange, AlreadyExists, PermissionDenied, FailedPrecondition
// and Unimplemented kExitBadInput; the rest kExitFailed.
int ExitCode(absl::string_view subcommand, const absl::Status& status);

// The flags given on the command line, by name ("batch"), as main() found
// them: what a subcommand checks when a flag does not apply to its input.
void SetGivenFlags(std::vector<std::string> names);
bool FlagGiven(absl::string_view name);

// The median wall time of `fn` in milliseconds over `runs` runs (at least
// one), after one untimed warm-up run (oneDNN primitive creation, allocations).
double MedianMs(int runs, const std::function<void()>& fn);

// The process's resident set (Linux's VmRSS), and its peak (VmHWM) since
// the process began or since the last ResetPeakResident(), in bytes; -1
// where /proc does not say.
int64_t ResidentBytes();
int64_t PeakResidentBytes();
// Returns freed memory (runtime/tensor.h's cached buffers, the heap's free
// pages) to the system and starts the peak anew from the resident set that
// is left; false where the kernel refuses (the peak then stays the
// process's).
bool ResetPeakResident();

// Training progress: a bar redrawn in place on a terminal, otherwise (and
// under mpirun) a plain line every `every` steps and at the last (logs, CI). Loss and accuracy are
// running averages: the plain mean over the first 20 updates, then an
// exponential average with weight 0.05.
class ProgressBar {
 public:
  // Steps first_step+1 .. last_step, `items_per_step` examples each; the
  // rate is shown as "<n> <rate_unit>".
  ProgressBar(int64_t first_step, int64_t last_step, int64_t items_per_step, int64_t every,
              const char* rate_unit = "img/s");

  // `accuracy` NaN: the model has no accuracy (no class labels).
  void Update(int64_t step, double loss, double accuracy = NAN);

 private:
  int64_t first_step_, last_step_, items_per_step_, every_;
  const char* rate_unit_;
  bool terminal_;
  Clock::time_point start_ = Clock::now();
  int updates_ = 0;
  double loss_ = 0, accuracy_ = 0;
};

// `path` as the user meant it: relative paths are relative to the folder
// `bazel run` was started in (BUILD_WORKING_DIRECTORY), not the runfiles.
std::string OutputPath(const std::string& path);

// Writes `text` to `path`, replacing the file (pass paths through OutputPath).
absl::Status WriteTextFile(const std::string& path, absl::string_view text);

// Copies examples order[first .. first + x.size(0)) of `data` into `x` (f32,
// one example per row: [n, 784] or [n, 1, 28, 28]) and their labels into `y`.
void Gather(const nn::LabeledImages& data, const std::vector<int64_t>& order, int64_t first,
            const Tensor& x, const Tensor& y);

// The fraction of positions whose argmax over the class dim of `logits` is
// the label there. The class dim is the one whose removal leaves the
// labels' shape: dim 1 ([N, C] rows, a segmentation's [N, C, H, W]) or the
// last (a language model's [..., vocab]). InvalidArgument (as tc::Error)
// when neither fits, or both do and differ ([B, T, V] with T == V).
double Accuracy(const Tensor& logits, const Tensor& labels);

}  // namespace tc

#endif  // TENSORCUT_TOOLS_CLI_H_
