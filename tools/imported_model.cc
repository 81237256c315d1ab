#include "tools/imported_model.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/shape.h"
#include "graph/symbolic.h"
#include "nn/losses.h"
#include "nn/onnx/import.h"
#include "runtime/autograd_meta.h"
#include "runtime/error.h"
#include "runtime/ops.h"

namespace tc {

absl::StatusOr<ImportedClassifierSpec> ImportedClassifier(const std::string& path,
                                                          const std::string& loss, int64_t batch) {
  nn::LossFn loss_fn;
  if (loss == "cross_entropy") {
    loss_fn = [](const TensorTree& out, const TensorTree& y) {
      return nn::cross_entropy(out.leaf(), y.leaf());
    };
  } else if (loss == "nll_loss") {
    loss_fn = [](const TensorTree& out, const TensorTree& y) {
      return nn::nll_loss(out.leaf(), y.leaf());
    };
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--loss ", loss, ": expected one of ", kImportedLosses));
  }
  TC_ASSIGN_OR_RETURN(std::shared_ptr<onnx::ImportedModule> module, onnx::Import(path));
  auto refuse = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
  };
  if (module->inputs().size() != 1 || module->outputs().size() != 1) {
    return refuse(
        absl::StrCat("tensorcut train takes a model of one input and one output; this "
                     "one has ",
                     module->inputs().size(), " and ", module->outputs().size()));
  }
  const onnx::ValueInfo& input = module->inputs()[0];
  if (input.dtype != DType::kF32 || input.shape.empty()) {
    return refuse(absl::StrCat("input '", input.name, "' must be f32 with a shape, got ",
                               DTypeName(input.dtype), input.shape.empty() ? " without one" : ""));
  }
  std::vector<int64_t> shape = {batch};
  int64_t features = 1;
  for (size_t d = 1; d < input.shape.size(); ++d) {
    if (input.shape[d].size < 0) {
      return refuse(absl::StrCat("input '", input.name, "' dim ", d, " has no fixed size (",
                                 input.shape[d].name.empty() ? "none given" : input.shape[d].name,
                                 "); only dim 0, the batch, may vary"));
    }
    shape.push_back(input.shape[d].size);
    features = DimMul(features, input.shape[d].size);  // saturates: CheckShapeSize refuses
  }
  if (absl::Status s = CheckShapeSize(shape); !s.ok()) {
    return refuse(absl::StrCat("input '", input.name, "': ", s.message()));
  }
  absl::StatusOr<Tensor> example = CatchErrors([&] { return zeros(shape); });
  if (!example.ok()) return refuse(std::string(example.status().message()));
  nn::ModelSpec spec;
  spec.name = std::filesystem::path(path).stem().string();
  spec.module = module;
  spec.inputs = TensorTree::MakeLeaf(*example);
  spec.targets = TensorTree::MakeLeaf(zeros({batch}, DType::kI64));
  spec.loss = std::move(loss_fn);
  // The output's shape, from one forward that changes nothing.
  module->eval();
  absl::StatusOr<Tensor> out = CatchErrors([&] {
    NoGradGuard no_grad;
    return (*module)(spec.inputs.leaf());
  });
  module->train();
  if (!out.ok()) return refuse(std::string(out.status().message()));
  if (out->dim() != 2 || out->size(0) != batch) {
    return refuse(absl::StrCat("output '", module->outputs()[0].name,
                               "' must be class scores [N, classes], got ", out->type().ToString(),
                               " for a batch of ", batch));
  }
  spec.description = absl::StrCat("ONNX opset ", module->opset(), ", ", module->num_parameters(),
                                  " parameters, ", out->size(1), " classes, ", loss);
  return ImportedClassifierSpec{std::move(spec), features, out->size(1)};
}

}  // namespace tc
