// What a new batch size costs a compiled training step: the full compile of
// a step over a symbolic batch (capture, autodiff, partition, planning the
// example size and its first call's oneDNN primitives) against planning one
// more size on its first call (the specialize-symbols pass, the compilers'
// lowering and memory plan, the primitives; no capture, autodiff or
// partition). A first call's planning is what it takes over a planned call
// of the same size. Medians of --runs, for each model, with a fresh step per
// run so that every plan is a first one.
//
//   bazel run -c opt --config=opt //bench:plan_bench -- --runs 7 --threads 1
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "base/status_macros.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "pipeline/train_step.h"
#include "runtime/ops.h"
#include "runtime/threads.h"

ABSL_FLAG(int, runs, 7, "fresh steps per model; medians are reported");
ABSL_FLAG(int, threads, 1, "oneDNN/OpenMP threads");
ABSL_FLAG(std::string, model, "", "one model (mlp, cnn or transformer); empty: all three");

namespace tc {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The example batch resized to `rows` (and the transformer's sequence to
// `length`): floats drawn afresh, labels kept in range.
std::vector<Tensor> Resized(const nn::ModelSpec& spec, int64_t rows, int64_t length) {
  std::vector<Tensor> out;
  std::vector<Tensor> leaves = Flatten(spec.inputs).first;
  for (const Tensor& t : Flatten(spec.targets).first) leaves.push_back(t);
  for (const Tensor& t : leaves) {
    Shape shape = t.shape();
    shape[0] = rows;
    if (spec.name == "transformer") shape[1] = length;
    out.push_back(IsFloating(t.dtype()) ? randn(shape, t.dtype())
                                        : zeros(shape, t.dtype()));  // class 0: a valid label
  }
  return out;
}

int Failed(const std::string& model, const absl::Status& status) {
  std::fprintf(stderr, "plan_bench: %s: %s\n", model.c_str(),
               std::string(status.message()).c_str());
  return 1;
}

// Dim 0 of every batch leaf, and the transformer's sequence, symbolic.
DynamicDims BatchDims(const nn::ModelSpec& spec) {
  DynamicDims dims;
  const int leaves =
      static_cast<int>(Flatten(spec.inputs).first.size() + Flatten(spec.targets).first.size());
  for (int i = 0; i < leaves; ++i) {
    dims["arg" + std::to_string(i)] =
        spec.name == "transformer" ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
  }
  return dims;
}

int Run() {
  SetNumThreads(absl::GetFlag(FLAGS_threads));
  std::printf("%-12s %13s %13s %13s %13s %11s %7s\n", "model", "compile (ms)", "its plans",
              "new size (ms)", "its plans", "step (ms)", "ratio");
  std::vector<std::string> models = {"mlp", "cnn", "transformer"};
  if (!absl::GetFlag(FLAGS_model).empty()) models = {absl::GetFlag(FLAGS_model)};
  for (const std::string& name : models) {
    std::vector<double> compile, plan, step, compile_plans, new_plans;
    for (int r = 0; r < absl::GetFlag(FLAGS_runs); ++r) {
      nn::ModelSpec spec = nn::MakeModel(name, 1).value();
      nn::SGD sgd(spec.module->named_parameters(), 0.01);
      Clock::time_point start = Clock::now();
      absl::StatusOr<std::unique_ptr<TrainStep>> made =
          TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd,
                            {.dynamic_dims = BatchDims(spec)});
      compile.push_back(Ms(start));
      if (!made.ok()) return Failed(name, made.status());
      TrainStep& s = **made;
      // Milliseconds the two halves spent specializing and compiling sizes.
      auto plans_ms = [&] {
        return 1e3 *
               (s.forward().plan_cache().plan_seconds + s.backward().plan_cache().plan_seconds);
      };
      compile_plans.push_back(plans_ms());
      // The first call of a size plans it (and makes its oneDNN primitives),
      // then runs a step: what it costs over a planned call is its planning.
      // Returns the first call's time and the median of three planned ones.
      auto planning =
          [&](const std::vector<Tensor>& batch) -> absl::StatusOr<std::pair<double, double>> {
        Clock::time_point t = Clock::now();
        TC_RETURN_IF_ERROR(s.Run(batch).status());
        const double first = Ms(t);
        std::vector<double> again;
        for (int i = 0; i < 3; ++i) {
          t = Clock::now();
          TC_RETURN_IF_ERROR(s.Run(batch).status());
          again.push_back(Ms(t));
        }
        return std::make_pair(first, Median(again));
      };
      const absl::StatusOr<std::pair<double, double>> example = planning(
          Resized(spec, Flatten(spec.inputs).first[0].size(0), name == "transformer" ? 128 : 0));
      if (!example.ok()) return Failed(name, example.status());
      // A size the step has not seen.
      const int64_t rows = name == "mlp" ? 96 : name == "cnn" ? 24 : 6;
      const double before = plans_ms();
      const absl::StatusOr<std::pair<double, double>> other = planning(Resized(spec, rows, 100));
      if (!other.ok()) return Failed(name, other.status());
      new_plans.push_back(plans_ms() - before);
      compile.back() += example->first - example->second;
      plan.push_back(other->first - other->second);
      step.push_back(other->second);
    }
    const double c = Median(compile), p = Median(plan);
    std::printf("%-12s %13.1f %13.1f %13.1f %13.1f %11.1f %6.1fx\n", name.c_str(), c,
                Median(compile_plans), p, Median(new_plans), Median(step), c / p);
  }
  std::printf(
      "compile: TrainStep::Create and its first call's extra time; new size: a first call's extra\n"
      "time over a planned call; its plans: of that, specializing and compiling (the rest is\n"
      "oneDNN primitives and first-touch memory); step: a planned call of the new size; ratio:\n"
      "compile over new size\n");
  return 0;
}

}  // namespace
}  // namespace tc

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return tc::Run();
}
