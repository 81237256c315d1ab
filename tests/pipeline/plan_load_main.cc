// The loading half of plan_processes_test, a program that links no model
// code, CompilerPipeline, joint-graph builder or partitioner: loads each plan plan_save_main
// wrote, runs it three times on the saved batch, and requires the losses,
// parameters and optimizer state that the saving process reached, bit for
// bit; an inference plan ("inference"), the saving process's outputs.
// With --close (a plan saved on another ISA, whose products round
// differently), the losses within 1e-4 of the saving process's instead.
//   plan_load_main [--close] DIR NAME...
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "nn/checkpoint.h"
#include "pipeline/plan.h"
#include "runtime/gemm.h"

namespace tc {
namespace {

bool SameBits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.type() == y.type() && std::memcmp(x.raw_data(), y.raw_data(), x.bytes()) == 0;
}

// Within rounding of another ISA's products: f32 elements within 1e-5 + 1e-4 |b|.
bool Close(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  if (x.type() != y.type() || x.dtype() != DType::kF32) return false;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float u = x.data<float>()[i], v = y.data<float>()[i];
    if (!(std::abs(u - v) <= 1e-5 + 1e-4 * std::abs(v))) return false;
  }
  return true;
}

absl::Status CheckInference(const std::string& name, bool close) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<LoadedFunction> function,
                      LoadInferencePlan(name + ".tcplan"));
  TC_ASSIGN_OR_RETURN(nn::NamedTensors expected, nn::LoadTensors(name + ".expected"));
  std::vector<Tensor> inputs, outputs;
  for (const auto& [n, t] : expected)
    (absl::StartsWith(n, "input.") ? inputs : outputs).push_back(t);
  TC_ASSIGN_OR_RETURN(const std::vector<Tensor> got, function->Run(inputs));
  if (got.size() != outputs.size()) return absl::InternalError("another number of outputs");
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = close ? Close(got[i], outputs[i]) : SameBits(got[i], outputs[i]);
    if (!same) return absl::InternalError(absl::StrCat("output ", i, " differs"));
  }
  return absl::OkStatus();
}

absl::Status Check(const std::string& name, bool close) {
  if (absl::EndsWith(name, "/inference")) return CheckInference(name, close);
  TC_ASSIGN_OR_RETURN(std::unique_ptr<LoadedStep> step, LoadPlan(name + ".tcplan"));
  nn::Metadata losses;
  TC_ASSIGN_OR_RETURN(nn::NamedTensors expected, nn::LoadTensors(name + ".expected", &losses));
  const auto find = [&expected](const std::string& key) {
    for (const auto& [n, t] : expected) {
      if (n == key) return t;
    }
    return Tensor();
  };
  std::vector<Tensor> batch;
  for (int i = 0; find(absl::StrCat("batch.", i)).defined(); ++i) {
    batch.push_back(find(absl::StrCat("batch.", i)));
  }
  for (int i = 0; i < 3; ++i) {
    TC_ASSIGN_OR_RETURN(const double loss, step->Run(batch));
    const std::string want = losses[absl::StrCat("loss.", i)];
    double want_value = 0;
    if (close && std::sscanf(want.c_str(), "%la", &want_value) == 1 &&
        std::abs(loss - want_value) <= 1e-4 * std::abs(want_value)) {
      continue;
    }
    if (close || absl::StrFormat("%a", loss) != want) {
      return absl::InternalError(
          absl::StrCat("run ", i, ": loss ", absl::StrFormat("%a", loss), ", expected ", want));
    }
  }
  if (close) return absl::OkStatus();
  for (const auto& [n, t] : step->parameters()) {
    if (!SameBits(t, find("param." + n))) return absl::InternalError("parameter " + n + " differs");
  }
  for (const auto& [n, t] : step->optimizer().state()) {
    if (!SameBits(t, find(n))) return absl::InternalError("optimizer state " + n + " differs");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tc

int main(int argc, char** argv) {
  const bool close = argc > 1 && std::string(argv[1]) == "--close";
  if (close) {
    --argc;
    ++argv;
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: plan_load_main [--close] DIR NAME...\n");
    return 2;
  }
  if (!tc::SetGemmChoice(tc::GemmChoice::kOneDnn).ok()) return 1;
  int failed = 0;
  for (int i = 2; i < argc; ++i) {
    const absl::Status s = tc::Check(absl::StrCat(argv[1], "/", argv[i]), close);
    std::printf("%s: %s\n", argv[i],
                !s.ok() ? std::string(s.message()).c_str()
                : close ? "close"
                        : "bit for bit");
    failed += !s.ok();
  }
  return failed == 0 ? 0 : 1;
}
