// Model benchmarks: one reference model (nn/models/models.h) timed as a
// training step (forward, loss, backward, SGD update) and as an inference
// step: compiled whole (tc::TrainStep), through a compiled function on the
// eager tape, through the interpreter, and in eager mode; with its FLOPs per
// step, the time to compile it, and a oneDNN f32 matmul measured in the same
// run as the peak to compare against. `//bench:bench` and `tensorcut bench`
// print these.
//
//   bench::BenchOptions options;
//   options.model = "mlp";
//   options.threads = 2;
//   absl::StatusOr<bench::ModelBenchResult> r = bench::RunModelBench(options);
//   // r->compiled_step.median_ms, r->eager_step.median_ms, r->gflops, ...
//   std::printf("%s\n", bench::FormatJson(*r).c_str());
//
// Every time is wall-clock milliseconds over `runs` calls after `warmup`
// calls. The function step and compiled inference use `compiler` (tc::compile's
// default, the fusing compiler); the interpreter step codegen::interpreter().
#ifndef TENSORCUT_BENCH_MODEL_BENCH_H_
#define TENSORCUT_BENCH_MODEL_BENCH_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codegen/fusing_compiler.h"
#include "codegen/interpreter.h"
#include "graph/decompositions.h"
#include "partition/partition.h"

namespace tc::bench {

struct BenchOptions {
  std::string model = "mlp";  // a name nn::MakeModel knows
  int runs = 30;              // timed calls per measurement
  int warmup = 3;             // untimed calls first (oneDNN primitive creation, allocations)
  int threads = 0;            // OpenMP threads (oneDNN's too); 0: leave the current setting
  uint64_t seed = 0;          // model parameters and inputs, and the matmul operands
  double lr = 1e-3;           // SGD learning rate of the training step
  codegen::Compiler compiler = codegen::fusing();  // the function and inference columns
  // Applied before compiling (both compiled columns); nullptr: none.
  const DecompositionTable* decompositions = nullptr;
  partition::PartitionFn partition_fn;  // empty: the min-cut partition
  bool freeze = true;                   // compiled inference with its weights frozen
  int64_t matmul_size = 512;            // the reference matmul is size x size x size
};

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double p90_ms = 0;
};

struct ModelBenchResult {
  std::string model;
  int threads = 0;  // OpenMP's thread count during the run
  int runs = 0;
  Timing compiled_step;  // tc::TrainStep: forward, loss, backward and SGD compiled
  Timing function_step;  // tc::compile's function; loss, backward and SGD on the eager tape
  Timing interpreter_step, eager_step;
  Timing compile;  // tc::TrainStep::Create: capture, joint graph, partition, both programs
  Timing compiled_inference, eager_inference;  // module in eval mode; compiled: see `freeze`
  Timing matmul;                               // the reference matmul
  // The compiled step and inference in bf16 mixed precision
  // (codegen/autocast.h); measured only where `bf16`: on a CPU with bf16
  // instructions.
  bool bf16 = false;
  Timing bf16_step, bf16_inference;
  int64_t matmul_size = 0;        // of size x size x size
  double step_gflop = 0;          // EstimateCost FLOPs of the joint graph's nodes, in GFLOP
  double gflops = 0;              // step_gflop per compiled_step.median_ms
  double matmul_peak_gflops = 0;  // the reference matmul's FLOPs per matmul.median_ms
  double peak_fraction = 0;       // gflops / matmul_peak_gflops
};

// The models `--model all` runs: linear, mlp, cnn, transformer.
const std::vector<std::string>& BenchModelNames();

// Median, minimum and 90th percentile of `runs` timed calls of `fn` after
// `warmup` untimed ones; the first error `fn` returns stops the timing.
absl::StatusOr<Timing> TimeCalls(int warmup, int runs, const std::function<absl::Status()>& fn);

// Runs every measurement of ModelBenchResult for options.model. Errors: an
// unknown model (NotFound), runs < 1, warmup < 0, threads < 0, or a stage of
// the pipeline failing on the model.
absl::StatusOr<ModelBenchResult> RunModelBench(const BenchOptions& options);

// One JSON object on one line: model, threads, runs, each timing as
// <name>_ms (median), <name>_min_ms and <name>_p90_ms, matmul_size,
// step_gflop, gflops, matmul_peak_gflops, peak_fraction.
std::string FormatJson(const ModelBenchResult& result);

// A text table, one row per result: medians, the ratios eager/compiled and
// interpreter/compiled, GFLOP/s and the fraction of the matmul peak.
std::string FormatTable(absl::Span<const ModelBenchResult> results);

// What both command-line front ends do: runs `model` ("all": every
// BenchModelNames() entry) with `options` otherwise, and prints to `out` the
// table once all have run or, with `json`, one JSON object per line as each
// model finishes.
absl::Status RunAndPrint(absl::string_view model, const BenchOptions& options, bool json,
                         std::FILE* out);

}  // namespace tc::bench

#endif  // TENSORCUT_BENCH_MODEL_BENCH_H_
