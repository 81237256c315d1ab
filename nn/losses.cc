#include "nn/losses.h"

#include "absl/strings/str_cat.h"

namespace tc::nn {
namespace {

[[noreturn]] void ThrowInvalid(absl::string_view loss, absl::string_view message) {
  throw Error(absl::InvalidArgumentError(absl::StrCat(loss, ": ", message)));
}

void CheckReduction(absl::string_view loss, absl::string_view reduction) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    ThrowInvalid(loss, absl::StrCat("reduction must be \"mean\", \"sum\" or \"none\", got \"",
                                    reduction, "\""));
  }
}

Tensor Reduce(const Tensor& losses, absl::string_view reduction) {
  if (reduction == "mean") return mean(losses);
  if (reduction == "sum") return sum(losses);
  return losses;
}

// Checks scores [N, C] (floating) against class indices [N] (i64).
void CheckClassInputs(absl::string_view loss, absl::string_view scores_name, const Tensor& scores,
                      const Tensor& targets) {
  if (scores.dim() != 2 || !IsFloating(scores.dtype())) {
    ThrowInvalid(loss, absl::StrCat("expected ", scores_name, " of a floating dtype and shape ",
                                    "[N, C], got ", scores.type().ToString()));
  }
  if (targets.dtype() != DType::kI64 || targets.dim() != 1) {
    ThrowInvalid(loss, absl::StrCat("expected targets i64[N] of class indices, got ",
                                    targets.type().ToString()));
  }
  if (targets.size(0) != scores.size(0)) {
    ThrowInvalid(loss, absl::StrCat("expected targets i64[", DimToString(scores.size(0)),
                                    "] to match ", scores_name, " ", scores.type().ToString(),
                                    ", got ", targets.type().ToString()));
  }
}

// Checks two same-dtype, same-shape floating tensors.
void CheckPair(absl::string_view loss, absl::string_view a_name, const Tensor& a,
               absl::string_view b_name, const Tensor& b) {
  if (!IsFloating(a.dtype())) {
    ThrowInvalid(
        loss, absl::StrCat("expected ", a_name, " of a floating dtype, got ", a.type().ToString()));
  }
  if (a.type() != b.type()) {
    ThrowInvalid(loss, absl::StrCat("expected ", b_name, " ", a.type().ToString(), " like ", a_name,
                                    ", got ", b.type().ToString()));
  }
}

// [N] class indices -> [N, C] one-hot rows in `dtype`.
Tensor OneHot(const Tensor& targets, int64_t num_classes, DType dtype) {
  return cast(eq(reshape(targets, {targets.size(0), 1}), arange(num_classes)), dtype);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, absl::string_view reduction,
                     double label_smoothing) {
  CheckClassInputs("cross_entropy", "logits", logits, targets);
  CheckReduction("cross_entropy", reduction);
  if (!(label_smoothing >= 0 && label_smoothing <= 1)) {
    ThrowInvalid("cross_entropy",
                 absl::StrCat("label_smoothing must be in [0, 1], got ", label_smoothing));
  }
  const int64_t c = logits.size(1);
  Tensor q = OneHot(targets, c, logits.dtype());
  if (label_smoothing > 0) q = q * (1 - label_smoothing) + label_smoothing / c;
  return Reduce(-sum(q * log_softmax(logits, 1), {1}), reduction);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, absl::string_view reduction) {
  CheckClassInputs("nll_loss", "log_probs", log_probs, targets);
  CheckReduction("nll_loss", reduction);
  Tensor picked = sum(OneHot(targets, log_probs.size(1), log_probs.dtype()) * log_probs, {1});
  return Reduce(-picked, reduction);
}

Tensor mse_loss(const Tensor& a, const Tensor& b, absl::string_view reduction) {
  CheckPair("mse_loss", "input", a, "target", b);
  CheckReduction("mse_loss", reduction);
  Tensor d = a - b;
  return Reduce(d * d, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                        absl::string_view reduction) {
  CheckPair("binary_cross_entropy_with_logits", "logits", logits, "targets", targets);
  CheckReduction("binary_cross_entropy_with_logits", reduction);
  // maximum splits the gradient at x = 0 evenly, which gives the exact
  // derivative sigmoid(0) - t there (relu would drop the 1/2).
  Tensor positive = maximum(logits, zeros({}, logits.dtype()));
  Tensor losses = positive - logits * targets + log(exp(-abs(logits)) + 1.0);
  return Reduce(losses, reduction);
}

}  // namespace tc::nn
