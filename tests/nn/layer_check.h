// The checks every layer and loss gets (tests/nn): its gradients against
// central finite differences in f64, and the compiled function, under the
// default and the min-cut partition with every compiler, against eager
// execution of the same module.
#ifndef TENSORCUT_TESTS_NN_LAYER_CHECK_H_
#define TENSORCUT_TESTS_NN_LAYER_CHECK_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "nn/module.h"

namespace tc::testing {

// Builds the module under test in f64, the same parameters on every call.
using ModuleFactory = std::function<std::shared_ptr<nn::Module>()>;

// A leaf input for the checks: random f64 values that require grad.
TensorTree RandomInput(absl::Span<const int64_t> shape, uint64_t seed);

// The gradients of sum(forward(inputs) * r), r fixed and random, with
// respect to every parameter and every input that requires grad, equal
// central differences of the forward (step 1e-6). Inputs are f64 leaves.
void RequireModuleGradcheck(nn::Module& module, const TensorTree& inputs, double tol = 1e-6);

// For the default and min-cut partitions and each compiler: the compiled
// training function of a fresh module gives the eager module's outputs, and
// after backward of sum(out * r) the same parameter and input gradients and
// buffers, within `tol`.
void RequireCompiledMatchesEager(const ModuleFactory& make, const TensorTree& inputs,
                                 double tol = 1e-9);

// Both of the above on make()'s module.
void CheckLayer(const ModuleFactory& make, const TensorTree& inputs);

}  // namespace tc::testing

#endif  // TENSORCUT_TESTS_NN_LAYER_CHECK_H_
