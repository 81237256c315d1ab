// `tensorcut bench`: the model benchmark (bench/model_bench.h) from the
// command line, e.g. `tensorcut bench --model all --threads 2 --json`.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "bench/model_bench.h"
#include "tools/flags.h"
#include "tools/subcommands.h"

namespace tc {

int BenchCommand() {
  bench::BenchOptions options;
  options.runs = absl::GetFlag(FLAGS_runs);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.seed = absl::GetFlag(FLAGS_seed);
  const absl::Status status =
      bench::RunAndPrint(absl::GetFlag(FLAGS_model), options, absl::GetFlag(FLAGS_json), stdout);
  if (status.ok()) return 0;
  std::fprintf(stderr, "tensorcut bench: %s\n", std::string(status.message()).c_str());
  return 1;
}

}  // namespace tc
