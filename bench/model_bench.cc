#include "bench/model_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "partition/accounting.h"
#include "partition/min_cut.h"
#include "pipeline/compiler_pipeline.h"
#include "pipeline/train_step.h"
#include "runtime/autograd_meta.h"
#include "runtime/bf16.h"
#include "runtime/ops.h"
#include "runtime/threads.h"

namespace tc::bench {
namespace {

// A compiled training function and the FLOPs of the joint graph it came from.
struct CompiledStep {
  Function fn;
  double joint_flops = 0;
};

absl::StatusOr<CompiledStep> CompileStep(nn::ModelSpec& spec, const codegen::Compiler& compiler,
                                         const partition::PartitionFn& partition_fn,
                                         const DecompositionTable* decompositions) {
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline,
                      CompilerPipeline::Create(*spec.module, spec.inputs));
  TC_RETURN_IF_ERROR(pipeline.generate_ir_for_training({.decompositions = decompositions}));
  const JointGraph& joint = **pipeline.joint_graph();
  TC_ASSIGN_OR_RETURN(partition::PartitionResult part, pipeline.partition(partition_fn, joint));
  TC_ASSIGN_OR_RETURN(Function fn, pipeline.compile_training(compiler, part));
  CompiledStep step{std::move(fn)};
  for (const Node* node : joint.graph.nodes()) step.joint_flops += partition::NodeFlops(*node);
  return step;
}

// One training step: `forward` (compiled or the module), the loss, backward, SGD.
absl::Status TapeStep(const nn::ModelSpec& spec, const Function& forward, nn::SGD& sgd) {
  TC_ASSIGN_OR_RETURN(TensorTree out, forward(spec.inputs));
  const Tensor loss = spec.loss(out, spec.targets);
  sgd.zero_grad();
  loss.backward();
  sgd.step();
  return absl::OkStatus();
}

// The whole step compiled (tc::TrainStep) on a fresh copy of the model, and
// the median time of compiling it (capture to both programs) over five
// compiles.
absl::StatusOr<Timing> TimeCompiledStep(const BenchOptions& options,
                                        const partition::PartitionFn& partition_fn,
                                        Precision precision, Timing* compile) {
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel(options.model, options.seed));
  nn::SGD sgd(spec.module->named_parameters(), options.lr);
  std::unique_ptr<tc::TrainStep> step;
  constexpr int kCompiles = 5;
  absl::StatusOr<Timing> t = TimeCalls(0, kCompiles, [&]() -> absl::Status {
    TC_ASSIGN_OR_RETURN(
        step, tc::TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd,
                                    {.partition_fn = partition_fn,
                                     .decompositions = options.decompositions,
                                     .precision = precision}));
    return absl::OkStatus();
  });
  if (!t.ok()) return t.status();
  *compile = *t;
  std::vector<Tensor> batch = Flatten(spec.inputs).first;
  for (const Tensor& target : Flatten(spec.targets).first) batch.push_back(target);
  return TimeCalls(options.warmup, options.runs, [&] { return step->Run(batch).status(); });
}

// The training step through a compiled function on the eager tape (loss,
// backward and SGD eager) on a fresh copy of the model (same seed, so every
// variant runs the same numbers); `compiler` null: eager throughout.
absl::StatusOr<Timing> TimeTraining(const BenchOptions& options,
                                    const partition::PartitionFn& partition_fn,
                                    const codegen::Compiler* compiler, double* joint_flops) {
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel(options.model, options.seed));
  Function forward = [&spec](const TensorTree& in) -> absl::StatusOr<TensorTree> {
    return (*spec.module)(in);
  };
  if (compiler != nullptr) {
    TC_ASSIGN_OR_RETURN(CompiledStep step,
                        CompileStep(spec, *compiler, partition_fn, options.decompositions));
    forward = std::move(step.fn);
    if (joint_flops != nullptr) *joint_flops = step.joint_flops;
  }
  nn::SGD sgd(spec.module->named_parameters(), options.lr);
  return TimeCalls(options.warmup, options.runs, [&] { return TapeStep(spec, forward, sgd); });
}

// The inference step (eval mode, no autograd): compiled with `compiler`
// (weights frozen where options.freeze: codegen/freeze.h), or eager when it
// is null.
absl::StatusOr<Timing> TimeInference(const BenchOptions& options, const codegen::Compiler* compiler,
                                     Precision precision = Precision::kF32) {
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel(options.model, options.seed));
  spec.module->eval();
  NoGradGuard no_grad;
  Function forward = [&spec](const TensorTree& in) -> absl::StatusOr<TensorTree> {
    return (*spec.module)(in);
  };
  if (compiler != nullptr) {
    TC_ASSIGN_OR_RETURN(forward, compile(*spec.module, spec.inputs,
                                         {.training = false,
                                          .decompositions = options.decompositions,
                                          .compiler = *compiler,
                                          .precision = precision,
                                          .freeze = options.freeze}));
  }
  return TimeCalls(options.warmup, options.runs, [&] { return forward(spec.inputs).status(); });
}

double Gflops(double flops, double ms) { return flops / (ms * 1e6); }

double Ratio(double num, double den) { return den > 0 ? num / den : 0; }

}  // namespace

const std::vector<std::string>& BenchModelNames() {
  static const auto* names = new std::vector<std::string>{"linear", "mlp", "cnn", "transformer"};
  return *names;
}

absl::StatusOr<Timing> TimeCalls(int warmup, int runs, const std::function<absl::Status()>& fn) {
  if (runs < 1 || warmup < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "timing: expected runs >= 1 and warmup >= 0, got runs ", runs, ", warmup ", warmup));
  }
  for (int i = 0; i < warmup; ++i) {
    TC_RETURN_IF_ERROR(fn());
  }
  std::vector<double> ms(runs);
  for (double& t : ms) {
    const auto start = std::chrono::steady_clock::now();
    TC_RETURN_IF_ERROR(fn());
    t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  std::sort(ms.begin(), ms.end());
  // The median of an even count is the mean of the middle two; p90 is the
  // smallest time at least 90% of the runs do not exceed.
  const double median = (ms[(runs - 1) / 2] + ms[runs / 2]) / 2;
  const int p90 = static_cast<int>(std::ceil(0.9 * runs)) - 1;
  return Timing{median, ms.front(), ms[p90]};
}

absl::StatusOr<ModelBenchResult> RunModelBench(const BenchOptions& options) {
  if (options.threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bench: expected threads >= 0, got ", options.threads));
  }
  if (options.threads > 0) SetNumThreads(options.threads);
  const partition::PartitionFn partition_fn =
      options.partition_fn ? options.partition_fn : partition::MinCutPartition;

  ModelBenchResult r;
  r.model = options.model;
  r.threads = NumThreads();
  r.runs = options.runs;
  r.matmul_size = options.matmul_size;
  double joint_flops = 0;
  TC_ASSIGN_OR_RETURN(r.compiled_step,
                      TimeCompiledStep(options, partition_fn, Precision::kF32, &r.compile));
  TC_ASSIGN_OR_RETURN(r.function_step,
                      TimeTraining(options, partition_fn, &options.compiler, &joint_flops));
  const codegen::Compiler interpreter = codegen::interpreter();
  TC_ASSIGN_OR_RETURN(r.interpreter_step,
                      TimeTraining(options, partition_fn, &interpreter, nullptr));
  TC_ASSIGN_OR_RETURN(r.eager_step, TimeTraining(options, partition_fn, nullptr, nullptr));
  TC_ASSIGN_OR_RETURN(r.compiled_inference, TimeInference(options, &options.compiler));
  TC_ASSIGN_OR_RETURN(r.eager_inference, TimeInference(options, nullptr));
  r.bf16 = CpuHasBf16();
  if (r.bf16) {
    Timing bf16_compile;
    TC_ASSIGN_OR_RETURN(r.bf16_step,
                        TimeCompiledStep(options, partition_fn, Precision::kBF16, &bf16_compile));
    TC_ASSIGN_OR_RETURN(r.bf16_inference,
                        TimeInference(options, &options.compiler, Precision::kBF16));
  }

  Generator gen(options.seed);
  const int64_t n = options.matmul_size;
  const Tensor a = randn({n, n}, DType::kF32, &gen), b = randn({n, n}, DType::kF32, &gen);
  absl::StatusOr<Timing> t = TimeCalls(options.warmup, options.runs, [&] {
    matmul(a, b);
    return absl::OkStatus();
  });
  if (!t.ok()) return t.status();
  r.matmul = *t;

  r.step_gflop = joint_flops / 1e9;
  r.gflops = Gflops(joint_flops, r.compiled_step.median_ms);
  r.matmul_peak_gflops = Gflops(2.0 * n * n * n, r.matmul.median_ms);
  r.peak_fraction = Ratio(r.gflops, r.matmul_peak_gflops);
  return r;
}

std::string FormatJson(const ModelBenchResult& r) {
  std::string json = absl::StrFormat(R"({"model": "%s", "threads": %d, "runs": %d, "bf16": %s)",
                                     r.model, r.threads, r.runs, r.bf16 ? "true" : "false");
  const std::pair<const char*, const Timing*> timings[] = {
      {"compiled_step", &r.compiled_step},
      {"function_step", &r.function_step},
      {"interpreter_step", &r.interpreter_step},
      {"compile", &r.compile},
      {"eager_step", &r.eager_step},
      {"compiled_inference", &r.compiled_inference},
      {"eager_inference", &r.eager_inference},
      {"matmul", &r.matmul},
      {"bf16_step", &r.bf16_step},
      {"bf16_inference", &r.bf16_inference},
  };
  for (const auto& [name, timing] : timings) {
    absl::StrAppendFormat(&json, R"(, "%s_ms": %.6g, "%s_min_ms": %.6g, "%s_p90_ms": %.6g)", name,
                          timing->median_ms, name, timing->min_ms, name, timing->p90_ms);
  }
  absl::StrAppendFormat(&json,
                        R"(, "matmul_size": %d, "step_gflop": %.6g, "gflops": %.6g, )"
                        R"("matmul_peak_gflops": %.6g, "peak_fraction": %.6g})",
                        r.matmul_size, r.step_gflop, r.gflops, r.matmul_peak_gflops,
                        r.peak_fraction);
  return json;
}

std::string FormatTable(absl::Span<const ModelBenchResult> results) {
  std::string table;
  if (!results.empty()) {
    const ModelBenchResult& r = results[0];
    absl::StrAppendFormat(&table,
                          "median ms of %d runs on %d threads; x/c: x's time over compiled's; "
                          "peak: a %lld^3 f32 matmul\n",
                          r.runs, r.threads, static_cast<long long>(r.matmul_size));
  }
  absl::StrAppendFormat(&table, "%-12s %-70s | %-43s | %s\n", "", "training step", "inference",
                        "per training step");
  absl::StrAppendFormat(
      &table, "%-12s %9s %9s %9s %9s %6s %6s %9s %6s | %9s %9s %6s %9s %6s | %8s %8s %8s %6s %8s\n",
      "model", "compiled", "function", "interp", "eager", "e/c", "i/c", "bf16", "c/b", "compiled",
      "eager", "e/c", "bf16", "c/b", "GFLOP", "GFLOP/s", "peak", "%peak", "compile");
  // bf16 columns: the compiled step and inference in bf16 mixed precision;
  // "-" on a CPU without bf16 instructions.
  auto bf16 = [](bool ran, double bf16_ms, double f32_ms) {
    if (!ran) return absl::StrFormat("%9s %6s", "-", "-");
    return absl::StrFormat("%9.3f %6.2f", bf16_ms, Ratio(f32_ms, bf16_ms));
  };
  for (const ModelBenchResult& r : results) {
    absl::StrAppendFormat(
        &table,
        "%-12s %9.3f %9.3f %9.3f %9.3f %6.2f %6.2f %s | %9.3f %9.3f %6.2f %s | %8.3g %8.3g %8.1f "
        "%5.3g%% %8.1f\n",
        r.model, r.compiled_step.median_ms, r.function_step.median_ms, r.interpreter_step.median_ms,
        r.eager_step.median_ms, Ratio(r.eager_step.median_ms, r.compiled_step.median_ms),
        Ratio(r.interpreter_step.median_ms, r.compiled_step.median_ms),
        bf16(r.bf16, r.bf16_step.median_ms, r.compiled_step.median_ms),
        r.compiled_inference.median_ms, r.eager_inference.median_ms,
        Ratio(r.eager_inference.median_ms, r.compiled_inference.median_ms),
        bf16(r.bf16, r.bf16_inference.median_ms, r.compiled_inference.median_ms), r.step_gflop,
        r.gflops, r.matmul_peak_gflops, 100 * r.peak_fraction, r.compile.median_ms);
  }
  return table;
}

absl::Status RunAndPrint(absl::string_view model, const BenchOptions& options, bool json,
                         std::FILE* out) {
  std::vector<std::string> models = {std::string(model)};
  if (model == "all") models = BenchModelNames();
  std::vector<ModelBenchResult> results;
  for (const std::string& name : models) {
    BenchOptions one = options;
    one.model = name;
    TC_ASSIGN_OR_RETURN(ModelBenchResult r, RunModelBench(one));
    if (json) {
      std::fprintf(out, "%s\n", FormatJson(r).c_str());
      std::fflush(out);
    }
    results.push_back(std::move(r));
  }
  if (!json) std::fprintf(out, "%s", FormatTable(results).c_str());
  return absl::OkStatus();
}

}  // namespace tc::bench
