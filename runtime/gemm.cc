#include "runtime/gemm.h"

#include <algorithm>
#include <atomic>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "runtime/kernels/gemm_cache.h"
#include "runtime/kernels/gemm_choice.h"
#include "runtime/kernels/openblas.h"

namespace tc {
namespace {

std::atomic<GemmChoice> choice{GemmChoice::kAuto};

// The shapes kAuto has a verdict for, timed or read from the cache file, and
// their winners. One table for the process, so that every thread and every
// call of a shape multiplies alike.
struct TimedShapes {
  absl::Mutex mutex;
  bool cache_read ABSL_GUARDED_BY(mutex) = false;
  std::optional<kernels::GemmCacheFile> cache ABSL_GUARDED_BY(mutex);
  absl::flat_hash_map<kernels::GemmShape, kernels::GemmImpl> winners ABSL_GUARDED_BY(mutex);
  GemmShapesTimed counts ABSL_GUARDED_BY(mutex);
};

TimedShapes& Timed() {
  static TimedShapes* const timed = new TimedShapes;
  return *timed;
}

// The faster of the two on `seconds`: one warm-up run each (oneDNN builds its
// primitive in its first), then the least of three runs each, interleaved.
kernels::GemmImpl TimeBoth(absl::FunctionRef<double(kernels::GemmImpl)> seconds) {
  using kernels::GemmImpl;
  seconds(GemmImpl::kOneDnn);
  seconds(GemmImpl::kOpenBlas);
  double onednn = 1e300, openblas = 1e300;
  for (int round = 0; round < 3; ++round) {
    onednn = std::min(onednn, seconds(GemmImpl::kOneDnn));
    openblas = std::min(openblas, seconds(GemmImpl::kOpenBlas));
  }
  return openblas * kOpenBlasMargin < onednn ? GemmImpl::kOpenBlas : GemmImpl::kOneDnn;
}

}  // namespace

absl::Status SetGemmChoice(GemmChoice c) {
  if (c == GemmChoice::kOpenBlas && kernels::OpenBlas::Get() == nullptr) {
    return absl::FailedPreconditionError(
        "gemm openblas: OpenBLAS is not installed (Debian's libopenblas0-openmp, which "
        "tools/setup.sh installs); auto and onednn run without it");
  }
  choice.store(c);
  return absl::OkStatus();
}

GemmChoice GetGemmChoice() { return choice.load(); }

absl::StatusOr<GemmChoice> ParseGemmChoice(absl::string_view name) {
  for (GemmChoice c : {GemmChoice::kAuto, GemmChoice::kOneDnn, GemmChoice::kOpenBlas}) {
    if (name == GemmChoiceName(c)) return c;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("gemm: expected auto, onednn or openblas, got \"", name, "\""));
}

absl::string_view GemmChoiceName(GemmChoice c) {
  switch (c) {
    case GemmChoice::kAuto:
      return "auto";
    case GemmChoice::kOneDnn:
      return "onednn";
    case GemmChoice::kOpenBlas:
      return "openblas";
  }
  return "";
}

std::string OpenBlasConfig() {
  const kernels::OpenBlas* blas = kernels::OpenBlas::Get();
  return blas != nullptr ? blas->config() : "";
}

GemmShapesTimed GetGemmShapesTimed() {
  TimedShapes& timed = Timed();
  absl::MutexLock lock(&timed.mutex);
  return timed.counts;
}

namespace kernels {

GemmImpl ChooseGemm(const GemmShape& shape, absl::FunctionRef<double(GemmImpl)> seconds) {
  switch (GetGemmChoice()) {
    case GemmChoice::kOneDnn:
      return GemmImpl::kOneDnn;
    case GemmChoice::kOpenBlas:
      return GemmImpl::kOpenBlas;
    case GemmChoice::kAuto:
      break;
  }
  if (shape.batch * shape.m * shape.n * shape.k < kMinTimedMacs) return GemmImpl::kOneDnn;
  TimedShapes& timed = Timed();
  // Held while timing: a second thread meeting the shape waits for the
  // verdict instead of timing it alongside (and against) the first.
  absl::MutexLock lock(&timed.mutex);
  if (!timed.cache_read) {
    timed.cache_read = true;
    timed.cache = GemmCacheFile::ForThisMachine();
    if (timed.cache) {
      timed.winners = timed.cache->Read();
      timed.counts.read = timed.winners.size();
    }
  }
  auto [it, inserted] = timed.winners.try_emplace(shape, GemmImpl::kOneDnn);
  if (inserted) {
    it->second = TimeBoth(seconds);
    ++timed.counts.shapes;
    timed.counts.openblas += it->second == GemmImpl::kOpenBlas;
    if (timed.cache) timed.cache->Append(shape, it->second);
  }
  return it->second;
}

}  // namespace kernels
}  // namespace tc
