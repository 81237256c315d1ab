#include "nn/onnx/import.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "nn/onnx/model.h"

namespace tc::onnx {

absl::StatusOr<std::shared_ptr<ImportedModule>> ImportFromString(absl::string_view bytes,
                                                                 absl::string_view source) {
  TC_ASSIGN_OR_RETURN(Model model, ParseModel(bytes, source));
  return ImportedModule::Create(std::move(model), source);
}

absl::StatusOr<std::shared_ptr<ImportedModule>> Import(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the ONNX model"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": reading the ONNX model failed"));
  return ImportFromString(bytes.str(), path);
}

}  // namespace tc::onnx
