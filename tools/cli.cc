#include "tools/cli.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/model_bench.h"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "runtime/random.h"

namespace tc {

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

int ExitCode(absl::string_view subcommand, const absl::Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "tensorcut %s: %s\n", std::string(subcommand).c_str(),
               std::string(status.message()).c_str());
  switch (status.code()) {
    case absl::StatusCode::kCancelled:
      return kExitInterrupted;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnimplemented:
      return kExitBadInput;
    default:
      return kExitFailed;
  }
}

namespace {
std::vector<std::string>& GivenFlags() {
  static auto* names = new std::vector<std::string>;  // set once by main()
  return *names;
}
}  // namespace

void SetGivenFlags(std::vector<std::string> names) { GivenFlags() = std::move(names); }

bool FlagGiven(absl::string_view name) {
  const std::vector<std::string>& names = GivenFlags();
  return std::find(names.begin(), names.end(), name) != names.end();
}

double MedianMs(int runs, const std::function<void()>& fn) {
  return bench::TimeCalls(/*warmup=*/1, std::max(1, runs),
                          [&] {
                            fn();
                            return absl::OkStatus();
                          })
      ->median_ms;
}

namespace {

// A "kB" line of /proc/self/status ("VmRSS"), in bytes; -1 when absent.
int64_t StatusBytes(const char* field) {
  std::ifstream status("/proc/self/status");
  const std::string prefix = absl::StrCat(field, ":");
  std::string line;
  while (std::getline(status, line)) {
    int64_t kilobytes = 0;
    if (absl::StartsWith(line, prefix) &&
        std::sscanf(line.c_str() + prefix.size(), "%" SCNd64, &kilobytes) == 1) {
      return kilobytes * 1024;
    }
  }
  return -1;
}

}  // namespace

int64_t ResidentBytes() { return StatusBytes("VmRSS"); }
int64_t PeakResidentBytes() { return StatusBytes("VmHWM"); }

bool ResetPeakResident() {
  // Freed memory goes back to the system first, so that the new peak starts
  // from what is in use.
  ReleaseCachedBuffers();
  malloc_trim(0);
  // 5 resets the peak resident set (the kernel's Documentation/filesystems/proc).
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return clear_refs.good();
}

ProgressBar::ProgressBar(int64_t first_step, int64_t last_step, int64_t items_per_step,
                         int64_t every, const char* rate_unit)
    : first_step_(first_step),
      last_step_(last_step),
      items_per_step_(items_per_step),
      every_(std::max<int64_t>(1, every)),
      rate_unit_(rate_unit),
      terminal_(isatty(fileno(stdout))) {}

void ProgressBar::Update(int64_t step, double loss, double accuracy) {
  ++updates_;
  const double k = updates_ < 20 ? 1.0 / updates_ : 0.05;
  loss_ += k * (loss - loss_);
  accuracy_ += k * (accuracy - accuracy_);
  const double elapsed = Seconds(start_);
  const double items_per_s = updates_ * items_per_step_ / elapsed;
  const double eta = (last_step_ - step) * elapsed / updates_;
  // Fixed width on the bar, so that it does not jitter.
  const std::string acc = std::isnan(accuracy_) ? ""
                          : terminal_           ? absl::StrFormat(" acc %5.1f%%", 100 * accuracy_)
                                                : absl::StrFormat(" acc %.1f%%", 100 * accuracy_);
  if (terminal_) {
    const int width = 30;
    const int filled = static_cast<int>(width * (step - first_step_) /
                                        std::max<int64_t>(1, last_step_ - first_step_));
    std::printf("\r[%s%s] %5lld/%lld loss %.4f%s %6.0f %s ETA %3.0fs",
                std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                static_cast<long long>(step), static_cast<long long>(last_step_), loss_,
                acc.c_str(), items_per_s, rate_unit_, eta);
    if (step == last_step_) std::printf("\n");
  } else if (step % every_ == 0 || step == last_step_) {
    std::printf("step %lld/%lld loss %.4f%s %.0f %s ETA %.0fs\n", static_cast<long long>(step),
                static_cast<long long>(last_step_), loss_, acc.c_str(), items_per_s, rate_unit_,
                eta);
  }
  std::fflush(stdout);
}

std::string OutputPath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");  // set by `bazel run`
  if (cwd == nullptr || path.empty() || path[0] == '/') return path;
  return absl::StrCat(cwd, "/", path);
}

absl::Status WriteTextFile(const std::string& path, absl::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) {
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void Gather(const nn::LabeledImages& data, const std::vector<int64_t>& order, int64_t first,
            const Tensor& x, const Tensor& y) {
  const int64_t n = x.size(0), row = x.numel() / n;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t src = order[first + i];
    std::memcpy(x.data<float>() + i * row, data.images.data<float>() + src * row,
                row * sizeof(float));
    y.data<int64_t>()[i] = data.labels.data<int64_t>()[src];
  }
}

double Accuracy(const Tensor& logits, const Tensor& labels) {
  const auto fits = [&](int64_t dim) {
    Shape shape = logits.shape();
    shape.erase(shape.begin() + dim);
    return labels.shape() == shape;
  };
  const int64_t last = logits.dim() - 1;
  const bool dim_1 = logits.dim() >= 2 && fits(1), last_dim = logits.dim() >= 1 && fits(last);
  if (!dim_1 && !last_dim) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("accuracy: labels ", labels.type().ToString(), " fit no class dim of logits ",
                     logits.type().ToString())));
  }
  if (dim_1 && last_dim && last != 1) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("accuracy: labels ", labels.type().ToString(), " fit logits ",
                     logits.type().ToString(), " with the classes in dim 1 or in the last dim")));
  }
  return mean(cast(eq(argmax(logits, dim_1 ? 1 : last), labels), DType::kF32)).item<float>();
}

}  // namespace tc
