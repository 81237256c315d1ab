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

// The class dim of scores [C] (unbatched), [N, C] or [N, C, d1, ...].
int64_t ClassDim(const Tensor& scores) { return scores.dim() == 1 ? 0 : 1; }

// The scores' shape without the class dim: one loss per entry.
Shape SampleShape(const Tensor& scores) {
  Shape shape = scores.shape();
  shape.erase(shape.begin() + ClassDim(scores));
  return shape;
}

// Checks floating scores against class indices (i64 of the sample shape)
// or, where `probabilities` allows them, class probabilities (the scores'
// type), and a class weight [C] of the scores' dtype when there is one.
void CheckClassInputs(absl::string_view loss, absl::string_view scores_name, const Tensor& scores,
                      const Tensor& targets, const ClassLossOptions& options, bool probabilities) {
  if (scores.dim() < 1 || !IsFloating(scores.dtype())) {
    ThrowInvalid(loss,
                 absl::StrCat("expected ", scores_name, " of a floating dtype and shape ",
                              "[C], [N, C] or [N, C, d1, ...], got ", scores.type().ToString()));
  }
  const TensorType indices{DType::kI64, SampleShape(scores)};
  const bool ok = targets.type() == indices || (probabilities && targets.type() == scores.type());
  if (!ok) {
    ThrowInvalid(loss, absl::StrCat("expected targets ", indices.ToString(), " of class indices",
                                    probabilities ? absl::StrCat(" or ", scores.type().ToString(),
                                                                 " of class probabilities")
                                                  : "",
                                    " for ", scores_name, " ", scores.type().ToString(), ", got ",
                                    targets.type().ToString()));
  }
  const Tensor& w = options.weight;
  const int64_t classes = scores.size(ClassDim(scores));
  if (w.defined() && (w.dim() != 1 || w.size(0) != classes || w.dtype() != scores.dtype())) {
    ThrowInvalid(loss, absl::StrCat("expected weight ", DTypeName(scores.dtype()), "[", classes,
                                    "], one per class, got ", w.type().ToString()));
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

// Scores [C], [N, C] or [N, C, d1, ...] as rows [M, C], one per sample
// (the class dim moved last).
Tensor AsRows(const Tensor& scores) {
  const int64_t classes = scores.size(ClassDim(scores));
  if (scores.dim() == 2) return scores;
  if (scores.dim() == 1) return reshape(scores, {1, classes});
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < scores.dim(); ++d) dims.push_back(d);
  dims.push_back(1);
  return reshape(permute(scores, dims), {-1, classes});
}

// Class indices of the sample shape as [M].
Tensor Flat(const Tensor& targets) { return targets.dim() == 1 ? targets : reshape(targets, {-1}); }

// Per-sample losses [M] back in the sample shape, or reduced.
Tensor Finish(const Tensor& losses, const Shape& sample_shape, absl::string_view reduction) {
  if (reduction != "none") return Reduce(losses, reduction);
  return sample_shape.size() == 1 ? losses : reshape(losses, sample_shape);
}

// The class losses from log-probabilities [M, C] against class indices [M]:
// the weighted picked term and, for label smoothing, the weighted sum over
// every class, reduced by PyTorch's rule (a weighted mean over the samples
// not ignored).
Tensor IndexLoss(const Tensor& log_probs, const Tensor& targets, const ClassLossOptions& options,
                 const Shape& sample_shape) {
  const int64_t c = log_probs.size(1);
  const DType dtype = log_probs.dtype();
  // A target out of range would match no class and lose silently.
  const Tensor checked = check_class_index(targets, c, options.ignore_index);
  const Tensor is_target = eq(reshape(checked, {checked.size(0), 1}), arange(c));
  const Tensor one_hot = cast(is_target, dtype);
  const Tensor kept =
      cast(ne(checked, scalar(static_cast<double>(options.ignore_index), DType::kI64)), dtype);
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
  return Finish(losses, sample_shape, options.reduction);
}

// Against class probabilities [M, C], smoothed towards uniform:
// -sum_c w[c] t'[c] log_probs[c] with t' = (1 - s) t + s / C; "mean" is over
// the samples (PyTorch's rule for probability targets; ignore_index plays no
// part).
Tensor ProbabilityLoss(const Tensor& log_probs, const Tensor& probs,
                       const ClassLossOptions& options, const Shape& sample_shape) {
  const double s = options.label_smoothing;
  const double c = static_cast<double>(log_probs.size(1));
  Tensor terms = log_probs * (s > 0 ? probs * (1 - s) + s / c : probs);
  if (options.weight.defined()) terms = terms * options.weight;
  return Finish(-sum(terms, {1}), sample_shape, options.reduction);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const ClassLossOptions& options) {
  CheckClassInputs("cross_entropy", "logits", logits, targets, options, /*probabilities=*/true);
  const double s = options.label_smoothing;
  if (!(s >= 0 && s <= 1)) {
    ThrowInvalid("cross_entropy", absl::StrCat("label_smoothing must be in [0, 1], got ", s));
  }
  const Tensor log_probs = log_softmax(AsRows(logits), 1);
  const Shape sample_shape = SampleShape(logits);
  if (IsFloating(targets.dtype())) {
    return ProbabilityLoss(log_probs, AsRows(targets), options, sample_shape);
  }
  return IndexLoss(log_probs, Flat(targets), options, sample_shape);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, absl::string_view reduction,
                     double label_smoothing) {
  return cross_entropy(
      logits, targets,
      ClassLossOptions{.reduction = std::string(reduction), .label_smoothing = label_smoothing});
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, const ClassLossOptions& options) {
  CheckClassInputs("nll_loss", "log_probs", log_probs, targets, options, /*probabilities=*/false);
  if (options.label_smoothing != 0) {
    ThrowInvalid("nll_loss", "label_smoothing is a cross_entropy option");
  }
  return IndexLoss(AsRows(log_probs), Flat(targets), options, SampleShape(log_probs));
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
  // The gradient in p is PyTorch's, (p - t) / max(p (1 - p), 1e-12), not the
  // clamped logs' derivative (infinite for a denormal p with t > 0, 0 at
  // p = 0 with t = 1): the value is taken on a detached p, and
  // (p - detach(p)) times that gradient, detached, adds 0 to the value and
  // the gradient to p (a first derivative only, which is all autodiff takes).
  const Tensor p = probs.detach();
  const Tensor p_grad = (p - targets) / maximum(p * (1.0 - p), scalar(1e-12, dtype));
  Tensor losses = -(targets * clamped_log(p) + (1.0 - targets) * clamped_log(1.0 - p)) +
                  (probs - p) * p_grad.detach();
  if (options.weight.defined()) losses = losses * options.weight;
  return Reduce(losses, options.reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                        const BinaryLossOptions& options) {
  constexpr absl::string_view kLoss = "binary_cross_entropy_with_logits";
  CheckPair(kLoss, "logits", logits, "targets", targets);
  CheckReduction(kLoss, options.reduction);
  CheckBroadcastWeight(kLoss, "weight", options.weight, logits);
  CheckBroadcastWeight(kLoss, "pos_weight", options.pos_weight, logits);
  const Tensor& pw = options.pos_weight;
  const DType dtype = logits.dtype();
  // log(1 + exp(-x)) in a form that cannot overflow. maximum splits the
  // gradient at x = 0 evenly, which gives the exact derivative there.
  const Tensor softplus_neg = log1p(exp(-abs(logits))) + maximum(-logits, scalar(0, dtype));
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
