// Plan files (pipeline/plan.h): load, with the header's checksum made to
// agree first, so that mutations of the plan's JSON and graphs reach the
// readers behind it (the checksum's own check is a unit test's). A training
// plan that loads runs a step on a batch of zeros, saves, and loads again;
// an inference plan runs on zeros; a step program (a compile cache's entry)
// saves and loads again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_input.h"
#include "graph/symbolic.h"
#include "nn/checkpoint.h"
#include "pipeline/plan.h"
#include "runtime/ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tc::fuzz::MemoryFile file(data, size);
  tc::nn::Metadata metadata;
  const absl::StatusOr<tc::nn::NamedTensors> tensors = tc::nn::LoadTensors(file.path(), &metadata);
  if (!tensors.ok()) return 0;
  metadata["tensorcut.plan.crc32"] = tc::PlanChecksum(metadata);
  const std::string path = tc::fuzz::ScratchDir() + "/plan.tcplan";
  if (!tc::nn::SaveTensors(*tensors, path, metadata).ok()) return 0;
  // A compile cache's entry: a program with no tensors, which must save and
  // load again.
  if (absl::StatusOr<tc::StepProgram> program = tc::LoadStepProgram(path); program.ok()) {
    const std::string resaved = tc::fuzz::ScratchDir() + "/resaved.tcstep";
    if (const absl::Status s = tc::SaveStepProgram(*program, resaved); !s.ok()) {
      tc::fuzz::Fail(absl::StrCat("a loaded step program does not save: ", s.message()));
    }
    if (const auto again = tc::LoadStepProgram(resaved); !again.ok()) {
      tc::fuzz::Fail(
          absl::StrCat("a saved step program does not load: ", again.status().message()));
    }
    return 0;
  }
  absl::StatusOr<std::unique_ptr<tc::LoadedStep>> loaded = tc::LoadPlan(path);
  if (!loaded.ok()) {
    // Perhaps an inference plan: it must run on zeros of its inputs' types or say why not.
    absl::StatusOr<std::unique_ptr<tc::LoadedFunction>> function = tc::LoadInferencePlan(path);
    if (!function.ok()) return 0;
    std::vector<tc::Tensor> inputs;
    for (const tc::TensorType& type : (*function)->input_types()) {
      if (tc::HasSymbolic(type.shape) || tc::NumElements(type.shape) > (int64_t{1} << 20)) return 0;
      inputs.push_back(tc::zeros(type.shape, type.dtype));
    }
    (*function)->Run(inputs).IgnoreError();
    return 0;
  }
  const tc::StepProgram& program = (*loaded)->compiled().program();
  std::vector<tc::Tensor> batch;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (program.inputs[i].kind != tc::InputDescriptor::Kind::kUserInput) continue;
    const tc::TensorType& type = program.forward.placeholders()[i]->type();
    if (tc::HasSymbolic(type.shape) || tc::NumElements(type.shape) > (int64_t{1} << 20)) return 0;
    batch.push_back(tc::zeros(type.shape, type.dtype));
  }
  // A run may fail (a loss of NaN is no error; an index out of range is):
  // it must not crash.
  (*loaded)->Run(batch).IgnoreError();
  const std::string resaved = tc::fuzz::ScratchDir() + "/resaved.tcplan";
  if (const absl::Status s = tc::SavePlan((*loaded)->compiled(), resaved); !s.ok()) {
    tc::fuzz::Fail(absl::StrCat("a loaded plan does not save: ", s.message()));
  }
  if (const auto again = tc::LoadPlan(resaved); !again.ok()) {
    tc::fuzz::Fail(absl::StrCat("a saved plan does not load: ", again.status().message()));
  }
  return 0;
}
