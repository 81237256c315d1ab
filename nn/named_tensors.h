// Comparing a list of named tensors against the one expected, shared by
// optimizer state and checkpoints (which copy values in with
// nn::CopyValues, nn/module.h).
#ifndef TENSORCUT_NN_NAMED_TENSORS_H_
#define TENSORCUT_NN_NAMED_TENSORS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "nn/module.h"

namespace tc::nn {

// Compares `actual` with `expected` by name, dtype and shape. Empty when every
// expected name is present with the same type and nothing else is, else e.g.
// "missing: fc.bias; unexpected: fc.b; mismatched: fc.weight (expected f32[2,3],
// <actual_label> f32[3,2])", each list in the order of its source.
std::string DescribeMismatch(const NamedTensors& expected, const NamedTensors& actual,
                             absl::string_view actual_label);

}  // namespace tc::nn

#endif  // TENSORCUT_NN_NAMED_TENSORS_H_
