// ONNX models: an import gives a module or a status, never a crash; what
// imports prints its repr. Constant folding runs while importing, so each
// operator's kernel meets whatever constants the file holds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "nn/onnx/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto imported = tc::onnx::ImportFromString(bytes, "fuzzed.onnx");
  if (imported.ok()) (*imported)->ToString();
  return 0;
}
