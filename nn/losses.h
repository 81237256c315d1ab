// Loss functions, as torch.nn.functional. Each is built only from ops of the
// op table (one-hot targets are eq(targets, arange(C)) cast to the logits'
// dtype), so it differentiates eagerly and traces into a graph like any
// model code.
//
// reduction: "mean" (the default), "sum", or "none" (per-sample losses,
// shape [N] for the class losses and the input shape for the elementwise
// ones). Bad inputs throw tc::Error (InvalidArgument) naming what was
// expected and what came.
//
//   Tensor loss = nn::cross_entropy(logits, labels);              // [N, C], i64 [N]
//   Tensor smooth = nn::cross_entropy(logits, labels, "sum", 0.1);
#ifndef TENSORCUT_NN_LOSSES_H_
#define TENSORCUT_NN_LOSSES_H_

#include "absl/strings/string_view.h"
#include "runtime/ops.h"

namespace tc::nn {

// -sum_c q_c log_softmax(logits)_c per sample, with the target distribution
// q = (1 - label_smoothing) one_hot(target) + label_smoothing / C.
// logits floating [N, C], targets i64 [N] in [0, C), label_smoothing in [0, 1].
// Targets are not range-checked (that would read data, which a traced graph
// cannot): a target outside [0, C) matches no class.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets,
                     absl::string_view reduction = "mean", double label_smoothing = 0);

// -log_probs[i, targets[i]] per sample; log_probs [N, C], targets i64 [N].
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets,
                absl::string_view reduction = "mean");

// (a - b)^2 elementwise; a and b of the same floating dtype and shape.
Tensor mse_loss(const Tensor& a, const Tensor& b, absl::string_view reduction = "mean");

// -(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) elementwise, computed in
// the stable form max(x, 0) - x t + log(1 + exp(-|x|)); logits and targets of
// the same floating dtype and shape.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                        absl::string_view reduction = "mean");

}  // namespace tc::nn

#endif  // TENSORCUT_NN_LOSSES_H_
