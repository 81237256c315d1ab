// The model benchmark library: timing statistics, a real run on the `linear`
// model (fields positive and consistent with each other, the compiler
// parameter used), and the JSON and table formats. No wall-clock assertions.
#include "bench/model_bench.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "runtime/bf16.h"

namespace tc::bench {
namespace {

TEST_CASE("TimeCalls runs warm-up then timed calls and orders its statistics") {
  int calls = 0;
  absl::StatusOr<Timing> t = TimeCalls(2, 5, [&] {
    ++calls;
    return absl::OkStatus();
  });
  REQUIRE(t.ok());
  CHECK(calls == 7);
  CHECK(t->min_ms >= 0);
  CHECK(t->min_ms <= t->median_ms);
  CHECK(t->median_ms <= t->p90_ms);
}

TEST_CASE("TimeCalls stops at the first error and rejects bad counts") {
  int calls = 0;
  absl::StatusOr<Timing> t = TimeCalls(
      1, 5, [&] { return ++calls == 3 ? absl::InternalError("third call") : absl::OkStatus(); });
  CHECK(calls == 3);
  CHECK(t.status() == absl::InternalError("third call"));
  CHECK(TimeCalls(0, 0, [] { return absl::OkStatus(); }).status() ==
        absl::InvalidArgumentError("timing: expected runs >= 1 and warmup >= 0, got runs 0, "
                                   "warmup 0"));
}

TEST_CASE("a run on `linear` fills every field, consistently") {
  BenchOptions options;
  options.model = "linear";
  options.runs = 3;
  options.warmup = 1;
  options.threads = 1;
  options.matmul_size = 64;
  int compiled_graphs = 0;  // the compiler parameter is what the function columns use
  options.compiler = [&](const Graph& graph) {
    ++compiled_graphs;
    return codegen::interpreter()(graph);
  };
  absl::StatusOr<ModelBenchResult> r = RunModelBench(options);
  REQUIRE(r.ok());
  // Function forward and backward, inference forward; and the bf16
  // inference forward where the CPU runs bf16.
  CHECK(compiled_graphs == (CpuHasBf16() ? 4 : 3));
  CHECK(r->bf16 == CpuHasBf16());
  if (r->bf16) {
    CHECK(r->bf16_step.min_ms > 0);
    CHECK(r->bf16_inference.min_ms > 0);
  }
  CHECK(r->model == "linear");
  CHECK(r->threads == 1);
  CHECK(r->runs == 3);
  CHECK(r->matmul_size == 64);
  for (const Timing* t :
       {&r->compiled_step, &r->function_step, &r->interpreter_step, &r->eager_step, &r->compile,
        &r->compiled_inference, &r->eager_inference, &r->matmul}) {
    CHECK(t->min_ms > 0);
    CHECK(t->min_ms <= t->median_ms);
    CHECK(t->median_ms <= t->p90_ms);
  }
  // Linear(3, 2) on [4, 3], inputs without grad: the forward matmul and the
  // weight gradient are 2*4*3*2 = 48 flops each; bias add and its gradient,
  // the loss's pieces are not in the joint graph, so at most a few more.
  CHECK(r->step_gflop * 1e9 >= 96);
  CHECK(r->step_gflop * 1e9 <= 2 * 96);
  CHECK(r->gflops == Approx(r->step_gflop / r->compiled_step.median_ms * 1e3).epsilon(1e-12));
  CHECK(r->matmul_peak_gflops ==
        Approx(2.0 * 64 * 64 * 64 / (r->matmul.median_ms * 1e6)).epsilon(1e-12));
  CHECK(r->peak_fraction == Approx(r->gflops / r->matmul_peak_gflops).epsilon(1e-12));
}

TEST_CASE("bad options name what was expected") {
  BenchOptions options;
  options.model = "resnet";
  CHECK(RunModelBench(options).status().code() == absl::StatusCode::kNotFound);
  options.model = "linear";
  options.threads = -1;
  CHECK(RunModelBench(options).status() ==
        absl::InvalidArgumentError("bench: expected threads >= 0, got -1"));
}

ModelBenchResult Example() {
  ModelBenchResult r;
  r.model = "mlp";
  r.threads = 2;
  r.runs = 30;
  r.compiled_step = {4, 3.5, 5};
  r.function_step = {5, 4.5, 6};
  r.interpreter_step = {4.5, 4, 6};
  r.compile = {20, 18, 25};
  r.eager_step = {10, 9, 12};
  r.compiled_inference = {1, 0.5, 2};
  r.eager_inference = {3, 2.5, 4};
  r.matmul = {1.25, 1, 1.5};
  r.bf16 = true;
  r.bf16_step = {2, 1.5, 3};
  r.bf16_inference = {0.5, 0.25, 1};
  r.matmul_size = 512;
  r.step_gflop = 0.5;
  r.gflops = 125;
  r.matmul_peak_gflops = 250;
  r.peak_fraction = 0.5;
  return r;
}

TEST_CASE("the JSON object has every field, on one line") {
  const std::string json = FormatJson(Example());
  CHECK(
      json ==
      R"({"model": "mlp", "threads": 2, "runs": 30, "bf16": true, )"
      R"("compiled_step_ms": 4, "compiled_step_min_ms": 3.5, "compiled_step_p90_ms": 5, )"
      R"("function_step_ms": 5, "function_step_min_ms": 4.5, "function_step_p90_ms": 6, )"
      R"("interpreter_step_ms": 4.5, "interpreter_step_min_ms": 4, "interpreter_step_p90_ms": 6, )"
      R"("compile_ms": 20, "compile_min_ms": 18, "compile_p90_ms": 25, )"
      R"("eager_step_ms": 10, "eager_step_min_ms": 9, "eager_step_p90_ms": 12, )"
      R"("compiled_inference_ms": 1, "compiled_inference_min_ms": 0.5, )"
      R"("compiled_inference_p90_ms": 2, )"
      R"("eager_inference_ms": 3, "eager_inference_min_ms": 2.5, "eager_inference_p90_ms": 4, )"
      R"("matmul_ms": 1.25, "matmul_min_ms": 1, "matmul_p90_ms": 1.5, )"
      R"("bf16_step_ms": 2, "bf16_step_min_ms": 1.5, "bf16_step_p90_ms": 3, )"
      R"("bf16_inference_ms": 0.5, "bf16_inference_min_ms": 0.25, "bf16_inference_p90_ms": 1, )"
      R"("matmul_size": 512, )"
      R"("step_gflop": 0.5, "gflops": 125, "matmul_peak_gflops": 250, "peak_fraction": 0.5})");
}

TEST_CASE("the table shows medians and the ratios to compiled") {
  const std::vector<std::string> lines =
      absl::StrSplit(FormatTable({Example()}), '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] ==
        "median ms of 30 runs on 2 threads; x/c: x's time over compiled's; "
        "peak: a 512^3 f32 matmul");
  // eager/compiled 10/4 = 2.50, interpreter/compiled 4.5/4 = 1.12 (1.125 rounds
  // to even), compiled/bf16 4/2 = 2.00, inference 3/1 = 3.00 and 1/0.5 = 2.00;
  // 125 GFLOP/s is 50% of 250.
  CHECK(
      lines[3] ==
      "mlp              4.000     5.000     4.500    10.000   2.50   1.12     2.000   2.00 |"
      "     1.000     3.000   3.00     0.500   2.00 |      0.5      125    250.0    50%     20.0");
  // Without bf16 instructions, its columns say so.
  ModelBenchResult f32_only = Example();
  f32_only.bf16 = false;
  const std::vector<std::string> f32_lines =
      absl::StrSplit(FormatTable({f32_only}), '\n', absl::SkipEmpty());
  CHECK(
      f32_lines[3] ==
      "mlp              4.000     5.000     4.500    10.000   2.50   1.12         -      - |"
      "     1.000     3.000   3.00         -      - |      0.5      125    250.0    50%     20.0");
}

TEST_CASE("RunAndPrint --json prints one object per model") {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  BenchOptions options;
  options.runs = 1;
  options.warmup = 0;
  options.matmul_size = 8;
  REQUIRE(RunAndPrint("linear", options, /*json=*/true, out).ok());
  std::fclose(out);
  const std::string text(buffer, size);
  std::free(buffer);
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind(R"({"model": "linear", )", 0) == 0);
  CHECK(lines[0].back() == '}');
}

}  // namespace
}  // namespace tc::bench
