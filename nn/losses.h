// Loss functions, as torch.nn.functional's. Each is built only from ops of
// the op table (one-hot targets are eq(targets, arange(C)) cast to the
// scores' dtype; ignored targets are a mask), so it differentiates eagerly
// and traces into a graph like any model code.
//
// reduction: "mean" (the default), "sum", or "none" (per-sample losses,
// the scores' shape without the class dim for the class losses and the
// input shape for the elementwise ones); kl_div also takes "batchmean". Bad inputs throw tc::Error
// (InvalidArgument) naming the loss, what was expected and what came.
// Values are not range-checked (that would read data, which a traced graph
// cannot): a class target outside [0, C) that is not ignore_index matches no
// class, and binary_cross_entropy's probabilities must lie in [0, 1].
//
//   Tensor loss = nn::cross_entropy(logits, labels);              // [N, C], i64 [N]
//   Tensor smooth = nn::cross_entropy(logits, labels, "sum", 0.1);
//   Tensor weighted = nn::cross_entropy(logits, labels, {.weight = w, .ignore_index = 0});
#ifndef TENSORCUT_NN_LOSSES_H_
#define TENSORCUT_NN_LOSSES_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "runtime/ops.h"

namespace tc::nn {

// The options of cross_entropy and nll_loss, with PyTorch's defaults.
struct ClassLossOptions {
  Tensor weight;                // [C] per-class weights; undefined: all 1
  int64_t ignore_index = -100;  // samples with this target count nowhere
  std::string reduction = "mean";
  double label_smoothing = 0;  // cross_entropy only, in [0, 1]
};

// Scores are [N, C], [N, C, d1, ...] (a loss per sample and position, as
// PyTorch's K-dimensional case) or [C] (one unbatched sample); targets are
// class indices, i64 of the scores' shape without C. Per sample i with
// target y_i (not ignored), w = weight:
//   (1 - s) w[y_i] (-log_softmax(x)_i[y_i]) + s / C sum_c w[c] (-log_softmax(x)_i[c])
// with s = label_smoothing. "mean" divides the sum by sum_i w[y_i] over the
// samples not ignored (PyTorch's weighted mean; NaN when every sample is
// ignored); "none" gives the scores' shape without C.
//
// cross_entropy also takes class probabilities, targets of the logits' type:
// per sample -sum_c w[c] t'_i[c] log_softmax(x)_i[c] with t' = (1 - s) t + s / C;
// "mean" divides by the number of samples; ignore_index does not apply.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const ClassLossOptions& options);
Tensor cross_entropy(const Tensor& logits, const Tensor& targets,
                     absl::string_view reduction = "mean", double label_smoothing = 0);

// -w[y_i] log_probs[i, y_i] per sample, shapes and reduction as cross_entropy's
// with class indices.
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, const ClassLossOptions& options);
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets,
                absl::string_view reduction = "mean");

// Elementwise losses of input against a target of the same floating dtype
// and shape, with d = input - target:
//   mse (d^2); l1 (|d|); smooth_l1 (0.5 d^2 / beta where |d| < beta, else
//   |d| - 0.5 beta; beta = 0 is l1); huber (0.5 d^2 where |d| < delta, else
//   delta (|d| - 0.5 delta)).
Tensor mse_loss(const Tensor& input, const Tensor& target, absl::string_view reduction = "mean");
Tensor l1_loss(const Tensor& input, const Tensor& target, absl::string_view reduction = "mean");
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      absl::string_view reduction = "mean", double beta = 1);
Tensor huber_loss(const Tensor& input, const Tensor& target, absl::string_view reduction = "mean",
                  double delta = 1);

// The options of the binary losses. `weight` broadcasts against the input;
// so does `pos_weight` (with_logits only), weighting the positive term: [C]
// for classes on the last dim, [C, 1, 1] for the channels of NCHW logits.
struct BinaryLossOptions {
  Tensor weight;
  Tensor pos_weight;
  std::string reduction = "mean";
};

// -w (t log p + (1 - t) log(1 - p)) elementwise, each log clamped at -100 as
// in PyTorch; probabilities and targets of the same floating dtype and shape.
// The gradient in p is PyTorch's: w (p - t) / max(p (1 - p), 1e-12).
Tensor binary_cross_entropy(const Tensor& probs, const Tensor& targets,
                            const BinaryLossOptions& options = {});

// The same on sigmoid(x), in the stable form with l = 1 + (pos_weight - 1) t:
//   w ((1 - t) x + l (log(1 + exp(-|x|)) + max(-x, 0))).
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                        const BinaryLossOptions& options);
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                        absl::string_view reduction = "mean");

// KL(target || exp(input)) elementwise, input being log-probabilities:
// target (log target - input), 0 where target is 0; with log_target,
// exp(target) (target - input). "batchmean" divides the sum by input.size(0)
// (the mathematically right mean; "mean" averages over every element, as
// PyTorch's default does).
Tensor kl_div(const Tensor& input, const Tensor& target, absl::string_view reduction = "mean",
              bool log_target = false);

}  // namespace tc::nn

#endif  // TENSORCUT_NN_LOSSES_H_
