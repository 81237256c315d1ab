// Gradient clipping, as torch.nn.utils' clip_grad_norm_ and clip_grad_value_:
// the gradients of parameters rescaled or clamped in place, before an
// optimizer step.
//
//   loss.backward();
//   const double norm = nn::clip_grad_norm_(model.parameters(), /*max_norm=*/1.0);
//   optimizer.step();
//
// Parameters whose grad is undefined are skipped. A grad that is not
// contiguous is replaced by a contiguous one; f32 and f64 grads only.
#ifndef TENSORCUT_NN_CLIP_GRAD_H_
#define TENSORCUT_NN_CLIP_GRAD_H_

#include <limits>

#include "absl/types/span.h"
#include "runtime/tensor.h"

namespace tc::nn {

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

// The norm of every grad together (the norm_type-norm of their
// concatenation, accumulated in double; kInfNorm: the largest |g|). Every
// grad is multiplied by min(1, max_norm / (norm + 1e-6)), PyTorch's clamped
// clip coefficient. Returns the norm before clipping. A non-finite norm
// throws tc::Error with error_if_nonfinite; without it the grads are scaled
// as the formula says (by NaN for a NaN norm), as PyTorch does.
double clip_grad_norm_(absl::Span<const Tensor> params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every grad element into [-clip_value, clip_value].
void clip_grad_value_(absl::Span<const Tensor> params, double clip_value);

}  // namespace tc::nn

#endif  // TENSORCUT_NN_CLIP_GRAD_H_
