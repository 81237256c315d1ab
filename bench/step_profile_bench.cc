#include "bench/step_profile_bench.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "pipeline/train_step.h"
#include "runtime/threads.h"

namespace tc::bench {

absl::StatusOr<StepProfileResult> ProfileTrainStep(const BenchOptions& options,
                                                   Precision precision) {
  if (options.runs < 1 || options.warmup < 0 || options.threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile: expected runs >= 1, warmup >= 0 and threads >= 0, got runs ",
                     options.runs, ", warmup ", options.warmup, ", threads ", options.threads));
  }
  if (options.threads > 0) SetNumThreads(options.threads);
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel(options.model, options.seed));
  nn::SGD sgd(spec.module->named_parameters(), options.lr);
  TC_ASSIGN_OR_RETURN(std::unique_ptr<TrainStep> step,
                      TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd,
                                        {.partition_fn = options.partition_fn,
                                         .decompositions = options.decompositions,
                                         .precision = precision}));
  std::vector<Tensor> batch = Flatten(spec.inputs).first;
  for (const Tensor& target : Flatten(spec.targets).first) batch.push_back(target);
  for (int i = 0; i < options.warmup; ++i) TC_RETURN_IF_ERROR(step->Run(batch).status());
  StepProfileResult result;
  result.model = options.model;
  result.precision = precision;
  result.threads = NumThreads();
  result.runs = options.runs;
  const auto start = std::chrono::steady_clock::now();
  {
    codegen::ScopedStepProfile on(result.profile);
    for (int i = 0; i < options.runs; ++i) TC_RETURN_IF_ERROR(step->Run(batch).status());
  }
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
  result.step_ms = took.count() / options.runs;
  return result;
}

std::string FormatProfile(const StepProfileResult& r) {
  const double per_step = 1e3 / r.runs;  // seconds summed over the runs -> ms per step
  auto row = [&](absl::string_view name, absl::string_view group, double ms, double calls) {
    return absl::StrFormat("  %-28s %-13s %9.3f %6.1f%% %7.1f\n", name, group, ms,
                           100 * ms / r.step_ms, calls);
  };
  std::string out = absl::StrFormat(
      "%s in %s on %d thread%s: %.3f ms per training step (mean of %d)\n", r.model,
      PrecisionName(r.precision), r.threads, r.threads == 1 ? "" : "s", r.step_ms, r.runs);
  absl::StrAppend(&out, absl::StrFormat("  %-28s %-13s %9s %7s %7s\n", "group", "", "ms/step",
                                        "share", "steps"));
  for (int g = 0; g < codegen::kNumStepGroups; ++g) {
    const auto group = static_cast<codegen::StepGroup>(g);
    double calls = 0;
    for (const auto& [name, e] : r.profile.entries()) {
      if (e.group == group) calls += e.calls;
    }
    absl::StrAppend(&out, row(codegen::StepGroupName(group), "",
                              r.profile.seconds(group) * per_step, calls / r.runs));
  }
  absl::StrAppend(&out, row("outside the programs", "(optimizer)",
                            r.step_ms - r.profile.total_seconds() * per_step, 0));
  std::vector<std::pair<std::string, codegen::StepProfile::Entry>> entries(
      r.profile.entries().begin(), r.profile.entries().end());
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  absl::StrAppend(&out, "  the costliest steps:\n");
  for (size_t i = 0; i < std::min<size_t>(entries.size(), 12); ++i) {
    const auto& [name, e] = entries[i];
    absl::StrAppend(&out, row(name, codegen::StepGroupName(e.group), e.seconds * per_step,
                              static_cast<double>(e.calls) / r.runs));
  }
  return out;
}

}  // namespace tc::bench
