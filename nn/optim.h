// Optimizers, as torch.optim: SGD (momentum, dampening, Nesterov, weight decay),
// Adam, AdamW, RMSprop and Adagrad, with exactly PyTorch's update formulas
// and parameter groups with hyper-parameters of their own.
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
// so every handle to a parameter sees them; a step updates every parameter
// in one pass split between the intra-op threads (runtime/threads.h). State buffers are allocated
// once, at construction: a step allocates nothing. Parameters whose grad is undefined are skipped,
// and their step count does not advance (as PyTorch).
#ifndef TENSORCUT_NN_OPTIM_H_
#define TENSORCUT_NN_OPTIM_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "nn/module.h"

namespace tc::nn {

// Optimizer state names start with this prefix: "optim.<key>.<slot>", and
// the groups' hyper-parameters "optim.param_groups.<group>.<option>".
inline constexpr absl::string_view kOptimizerStatePrefix = "optim.";

// The parameters an optimizer updates, each with the key its state is saved
// under: the position ("0", "1", ...) for a plain list, counted across every
// group as PyTorch counts them; the fully qualified name for a module's
// named_parameters().
struct ParamList {
  ParamList(std::vector<Tensor> params);  // NOLINT: implicit on purpose
  ParamList(std::initializer_list<Tensor> params);
  ParamList(NamedTensors named);  // NOLINT: implicit on purpose

  NamedTensors entries;
  bool positional = false;  // keys are positions, renumbered across groups
};

// A parameter group, as PyTorch's param_groups: parameters and the
// hyper-parameters, by PyTorch's names, in which they differ from the
// optimizer's (its constructor's arguments):
//   nn::SGD sgd({{body->named_parameters()},
//                {head->named_parameters(), {{"lr", 0.1}, {"weight_decay", 0}}}},
//               /*lr=*/0.01, /*momentum=*/0.9);
struct ParamGroup {
  ParamList params;
  std::map<std::string, double> options = {};
};

// True for the names of the groups' options in a state ("optim.param_groups.0.lr").
bool IsGroupOptionName(absl::string_view name);
// `state` without them.
NamedTensors WithoutGroupOptions(const NamedTensors& state);

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

  // "SGD", "Adam", "AdamW", "RMSprop" or "Adagrad".
  absl::string_view name() const { return name_; }
  // Every parameter, group after group.
  const NamedTensors& params() const { return params_; }

  int num_groups() const { return static_cast<int>(group_options_.size()); }
  // The parameters of group `group`.
  NamedTensors group_params(int group) const;
  // The hyper-parameters' names, "lr" first ("momentum", "beta1", ...).
  const std::vector<std::string>& option_names() const { return option_names_; }
  bool has_option(absl::string_view name) const;
  // A group's hyper-parameter; an unknown name or group throws tc::Error.
  double option(int group, absl::string_view name) const;
  // Sets it (a scheduler's learning rates, momentum cycling); a value the
  // optimizer refuses, or one that needs state buffers (SGD's momentum from
  // 0) after the group's first step, throws tc::Error and changes nothing.
  // Before that step the buffers are made.
  void set_option(int group, absl::string_view name, double value);
  // The rate a group had when the first learning-rate scheduler attached
  // (PyTorch's initial_lr; nn/lr_scheduler.h); unset before.
  std::optional<double> initial_lr(int group) const;
  void set_initial_lr(int group, double lr);
  // The first group's learning rate; set_lr sets every group's.
  double lr() const { return option(0, "lr"); }
  void set_lr(double lr);

  // The state, per parameter in order: "optim.<key>.step" (i64 scalar) then
  // the optimizer's buffers ("optim.<key>.momentum_buffer", "optim.<key>.exp_avg",
  // ...), then each group's hyper-parameters ("optim.param_groups.0.lr", f64
  // scalars). The tensors are the live state (as PyTorch's state_dict): clone
  // them to keep a snapshot.
  NamedTensors state() const;
  // Copies `state` into this optimizer's state after checking that it has
  // exactly the names, dtypes and shapes of state(), non-negative step
  // counts and hyper-parameters this optimizer accepts; on error nothing
  // changes. A group option the state lacks keeps its value (a state saved
  // before the options were, or before an option was added).
  absl::Status load_state(const NamedTensors& state);
  // state() without the group options `saved` lacks: what a saved state is
  // checked against (the options it lacks keep their values; every option,
  // for a state saved before they were; Adam's amsgrad, before it was).
  NamedTensors state_for(const NamedTensors& saved) const;

 protected:
  // What a subclass declares: its hyper-parameters with their values for the
  // groups that do not set them ("lr" first), the state buffers a parameter
  // of a group needs (each allocated with the parameter's dtype and shape,
  // zero-filled), and the check of a group's values ("" when valid, else
  // what is wrong: "invalid momentum -1").
  struct Definition {
    std::string name;
    std::vector<std::pair<std::string, double>> defaults;
    std::vector<std::string> (*slots)(absl::Span<const double> options);
    std::string (*check)(absl::Span<const double> options);
  };

  // Throws tc::Error for a parameter that is undefined, not f32/f64, not
  // contiguous or listed twice, an empty group list, an unknown option name,
  // or values `check` refuses.
  Optimizer(Definition definition, std::vector<ParamGroup> groups);

  // One parameter's update: its grad (same type, contiguous); `slots` are
  // its buffers, named by `slot_names` (what `slots` asked for when they were
  // made: a superset of what the current options need); `step` counts this
  // update (1 on the first); `options` are its group's values in the order
  // of `defaults`.
  struct ParamUpdate {
    Tensor param;
    Tensor grad;
    absl::Span<const Tensor> slots;
    absl::Span<const std::string> slot_names;
    int64_t step;
    absl::Span<const double> options;
  };
  // Updates the elements [begin, end) of one parameter. Every update is
  // elementwise: a step runs all parameters' updates as one multi-tensor
  // pass, splitting parameters between threads, which gives the same bits as
  // one call per parameter.
  virtual void Update(const ParamUpdate& update, int64_t begin, int64_t end) = 0;

  // A parameter's buffers, for a subclass that starts them at other values
  // than zero (Adagrad's initial_accumulator_value).
  absl::Span<const Tensor> slots_of(size_t param) const { return slots_[param]; }
  int group_of(size_t param) const { return group_of_[param]; }

  std::string name_;  // "SGD", "Adam", ...: prefixes error messages

 private:
  // What is wrong with a group's values (the learning rate, then `check`);
  // "" when they are valid.
  std::string Check(absl::Span<const double> values) const;
  int OptionIndex(absl::string_view name) const;  // throws for an unknown name
  void RequireGroup(int group) const;             // throws for an unknown group
  std::vector<double> GroupValues(int group) const;

  Definition definition_;
  std::vector<std::string> option_names_;
  NamedTensors params_;
  std::vector<int> group_of_;                         // per parameter
  std::vector<std::vector<std::string>> slot_names_;  // per parameter
  std::vector<Tensor> steps_;                         // one i64 scalar per parameter
  std::vector<std::vector<Tensor>> slots_;            // per parameter, in slot_names_ order
  // Per group, one f64 scalar per option: live state, saved in checkpoints.
  std::vector<std::vector<Tensor>> group_options_;
  std::vector<std::optional<double>> initial_lrs_;  // per group
  // A step's work, kept to allocate nothing per step: each group's values,
  // then the parameters it updates and their sizes.
  std::vector<std::vector<double>> step_options_;
  std::vector<ParamUpdate> updates_;
  std::vector<int64_t> update_sizes_;
};

// Each optimizer takes either one list of parameters or parameter groups,
// then its hyper-parameters, which are the values of the groups that do not
// set their own; the option names are the arguments' names.

// torch.optim.SGD: with g the grad,
//   g += weight_decay * p
//   buf = g on the first step, else momentum * buf + (1 - dampening) * g
//   g = nesterov ? g + momentum * buf : buf          (when momentum != 0)
//   p -= lr * g
// Options lr, momentum, dampening, weight_decay, nesterov (0 or 1). The
// momentum buffers exist for groups built with a momentum.
class SGD : public Optimizer {
 public:
  SGD(ParamList params, double lr = 1e-3, double momentum = 0, double dampening = 0,
      double weight_decay = 0, bool nesterov = false);
  SGD(std::vector<ParamGroup> groups, double lr = 1e-3, double momentum = 0, double dampening = 0,
      double weight_decay = 0, bool nesterov = false);

 private:
  void Update(const ParamUpdate& update, int64_t begin, int64_t end) override;
};

// torch.optim.Adam: with g the grad and t the step,
//   g += weight_decay * p                                   (L2 penalty)
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   amsgrad: v_max = max(v_max, v), which takes v's place below
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Options lr, beta1, beta2, eps, weight_decay, amsgrad (0 or 1); PyTorch's
// betas as two options, and as a pair in the constructors that take one:
//   nn::Adam adam(model.named_parameters(), 1e-3, {0.9, 0.98}, 1e-9);
// State exp_avg, exp_avg_sq, and max_exp_avg_sq where a group uses amsgrad.
class Adam : public Optimizer {
 public:
  Adam(ParamList params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
       double eps = 1e-8, double weight_decay = 0, bool amsgrad = false);
  Adam(std::vector<ParamGroup> groups, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
       double eps = 1e-8, double weight_decay = 0, bool amsgrad = false);
  Adam(ParamList params, double lr, std::pair<double, double> betas, double eps = 1e-8,
       double weight_decay = 0, bool amsgrad = false);
  Adam(std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas,
       double eps = 1e-8, double weight_decay = 0, bool amsgrad = false);

 protected:
  // decoupled: AdamW's weight decay, p *= 1 - lr * weight_decay before the update.
  Adam(absl::string_view name, std::vector<ParamGroup> groups, double lr, double beta1,
       double beta2, double eps, double weight_decay, bool amsgrad, bool decoupled);

 private:
  void Update(const ParamUpdate& update, int64_t begin, int64_t end) override;

  bool decoupled_;
};

// torch.optim.AdamW: Adam with decoupled weight decay, p *= 1 - lr * weight_decay
// before Adam's update (and no L2 term in the grad).
class AdamW : public Adam {
 public:
  AdamW(ParamList params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
        double eps = 1e-8, double weight_decay = 1e-2, bool amsgrad = false);
  AdamW(std::vector<ParamGroup> groups, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
        double eps = 1e-8, double weight_decay = 1e-2, bool amsgrad = false);
  AdamW(ParamList params, double lr, std::pair<double, double> betas, double eps = 1e-8,
        double weight_decay = 1e-2, bool amsgrad = false);
  AdamW(std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas,
        double eps = 1e-8, double weight_decay = 1e-2, bool amsgrad = false);
};

// torch.optim.RMSprop: with g the grad,
//   g += weight_decay * p
//   v = alpha * v + (1 - alpha) * g^2                       (square_avg)
//   centered: a = a + (1 - alpha) * (g - a), v' = v - a^2   (grad_avg)
//   d = sqrt(v') + eps
//   momentum > 0: buf = momentum * buf + g / d, p -= lr * buf
//   else:         p -= lr * g / d
// Options lr, alpha, eps, weight_decay, momentum, centered (0 or 1); state
// square_avg, then momentum_buffer and grad_avg where the group needs them.
class RMSprop : public Optimizer {
 public:
  RMSprop(ParamList params, double lr = 1e-2, double alpha = 0.99, double eps = 1e-8,
          double weight_decay = 0, double momentum = 0, bool centered = false);
  RMSprop(std::vector<ParamGroup> groups, double lr = 1e-2, double alpha = 0.99, double eps = 1e-8,
          double weight_decay = 0, double momentum = 0, bool centered = false);

 private:
  void Update(const ParamUpdate& update, int64_t begin, int64_t end) override;
};

// torch.optim.Adagrad: with g the grad and t the step,
//   g += weight_decay * p
//   s += g^2                       (sum, starting at initial_accumulator_value)
//   p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)
// Options lr, lr_decay, weight_decay, initial_accumulator_value, eps.
class Adagrad : public Optimizer {
 public:
  Adagrad(ParamList params, double lr = 1e-2, double lr_decay = 0, double weight_decay = 0,
          double initial_accumulator_value = 0, double eps = 1e-10);
  Adagrad(std::vector<ParamGroup> groups, double lr = 1e-2, double lr_decay = 0,
          double weight_decay = 0, double initial_accumulator_value = 0, double eps = 1e-10);

 private:
  void Update(const ParamUpdate& update, int64_t begin, int64_t end) override;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_OPTIM_H_
