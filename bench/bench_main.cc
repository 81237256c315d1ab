// The model benchmark (bench/model_bench.h) as a program:
//
//   bazel run -c opt --config=opt //bench:bench -- --model mlp --threads 2
//   bazel run -c opt --config=opt //bench:bench -- --model all --json
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "bench/model_bench.h"
#include "codegen/interpreter.h"
#include "runtime/error.h"

ABSL_FLAG(std::string, model, "mlp", "linear, mlp, cnn, transformer, or all");
ABSL_FLAG(int, runs, 30, "timed runs per measurement; the median is reported");
ABSL_FLAG(int, threads, 0, "OpenMP threads for oneDNN and the kernels; 0: OpenMP's default");
ABSL_FLAG(bool, json, false, "print one JSON object per model instead of the table");
ABSL_FLAG(bool, decompose, false, "apply the default decompositions before compiling");
ABSL_FLAG(bool, freeze, true,
          "compiled inference reads its weights once, when compiled (codegen/freeze.h)");
ABSL_FLAG(std::string, compiler, "fusing",
          "the function and inference columns' compiler: fusing or interpreter");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "bench --model NAME [--runs N] [--threads T] [--json] [--decompose] [--nofreeze] "
      "[--compiler fusing|interpreter]");
  absl::ParseCommandLine(argc, argv);
  tc::bench::BenchOptions options;
  options.runs = absl::GetFlag(FLAGS_runs);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.freeze = absl::GetFlag(FLAGS_freeze);
  if (absl::GetFlag(FLAGS_decompose)) options.decompositions = &tc::DefaultDecompositions();
  const std::string compiler = absl::GetFlag(FLAGS_compiler);
  if (compiler == "interpreter") {
    options.compiler = tc::codegen::interpreter();
  } else if (compiler != "fusing") {
    std::fprintf(stderr, "bench: --compiler must be fusing or interpreter, got '%s'\n",
                 compiler.c_str());
    return 2;
  }
  try {
    const absl::Status status = tc::bench::RunAndPrint(absl::GetFlag(FLAGS_model), options,
                                                       absl::GetFlag(FLAGS_json), stdout);
    if (status.ok()) return 0;
    std::fprintf(stderr, "bench: %s\n", std::string(status.message()).c_str());
  } catch (const tc::Error& e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
  }
  return 1;
}
