// tc::onnx::Export: a module as an ONNX model. An imported module is written
// back as imported (training-mode nodes kept), its
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

// A native module's forward, traced in eval mode on `example`, as an ONNX
// model of opset 17: parameters and buffers are initializers under their
// FQNs, the inputs "input" (or "input_0", "input_1", ... in the example's
// leaf order) and the outputs "output" (or "output_0", ...), all of the
// example's sizes. An op with no ONNX form here (a bf16 cast, a symbolic
// dim, a random draw in eval mode) is an UnimplementedError naming it and
// the module it came from.
absl::StatusOr<std::string> ExportToString(nn::Module& module, const TensorTree& example);
absl::Status Export(nn::Module& module, const TensorTree& example, const std::string& path);

}  // namespace tc::onnx

#endif  // TENSORCUT_NN_ONNX_EXPORT_H_
