// An ONNX model (nn/onnx/import.h) as a classifier for `tensorcut train
// --onnx`: its one f32 input, whose dim 0 is the batch and the others fixed,
// gives class scores [N, classes] on its one output; the loss reads them as
// logits (cross_entropy) or log-probabilities (nll_loss), against i64
// class labels.
#ifndef TENSORCUT_TOOLS_IMPORTED_MODEL_H_
#define TENSORCUT_TOOLS_IMPORTED_MODEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "nn/models/models.h"

namespace tc {

// The losses `--loss` names.
inline constexpr const char* kImportedLosses = "cross_entropy, nll_loss";

struct ImportedClassifierSpec {
  nn::ModelSpec spec;
  int64_t features = 0;  // input values per example
  int64_t classes = 0;
};

// The model in `path` with an example batch of `batch` zeros and labels 0;
// errors name the file and what does not fit (several inputs, a dim other
// than the batch left free, an output that is not [N, classes]).
absl::StatusOr<ImportedClassifierSpec> ImportedClassifier(const std::string& path,
                                                          const std::string& loss, int64_t batch);

}  // namespace tc

#endif  // TENSORCUT_TOOLS_IMPORTED_MODEL_H_
