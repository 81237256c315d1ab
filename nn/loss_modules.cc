#include "nn/loss_modules.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace tc::nn {
Tensor Loss::operator()(const Tensor& input, const Tensor& target) {
  return Module::operator()(
             TensorTree::Tuple({TensorTree::MakeLeaf(input), TensorTree::MakeLeaf(target)}))
      .leaf();
}

Tensor Loss::RegisterIfGiven(std::string name, const Tensor& option) {
  // A copy, so that to(dtype) converts the module's buffer, not the caller's tensor.
  return option.defined() ? register_buffer(std::move(name), option.detach().clone()) : option;
}

TensorTree Loss::forward(const TensorTree& input_and_target) {
  if (input_and_target.is_leaf() || !input_and_target.keys().empty() ||
      input_and_target.items().size() != 2 || !input_and_target[0].is_leaf() ||
      !input_and_target[1].is_leaf()) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat(type_name(), ": expected the tuple (input, target), got ",
                     tc::ToString(Flatten(input_and_target).second))));
  }
  return TensorTree::MakeLeaf(loss(input_and_target[0].leaf(), input_and_target[1].leaf()));
}

Tensor Loss::forward(const Tensor& input) { return forward(TensorTree::MakeLeaf(input)).leaf(); }

CrossEntropyLoss::CrossEntropyLoss(ClassLossOptions options) : options_(std::move(options)) {
  options_.weight = RegisterIfGiven("weight", options_.weight);
}
Tensor CrossEntropyLoss::loss(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, options_);
}

NLLLoss::NLLLoss(ClassLossOptions options) : options_(std::move(options)) {
  options_.weight = RegisterIfGiven("weight", options_.weight);
}
Tensor NLLLoss::loss(const Tensor& input, const Tensor& target) {
  return nll_loss(input, target, options_);
}

MSELoss::MSELoss(std::string reduction) : reduction_(std::move(reduction)) {}
Tensor MSELoss::loss(const Tensor& input, const Tensor& target) {
  return mse_loss(input, target, reduction_);
}

L1Loss::L1Loss(std::string reduction) : reduction_(std::move(reduction)) {}
Tensor L1Loss::loss(const Tensor& input, const Tensor& target) {
  return l1_loss(input, target, reduction_);
}

SmoothL1Loss::SmoothL1Loss(std::string reduction, double beta)
    : reduction_(std::move(reduction)), beta_(beta) {}
Tensor SmoothL1Loss::loss(const Tensor& input, const Tensor& target) {
  return smooth_l1_loss(input, target, reduction_, beta_);
}

HuberLoss::HuberLoss(std::string reduction, double delta)
    : reduction_(std::move(reduction)), delta_(delta) {}
Tensor HuberLoss::loss(const Tensor& input, const Tensor& target) {
  return huber_loss(input, target, reduction_, delta_);
}

KLDivLoss::KLDivLoss(std::string reduction, bool log_target)
    : reduction_(std::move(reduction)), log_target_(log_target) {}
Tensor KLDivLoss::loss(const Tensor& input, const Tensor& target) {
  return kl_div(input, target, reduction_, log_target_);
}

BCELoss::BCELoss(BinaryLossOptions options) : options_(std::move(options)) {
  options_.weight = RegisterIfGiven("weight", options_.weight);
}
Tensor BCELoss::loss(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy(input, target, options_);
}

BCEWithLogitsLoss::BCEWithLogitsLoss(BinaryLossOptions options) : options_(std::move(options)) {
  options_.weight = RegisterIfGiven("weight", options_.weight);
  options_.pos_weight = RegisterIfGiven("pos_weight", options_.pos_weight);
}
Tensor BCEWithLogitsLoss::loss(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy_with_logits(input, target, options_);
}

}  // namespace tc::nn
