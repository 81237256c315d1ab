// Gradient checking: compares the VJP rules' analytical gradients with
// central finite differences, in f64.
//
//   absl::Status s = tc::gradcheck(
//       [](const TensorList& in) { return TensorList{tc::tanh(in[0]) * in[1]}; },
//       {tc::randn({3, 4}, DType::kF64).requires_grad_(), tc::randn({4}, DType::kF64)});
//
// The check contracts the outputs with a fixed random cotangent, so one
// backward pass and two forward passes per input element test the whole VJP.
#ifndef TENSORCUT_AUTODIFF_GRADCHECK_H_
#define TENSORCUT_AUTODIFF_GRADCHECK_H_

#include <functional>

#include "absl/status/status.h"
#include "runtime/dispatch.h"

namespace tc {

struct GradcheckOptions {
  double eps = 1e-6;  // finite-difference step
  double atol = 1e-7;
  double rtol = 1e-5;
  uint64_t seed = 0;  // of the random cotangents
};

// Checks the gradients of `fn` with respect to every input that requires
// grad. Inputs must be f64 and must not overlap in memory (no expanded
// views); they may be non-contiguous. On failure the status names the input,
// the worst element's index and both values.
absl::Status gradcheck(const std::function<TensorList(const TensorList&)>& fn,
                       const TensorList& inputs, const GradcheckOptions& options = {});

}  // namespace tc

#endif  // TENSORCUT_AUTODIFF_GRADCHECK_H_
