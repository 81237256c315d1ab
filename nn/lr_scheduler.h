// Learning-rate schedulers, as torch.optim.lr_scheduler's: each sets the
// learning rate of every parameter group of an optimizer (nn/optim.h) once at
// construction (its step 0) and again at every step(), with PyTorch's
// formulas, defaults and edge cases.
//
//   nn::SGD sgd(model.named_parameters(), /*lr=*/0.1, /*momentum=*/0.9);
//   nn::CosineAnnealingLR schedule(sgd, /*t_max=*/100);
//   for (int epoch = 0; epoch < 100; ++epoch) {
//     train_one_epoch(sgd);
//     schedule.step();
//   }
//
// The formulas are PyTorch's recursive ones (each step scales the group's
// current rate), so schedulers chain: ChainedScheduler steps several in turn,
// SequentialLR hands over from one to the next at milestones. Each
// scheduler's base rates are the groups' initial_lr (the rate when the first
// scheduler attached). The state (the step count, the base and last rates,
// and what a scheduler keeps of its own) is saved in checkpoints beside the
// optimizer's (nn/checkpoint.h), so a resumed run steps as an uninterrupted
// one does, bit for bit.
#ifndef TENSORCUT_NN_LR_SCHEDULER_H_
#define TENSORCUT_NN_LR_SCHEDULER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nn/optim.h"

namespace tc::nn {

// State names of a scheduler: "optim.lr_scheduler.<field>", under the
// optimizer's prefix so that a model-only load skips them.
inline constexpr absl::string_view kSchedulerStatePrefix = "optim.lr_scheduler.";

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // One more step (an epoch or an iteration, as the schedule counts them).
  virtual void step();
  // The same, given the metric a schedule may watch: ReduceLROnPlateau's
  // step; the others ignore it. What a loop calls that holds any scheduler.
  virtual void step(double metric);
  // Whether step() needs the metric (ReduceLROnPlateau).
  virtual bool needs_metric() const { return false; }
  // The rates the last step set, one per group.
  const std::vector<double>& get_last_lr() const { return last_lrs_; }
  int64_t last_epoch() const { return last_epoch_; }
  absl::string_view name() const { return name_; }
  Optimizer& optimizer() const { return optimizer_; }

  // A snapshot of the state, as f64 or i64 tensors named
  // "optim.lr_scheduler.<field>" (a chained scheduler's members under
  // "optim.lr_scheduler.<i>.<field>").
  NamedTensors state() const;
  // OK when `state` has exactly state()'s names, dtypes and shapes.
  absl::Status CheckState(const NamedTensors& state) const;
  // Restores a state() after CheckState, and sets the groups' rates to its
  // last rates; on error nothing changes.
  absl::Status load_state(const NamedTensors& state);

 protected:
  // Records each group's initial_lr (its current rate, if no scheduler did).
  LRScheduler(std::string name, Optimizer& optimizer);
  // Step 0, which a subclass's constructor ends with: sets the rates.
  void InitialStep();
  // The rates at last_epoch() from the groups' current ones (PyTorch's get_lr).
  virtual std::vector<double> ComputeLr() = 0;
  // The rates at last_epoch() from the base rates alone (PyTorch's closed
  // form), for SequentialLR's restart of a scheduler at its step 0.
  virtual std::vector<double> ClosedFormLr() { return ComputeLr(); }
  // The fields a subclass keeps beyond the step count and the rates, by
  // name, saved in the state as f64 scalars; and their restoring.
  using Fields = std::vector<std::pair<std::string, double>>;
  virtual Fields ExtraState() const { return {}; }
  virtual void LoadExtraState(const Fields&) {}
  // After load_state has read the state: what a subclass derives from it.
  virtual void Restored() {}
  // The schedulers a composite steps, whose state it saves under "<i>.".
  virtual std::vector<LRScheduler*> Children() const { return {}; }
  // Restarts at step 0 from the closed form (SequentialLR's hand-over).
  void Restart();
  // Sets every group's rate (and last_lrs).
  void Apply(const std::vector<double>& lrs);
  double GroupLr(int group) const { return optimizer_.option(group, "lr"); }
  int num_groups() const { return optimizer_.num_groups(); }

  Optimizer& optimizer_;
  std::string name_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;

 private:
  friend class SequentialLR;  // restarts its schedulers

  // Adds this scheduler's fields, then its children's, to `out` under `prefix`.
  void AppendState(const std::string& prefix, NamedTensors& out) const;
  // Reads them back from a state that CheckState accepted.
  void ReadState(const std::string& prefix, const NamedTensors& state);

  std::vector<double> last_lrs_;
};

// lr * gamma every step_size steps.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> ComputeLr() override;
  std::vector<double> ClosedFormLr() override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr * gamma at each milestone (a milestone listed twice counts twice).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::vector<double> ComputeLr() override;
  std::vector<double> ClosedFormLr() override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr * gamma every step.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  std::vector<double> ComputeLr() override;
  std::vector<double> ClosedFormLr() override;

 private:
  double gamma_;
};

// eta_min + (base - eta_min) (1 + cos(pi t / t_max)) / 2, by PyTorch's
// recursion (which keeps going past t_max, up again and down).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0);

 protected:
  std::vector<double> ComputeLr() override;
  std::vector<double> ClosedFormLr() override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// The rate scaled by a factor going linearly from start_factor to
// end_factor over total_iters steps, then constant (a warm-up).
class LinearLR : public LRScheduler {
 public:
  explicit LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
                    int64_t total_iters = 5);

 protected:
  std::vector<double> ComputeLr() override;
  std::vector<double> ClosedFormLr() override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// The one-cycle policy: from max_lr / div_factor up to max_lr over
// pct_start of total_steps, then down to max_lr / div_factor /
// final_div_factor (three_phase: back to the start first, then down),
// annealed by cosine or linearly; with cycle_momentum the groups' momentum
// (SGD's and RMSprop's "momentum", Adam's "beta1") goes the other way,
// between max_momentum and base_momentum. A step past total_steps throws.
struct OneCycleOptions {
  int64_t total_steps = 0;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // or "linear"
  bool cycle_momentum = true;
  double base_momentum = 0.85, max_momentum = 0.95;
  double div_factor = 25, final_div_factor = 1e4;
  bool three_phase = false;
};
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, const OneCycleOptions& options);
  // One max_lr per parameter group, as PyTorch's list.
  OneCycleLR(Optimizer& optimizer, const std::vector<double>& max_lrs,
             const OneCycleOptions& options);

 protected:
  std::vector<double> ComputeLr() override;
  void Restored() override;  // the momentum of the restored step

 private:
  struct Phase {
    double end_step, start_lr, end_lr, start_momentum, end_momentum;
  };
  double Anneal(double start, double end, double pct) const;

  OneCycleOptions options_;
  std::string momentum_option_;  // "momentum" or "beta1"; "" without cycling
  std::vector<double> initial_lrs_, max_lrs_, min_lrs_;
};

// Scales the rates by `factor` when a metric has not improved for
// `patience` steps: step(metric) instead of step().
struct PlateauOptions {
  std::string mode = "min";  // or "max"
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // or "abs"
  int64_t cooldown = 0;
  double min_lr = 0, eps = 1e-8;
};
class ReduceLROnPlateau : public LRScheduler {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, const PlateauOptions& options = {});
  void step(double metric) override;
  // Without a metric: an error (a plateau needs one).
  void step() override;
  bool needs_metric() const override { return true; }

 protected:
  std::vector<double> ComputeLr() override;
  Fields ExtraState() const override;
  void LoadExtraState(const Fields& fields) override;

 private:
  bool IsBetter(double value) const;

  PlateauOptions options_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0;
};

// Steps every scheduler in turn, each scaling the rate the previous set.
class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);
  void step() override;
  // Each scheduler's step(metric): a ReduceLROnPlateau may be among them.
  void step(double metric) override;
  bool needs_metric() const override;

 protected:
  std::vector<double> ComputeLr() override;
  std::vector<LRScheduler*> Children() const override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

// schedulers[0] until milestones[0], then schedulers[1] restarted at its
// step 0, and so on (a warm-up, then a decay).
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  using LRScheduler::step;

 protected:
  std::vector<double> ComputeLr() override;
  std::vector<LRScheduler*> Children() const override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_LR_SCHEDULER_H_
