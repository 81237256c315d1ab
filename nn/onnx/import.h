// tc::onnx::Import: an ONNX model file (opsets 13 to 17) as an nn::Module to
// run, train, compile and checkpoint like a native one.
//
//   TC_ASSIGN_OR_RETURN(auto model, tc::onnx::Import("resnet.onnx"));
//   model->train();
//   Tensor logits = (*model)(images);
//   nn::save(*model, "resnet.safetensors");  // the ONNX (PyTorch) names
//
// A file that does not parse, an operator or attribute tensorcut does not
// run, an initializer whose bytes do not fill its shape, a node that reads a
// value nothing defines before it: each an InvalidArgumentError naming the
// file and the node, initializer or input.
#ifndef TENSORCUT_NN_ONNX_IMPORT_H_
#define TENSORCUT_NN_ONNX_IMPORT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nn/onnx/imported_module.h"

namespace tc::onnx {

absl::StatusOr<std::shared_ptr<ImportedModule>> Import(const std::string& path);
// `bytes` is a serialized ModelProto; `source` names it in errors.
absl::StatusOr<std::shared_ptr<ImportedModule>> ImportFromString(
    absl::string_view bytes, absl::string_view source = "<ONNX model>");

}  // namespace tc::onnx

#endif  // TENSORCUT_NN_ONNX_IMPORT_H_
