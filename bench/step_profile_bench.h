// A compiled training step's time by lowered step (codegen/step_profile.h),
// so that the gap to the matmul rate shows without an external profiler:
// `tensorcut bench --profile` prints it per model and precision.
//
//   absl::StatusOr<bench::StepProfileResult> r =
//       bench::ProfileTrainStep({.model = "transformer", .runs = 20}, Precision::kF32);
//   std::printf("%s", bench::FormatProfile(*r).c_str());
#ifndef TENSORCUT_BENCH_STEP_PROFILE_BENCH_H_
#define TENSORCUT_BENCH_STEP_PROFILE_BENCH_H_

#include <string>

#include "absl/status/statusor.h"
#include "bench/model_bench.h"
#include "codegen/autocast.h"
#include "codegen/step_profile.h"

namespace tc::bench {

struct StepProfileResult {
  std::string model;
  Precision precision = Precision::kF32;
  int threads = 0;
  int runs = 0;
  double step_ms = 0;            // wall time per step, the optimizer's update included
  codegen::StepProfile profile;  // summed over `runs` steps
};

// Times options.runs steps of options.model's compiled TrainStep (after
// options.warmup) with every program step timed.
absl::StatusOr<StepProfileResult> ProfileTrainStep(const BenchOptions& options,
                                                   Precision precision);

// The groups' and the costliest steps' milliseconds per training step and
// their share of it; what ran outside the programs (the optimizer's update)
// is the rest.
std::string FormatProfile(const StepProfileResult& result);

}  // namespace tc::bench

#endif  // TENSORCUT_BENCH_STEP_PROFILE_BENCH_H_
