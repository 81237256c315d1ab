// Helpers over NamedTensors shared by optimizer state and checkpoints:
// comparing a list of tensors against the one expected, and copying values
// into existing storage so every handle stays valid.
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

// Copies `src`'s values into `dst`'s storage (same dtype and shape, checked by
// the caller), keeping `dst`'s handle and every view that shares its storage.
void CopyValues(const Tensor& dst, const Tensor& src);

}  // namespace tc::nn

#endif  // TENSORCUT_NN_NAMED_TENSORS_H_
