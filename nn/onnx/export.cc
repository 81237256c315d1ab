#include "nn/onnx/export.h"

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "base/version.h"
#include "nn/onnx/model.h"

namespace tc::onnx {

absl::StatusOr<std::string> ExportToString(const ImportedModule& module) {
  return SerializeModel(module.Snapshot(), absl::StrCat(version()));
}

absl::Status Export(const ImportedModule& module, const std::string& path) {
  TC_ASSIGN_OR_RETURN(const std::string bytes, ExportToString(module));
  return WriteAtomically(path, "model", bytes);
}

}  // namespace tc::onnx
