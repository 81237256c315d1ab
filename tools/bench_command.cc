// `tensorcut bench`: the model benchmark (bench/model_bench.h) from the
// command line, e.g. `tensorcut bench --model all --threads 2 --json`.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "base/status_macros.h"
#include "bench/model_bench.h"
#include "bench/step_profile_bench.h"
#include "runtime/bf16.h"
#include "tools/flags.h"
#include "tools/subcommands.h"

namespace tc {

namespace {

// Each model's step profile, in f32 and, on a CPU with bf16 instructions, bf16.
absl::Status PrintProfiles(const bench::BenchOptions& options) {
  std::vector<std::string> models = {options.model};
  if (options.model == "all") models = bench::BenchModelNames();
  std::vector<Precision> precisions = {Precision::kF32};
  if (CpuHasBf16()) precisions.push_back(Precision::kBF16);
  for (const std::string& model : models) {
    for (Precision precision : precisions) {
      bench::BenchOptions one = options;
      one.model = model;
      TC_ASSIGN_OR_RETURN(bench::StepProfileResult r, bench::ProfileTrainStep(one, precision));
      std::printf("%s\n", bench::FormatProfile(r).c_str());
    }
  }
  return absl::OkStatus();
}

}  // namespace

int BenchCommand() {
  bench::BenchOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  options.runs = absl::GetFlag(FLAGS_runs);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.seed = absl::GetFlag(FLAGS_seed);
  const absl::Status status =
      absl::GetFlag(FLAGS_profile)
          ? PrintProfiles(options)
          : bench::RunAndPrint(options.model, options, absl::GetFlag(FLAGS_json), stdout);
  if (status.ok()) return 0;
  std::fprintf(stderr, "tensorcut bench: %s\n", std::string(status.message()).c_str());
  return 1;
}

}  // namespace tc
