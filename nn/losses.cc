#include "nn/losses.h"

#include "absl/strings/str_cat.h"

namespace tc::nn {
namespace {

[[noreturn]] void ThrowInvalid(absl::string_view loss, absl::string_view message) {
  throw Error(absl::InvalidArgumentError(absl::StrCat(loss, ": ", message)));
}

void CheckReduction(absl::string_view loss, absl::string_view reduction, bool batchmean = false) {
  if (reduction == "mean" || reduction == "sum" || reduction == "none") return;
  if (batchmean && reduction == "batchmean") return;
  ThrowInvalid(
      loss, absl::StrCat("reduction must be \"mean\", \"sum\"", batchmean ? ", \"batchmean\"" : "",
                         " or \"none\", got \"", reduction, "\""));
}

Tensor Reduce(const Tensor& losses, absl::string_view reduction) {
  if (reduction == "mean") return mean(losses);
  if (reduction == "sum") return sum(losses);
  return losses;
}

// Checks scores [N, C] (floating) against class indices [N] (i64), and a
// class weight [C] of the scores' dtype when there is one.
void CheckClassInputs(absl::string_view loss, absl::string_view scores_name, const Tensor& scores,
                      const Tensor& targets, const ClassLossOptions& options) {
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
  const Tensor& w = options.weight;
  if (w.defined() && (w.dim() != 1 || w.size(0) != scores.size(1) || w.dtype() != scores.dtype())) {
    ThrowInvalid(loss, absl::StrCat("expected weight ", DTypeName(scores.dtype()), "[",
                                    scores.size(1), "], one per class, got ", w.type().ToString()));
  }
  CheckReduction(loss, options.reduction);
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

// A weight that must broadcast against `like` (same dtype).
void CheckBroadcastWeight(absl::string_view loss, absl::string_view name, const Tensor& w,
                          const Tensor& like) {
  if (!w.defined()) return;
  const absl::StatusOr<Shape> joint = BroadcastShapes(w.shape(), like.shape());
  if (w.dtype() != like.dtype() || !joint.ok() || *joint != like.shape()) {
    ThrowInvalid(loss, absl::StrCat("expected ", name, " of dtype ", DTypeName(like.dtype()),
                                    " that broadcasts to ", like.type().ToString(), ", got ",
                                    w.type().ToString()));
  }
}

// The class losses from log-probabilities: the weighted picked term and, for
// label smoothing, the weighted sum over every class, reduced by PyTorch's
// rule (a weighted mean over the samples not ignored).
Tensor ClassLoss(const Tensor& log_probs, const Tensor& targets, const ClassLossOptions& options) {
  const int64_t c = log_probs.size(1);
  const DType dtype = log_probs.dtype();
  const Tensor is_target = eq(reshape(targets, {targets.size(0), 1}), arange(c));
  const Tensor one_hot = cast(is_target, dtype);
  const Tensor kept =
      cast(ne(targets, scalar(static_cast<double>(options.ignore_index), DType::kI64)), dtype);
  const Tensor& w = options.weight;
  // w[y_i] for the samples kept, 0 for the ignored.
  const Tensor sample_weight = w.defined() ? sum(one_hot * w, {1}) * kept : kept;
  // The target's entry selected, not multiplied out: another class's -inf
  // log-probability must not turn the loss into 0 * -inf.
  Tensor losses = -sum(where(is_target, log_probs, scalar(0, dtype)), {1}) * sample_weight;
  const double s = options.label_smoothing;
  if (s > 0) {
    const Tensor all = w.defined() ? log_probs * w : log_probs;
    losses = losses * (1 - s) + (-sum(all, {1}) * kept) * (s / static_cast<double>(c));
  }
  if (options.reduction == "mean") return sum(losses) / sum(sample_weight);
  return Reduce(losses, options.reduction);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const ClassLossOptions& options) {
  CheckClassInputs("cross_entropy", "logits", logits, targets, options);
  const double s = options.label_smoothing;
  if (!(s >= 0 && s <= 1)) {
    ThrowInvalid("cross_entropy", absl::StrCat("label_smoothing must be in [0, 1], got ", s));
  }
  return ClassLoss(log_softmax(logits, 1), targets, options);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, absl::string_view reduction,
                     double label_smoothing) {
  return cross_entropy(
      logits, targets,
      ClassLossOptions{.reduction = std::string(reduction), .label_smoothing = label_smoothing});
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, const ClassLossOptions& options) {
  CheckClassInputs("nll_loss", "log_probs", log_probs, targets, options);
  if (options.label_smoothing != 0) {
    ThrowInvalid("nll_loss", "label_smoothing is a cross_entropy option");
  }
  return ClassLoss(log_probs, targets, options);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, absl::string_view reduction) {
  return nll_loss(log_probs, targets, ClassLossOptions{.reduction = std::string(reduction)});
}

Tensor mse_loss(const Tensor& input, const Tensor& target, absl::string_view reduction) {
  CheckPair("mse_loss", "input", input, "target", target);
  CheckReduction("mse_loss", reduction);
  const Tensor d = input - target;
  return Reduce(d * d, reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, absl::string_view reduction) {
  CheckPair("l1_loss", "input", input, "target", target);
  CheckReduction("l1_loss", reduction);
  return Reduce(abs(input - target), reduction);
}

namespace {

// 0.5 d^2 / scale where |d| < bound, else slope (|d| - 0.5 bound): smooth L1
// is (bound, scale, slope) = (beta, beta, 1), Huber (delta, 1, delta).
Tensor QuadraticNearZero(const Tensor& d, double bound, double scale, double slope) {
  const Tensor magnitude = abs(d);
  return where(lt(magnitude, scalar(bound, d.dtype())), d * d * (0.5 / scale),
               (magnitude - 0.5 * bound) * slope);
}

}  // namespace

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, absl::string_view reduction,
                      double beta) {
  CheckPair("smooth_l1_loss", "input", input, "target", target);
  CheckReduction("smooth_l1_loss", reduction);
  if (!(beta >= 0)) ThrowInvalid("smooth_l1_loss", absl::StrCat("beta must be >= 0, got ", beta));
  const Tensor d = input - target;
  return Reduce(beta == 0 ? abs(d) : QuadraticNearZero(d, beta, beta, 1), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, absl::string_view reduction,
                  double delta) {
  CheckPair("huber_loss", "input", input, "target", target);
  CheckReduction("huber_loss", reduction);
  if (!(delta > 0)) ThrowInvalid("huber_loss", absl::StrCat("delta must be > 0, got ", delta));
  return Reduce(QuadraticNearZero(input - target, delta, 1, delta), reduction);
}

Tensor binary_cross_entropy(const Tensor& probs, const Tensor& targets,
                            const BinaryLossOptions& options) {
  CheckPair("binary_cross_entropy", "probs", probs, "targets", targets);
  CheckReduction("binary_cross_entropy", options.reduction);
  CheckBroadcastWeight("binary_cross_entropy", "weight", options.weight, probs);
  if (options.pos_weight.defined()) {
    ThrowInvalid("binary_cross_entropy", "pos_weight is a binary_cross_entropy_with_logits option");
  }
  // log(p) clamped at -100; at p = 0 the log sees 1 instead, so neither
  // value nor gradient becomes infinite.
  const DType dtype = probs.dtype();
  auto clamped_log = [&](const Tensor& p) {
    const Tensor positive = gt(p, scalar(0, dtype));
    const Tensor log_p = log(where(positive, p, scalar(1, dtype)));
    return maximum(where(positive, log_p, scalar(-100, dtype)), scalar(-100, dtype));
  };
  Tensor losses = -(targets * clamped_log(probs) + (1.0 - targets) * clamped_log(1.0 - probs));
  if (options.weight.defined()) losses = losses * options.weight;
  return Reduce(losses, options.reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                        const BinaryLossOptions& options) {
  constexpr absl::string_view kLoss = "binary_cross_entropy_with_logits";
  CheckPair(kLoss, "logits", logits, "targets", targets);
  CheckReduction(kLoss, options.reduction);
  CheckBroadcastWeight(kLoss, "weight", options.weight, logits);
  const Tensor& pw = options.pos_weight;
  if (pw.defined() && (logits.dim() == 0 || pw.dim() != 1 || pw.size(0) != logits.size(-1) ||
                       pw.dtype() != logits.dtype())) {
    ThrowInvalid(kLoss,
                 absl::StrCat("expected pos_weight ", DTypeName(logits.dtype()), "[",
                              logits.dim() == 0 ? 1 : logits.size(-1),
                              "], one per class of the last dim, got ", pw.type().ToString()));
  }
  const DType dtype = logits.dtype();
  // log(1 + exp(-x)) in a form that cannot overflow. maximum splits the
  // gradient at x = 0 evenly, which gives the exact derivative there.
  const Tensor softplus_neg = log(exp(-abs(logits)) + 1.0) + maximum(-logits, scalar(0, dtype));
  const Tensor positive_weight = pw.defined() ? (pw - 1.0) * targets + 1.0 : Tensor();
  Tensor losses = (1.0 - targets) * logits +
                  (positive_weight.defined() ? positive_weight * softplus_neg : softplus_neg);
  if (options.weight.defined()) losses = losses * options.weight;
  return Reduce(losses, options.reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                        absl::string_view reduction) {
  return binary_cross_entropy_with_logits(logits, targets,
                                          BinaryLossOptions{.reduction = std::string(reduction)});
}

Tensor kl_div(const Tensor& input, const Tensor& target, absl::string_view reduction,
              bool log_target) {
  CheckPair("kl_div", "input", input, "target", target);
  CheckReduction("kl_div", reduction, /*batchmean=*/true);
  Tensor losses;
  if (log_target) {
    losses = exp(target) * (target - input);
  } else {
    // target log target is 0 where target is 0 (xlogy); the log sees 1 there.
    const DType dtype = input.dtype();
    const Tensor positive = gt(target, scalar(0, dtype));
    const Tensor xlogx =
        where(positive, target * log(where(positive, target, scalar(1, dtype))), scalar(0, dtype));
    losses = xlogx - target * input;
  }
  if (reduction == "batchmean") {
    const int64_t n = input.dim() == 0 ? 1 : input.size(0);
    return IsSymbolic(n) ? sum(losses) / size_scalar(n, input.dtype())
                         : sum(losses) / static_cast<double>(n);
  }
  return Reduce(losses, reduction);
}

}  // namespace tc::nn
