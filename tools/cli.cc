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

namespace {

// The length of the valid UTF-8 sequence that starts `text`, or 0.
size_t Utf8SequenceLength(absl::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  size_t n = 0;
  uint32_t code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2, code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3, code = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4, code = lead & 0x07;
  } else {
    return 0;
  }
  if (text.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    code = code << 6 | (byte(i) & 0x3F);
  }
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
  const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < least[n] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return 0;
  return n;
}

}  // namespace

std::string Printable(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7F)) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (const size_t n = c >= 0x80 ? Utf8SequenceLength(text.substr(i)) : 0; n > 0) {
      out.append(text.data() + i, n);
      i += n;
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
      ++i;
    }
  }
  return out;
}

int ExitCode(absl::string_view subcommand, const absl::Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "tensorcut %s: %s\n", std::string(subcommand).c_str(),
               Printable(status.message()).c_str());
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
      // Open MPI gives each rank a pseudo-terminal for its output, also
      // when mpirun's own goes to a file: under mpirun, whole lines.
      terminal_(isatty(fileno(stdout)) && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr) {}

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
