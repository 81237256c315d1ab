// The losses of nn/losses.h as modules, as torch.nn's: each holds its
// loss's options and is called on (input, target).
//
//   nn::CrossEntropyLoss criterion({.ignore_index = 0, .label_smoothing = 0.1});
//   Tensor loss = criterion(logits, labels);
//
// Class weights and pos_weight are buffers named "weight" and "pos_weight",
// as PyTorch registers them: copies of the given tensors, in the state_dict
// when given, converted by to(dtype). A traced or compiled loss module takes (input, target) as a
// tuple, which forward(TensorTree) unpacks.
#ifndef TENSORCUT_NN_LOSS_MODULES_H_
#define TENSORCUT_NN_LOSS_MODULES_H_

#include <string>

#include "nn/losses.h"
#include "nn/module.h"

namespace tc::nn {

class Loss : public Module {
 public:
  // The loss of `input` against `target`, through Module::operator() (trace
  // scope and forward hooks) with the tuple (input, target).
  Tensor operator()(const Tensor& input, const Tensor& target);
  using Module::operator();
  // Takes the tuple (input, target); anything else, a single tensor
  // included, is an error naming the module.
  TensorTree forward(const TensorTree& input_and_target) override;
  Tensor forward(const Tensor& input) override;

 protected:
  virtual Tensor loss(const Tensor& input, const Tensor& target) = 0;
  // A copy of `option` registered as the buffer `name`; an undefined option
  // is returned as is.
  Tensor RegisterIfGiven(std::string name, const Tensor& option);
};

class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(ClassLossOptions options = {});

 protected:
  Tensor loss(const Tensor& input, const Tensor& target) override;

 private:
  ClassLossOptions options_;
};

class NLLLoss : public Loss {
 public:
  explicit NLLLoss(ClassLossOptions options = {});

 protected:
  Tensor loss(const Tensor& input, const Tensor& target) override;

 private:
  ClassLossOptions options_;
};

// MSELoss, L1Loss, SmoothL1Loss, HuberLoss and KLDivLoss: a reduction and
// their loss's own parameter.
class MSELoss : public Loss {
 public:
  explicit MSELoss(std::string reduction = "mean");

 protected:
  Tensor loss(const Tensor& input, const Tensor& target) override;

 private:
  std::string reduction_;
};

class L1Loss : public Loss {
 public:
  explicit L1Loss(std::string reduction = "mean");

 protected:
  Tensor loss(const Tensor& input, const Tensor& target) override;

 private:
  std::string reduction_;
};

class SmoothL1Loss : public Loss {
 public:
  explicit SmoothL1Loss(std::string reduction = "mean", double beta = 1);

 protected:
  Tensor loss(const Tensor& input, const Tensor& target) override;

 private:
  std::string reduction_;
  double beta_;
};

class HuberLoss : public Loss {
 public:
  explicit HuberLoss(std::string reduction = "mean", double delta = 1);

 protected:
  Tensor loss(const Tensor& input, const Tensor& target) override;

 private:
  std::string reduction_;
  double delta_;
};

class KLDivLoss : public Loss {
 public:
  explicit KLDivLoss(std::string reduction = "mean", bool log_target = false);

 protected:
  Tensor loss(const Tensor& input, const Tensor& target) override;

 private:
  std::string reduction_;
  bool log_target_;
};

// BCELoss takes weight; BCEWithLogitsLoss also pos_weight.
class BCELoss : public Loss {
 public:
  explicit BCELoss(BinaryLossOptions options = {});

 protected:
  Tensor loss(const Tensor& input, const Tensor& target) override;

 private:
  BinaryLossOptions options_;
};

class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(BinaryLossOptions options = {});

 protected:
  Tensor loss(const Tensor& input, const Tensor& target) override;

 private:
  BinaryLossOptions options_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_LOSS_MODULES_H_
