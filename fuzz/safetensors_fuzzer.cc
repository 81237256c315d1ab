// Checkpoint files: load; what loads saves, and reloads bit for bit (names
// in order, dtypes, shapes, bytes and metadata).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_input.h"
#include "nn/checkpoint.h"

namespace {

using tc::nn::Metadata;
using tc::nn::NamedTensors;

void RequireSame(const NamedTensors& a, const Metadata& a_metadata, const NamedTensors& b,
                 const Metadata& b_metadata) {
  if (a_metadata != b_metadata) tc::fuzz::Fail("the metadata changed on a save and reload");
  if (a.size() != b.size()) tc::fuzz::Fail("the number of tensors changed on a save and reload");
  for (size_t i = 0; i < a.size(); ++i) {
    const tc::Tensor& x = a[i].second;
    const tc::Tensor& y = b[i].second;
    if (a[i].first != b[i].first || x.type() != y.type() || x.bytes() != y.bytes() ||
        (x.bytes() > 0 && std::memcmp(x.raw_data(), y.raw_data(), x.bytes()) != 0)) {
      tc::fuzz::Fail(
          absl::StrCat("tensor ", i, " (", a[i].first, ") changed on a save and reload"));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tc::fuzz::MemoryFile file(data, size);
  Metadata metadata;
  const absl::StatusOr<NamedTensors> loaded = tc::nn::LoadTensors(file.path(), &metadata);
  if (!loaded.ok()) return 0;
  const std::string path = tc::fuzz::ScratchDir() + "/resaved.safetensors";
  if (const absl::Status saved = tc::nn::SaveTensors(*loaded, path, metadata); !saved.ok()) {
    tc::fuzz::Fail(absl::StrCat("a loaded file does not save: ", saved.message()));
  }
  Metadata reloaded_metadata;
  const absl::StatusOr<NamedTensors> reloaded = tc::nn::LoadTensors(path, &reloaded_metadata);
  if (!reloaded.ok()) {
    tc::fuzz::Fail(absl::StrCat("a saved file does not load: ", reloaded.status().message()));
  }
  RequireSame(*loaded, metadata, *reloaded, reloaded_metadata);
  return 0;
}
