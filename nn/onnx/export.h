// tc::onnx::Export: an imported module written back as an ONNX model, its
// graph as imported and its initializers holding the parameters and buffers
// as they are now, under their names: train an imported model, export it,
// and any ONNX runtime (or tensorcut again) runs the trained weights.
//
//   auto model = tc::onnx::Import("cnn.onnx").value();
//   ... train ...
//   TC_RETURN_IF_ERROR(tc::onnx::Export(*model, "cnn_trained.onnx"));
//
// The file is replaced whole or not at all (base/atomic_file.h).
#ifndef TENSORCUT_NN_ONNX_EXPORT_H_
#define TENSORCUT_NN_ONNX_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nn/onnx/imported_module.h"

namespace tc::onnx {

absl::StatusOr<std::string> ExportToString(const ImportedModule& module);
absl::Status Export(const ImportedModule& module, const std::string& path);

}  // namespace tc::onnx

#endif  // TENSORCUT_NN_ONNX_EXPORT_H_
