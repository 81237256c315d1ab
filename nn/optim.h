// Optimizers, as torch.optim: SGD (momentum, dampening, Nesterov, weight decay),
// Adam and AdamW, with exactly PyTorch's update formulas.
//
//   nn::Adam opt(model.named_parameters(), /*lr=*/1e-3);
//   for (...) {
//     opt.zero_grad();
//     loss(model(x), y).backward();
//     opt.step();
//   }
//   nn::save(model, "ckpt.safetensors", &opt);  // nn/checkpoint.h
//
// Updates run in place on each parameter's storage (f32 or f64, contiguous),
// so every handle to a parameter sees them. State buffers are allocated once,
// at construction: a step allocates nothing. Parameters whose grad is
// undefined are skipped, and their step count does not advance (as PyTorch).
#ifndef TENSORCUT_NN_OPTIM_H_
#define TENSORCUT_NN_OPTIM_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "nn/module.h"

namespace tc::nn {

// Optimizer state names start with this prefix: "optim.<key>.<slot>".
inline constexpr absl::string_view kOptimizerStatePrefix = "optim.";

// The parameters an optimizer updates, each with the key its state is saved
// under: the position ("0", "1", ...) for a plain list, the fully qualified
// name for a module's named_parameters().
struct ParamList {
  ParamList(std::vector<Tensor> params);  // NOLINT: implicit on purpose
  ParamList(std::initializer_list<Tensor> params);
  ParamList(NamedTensors named);  // NOLINT: implicit on purpose

  NamedTensors entries;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter whose grad is defined, without recording autograd.
  // Throws tc::Error when a parameter no longer matches its state (its dtype or
  // shape changed since construction) or its grad has another type.
  void step();
  // Clears every parameter's grad (PyTorch's default, set_to_none=True).
  void zero_grad();

  // "SGD", "Adam" or "AdamW".
  absl::string_view name() const { return name_; }
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  const NamedTensors& params() const { return params_; }

  // The state, per parameter in order: "optim.<key>.step" (i64 scalar) then
  // the optimizer's buffers ("optim.<key>.momentum_buffer", "optim.<key>.exp_avg",
  // ...). The tensors are the live state (as PyTorch's state_dict): clone them
  // to keep a snapshot.
  NamedTensors state() const;
  // Copies `state` into this optimizer's state after checking that it has
  // exactly the names, dtypes and shapes of state() and non-negative step
  // counts; on error nothing changes.
  absl::Status load_state(const NamedTensors& state);

 protected:
  // `slots` names the per-parameter buffers the subclass needs, each allocated
  // with the parameter's dtype and shape, zero-filled. Throws tc::Error for a
  // parameter that is undefined, not f32/f64, not contiguous or listed twice.
  Optimizer(absl::string_view name, ParamList params, double lr, std::vector<std::string> slots);

  // Updates one parameter from its grad (same type, contiguous). `slots` are
  // its buffers in the order given to the constructor; `step` counts this
  // update (1 on the first).
  virtual void Update(const Tensor& param, const Tensor& grad, absl::Span<const Tensor> slots,
                      int64_t step) = 0;

  std::string name_;  // "SGD", "Adam", ...: prefixes error messages

 private:
  NamedTensors params_;
  std::vector<std::string> slot_names_;
  std::vector<Tensor> steps_;               // one i64 scalar per parameter
  std::vector<std::vector<Tensor>> slots_;  // per parameter, in slot_names_ order
  double lr_;
};

// torch.optim.SGD: with g the grad,
//   g += weight_decay * p
//   buf = g on the first step, else momentum * buf + (1 - dampening) * g
//   g = nesterov ? g + momentum * buf : buf          (when momentum != 0)
//   p -= lr * g
class SGD : public Optimizer {
 public:
  SGD(ParamList params, double lr, double momentum = 0, double dampening = 0,
      double weight_decay = 0, bool nesterov = false);

 private:
  void Update(const Tensor& param, const Tensor& grad, absl::Span<const Tensor> slots,
              int64_t step) override;

  double momentum_, dampening_, weight_decay_;
  bool nesterov_;
};

// torch.optim.Adam: with g the grad and t the step,
//   g += weight_decay * p                                   (L2 penalty)
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
class Adam : public Optimizer {
 public:
  Adam(ParamList params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
       double eps = 1e-8, double weight_decay = 0);

 protected:
  // decoupled: AdamW's weight decay, p *= 1 - lr * weight_decay before the update.
  Adam(absl::string_view name, ParamList params, double lr, double beta1, double beta2, double eps,
       double weight_decay, bool decoupled);

 private:
  void Update(const Tensor& param, const Tensor& grad, absl::Span<const Tensor> slots,
              int64_t step) override;

  double beta1_, beta2_, eps_, weight_decay_;
  bool decoupled_;
};

// torch.optim.AdamW: Adam with decoupled weight decay, p *= 1 - lr * weight_decay
// before Adam's update (and no L2 term in the grad).
class AdamW : public Adam {
 public:
  AdamW(ParamList params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
        double eps = 1e-8, double weight_decay = 1e-2);
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_OPTIM_H_
