#include "nn/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nn/named_tensors.h"
#include "runtime/error.h"
#include "runtime/ops.h"

namespace tc::nn {
namespace {

constexpr double kPi = 3.14159265358979323846;

[[noreturn]] void Fail(absl::string_view scheduler, absl::string_view what) {
  throw Error(absl::InvalidArgumentError(absl::StrCat(scheduler, ": ", what)));
}

void Require(bool ok, absl::string_view scheduler, absl::string_view what) {
  if (!ok) Fail(scheduler, what);
}

Tensor Doubles(const std::vector<double>& values) {
  return from_vector<double>(values, {static_cast<int64_t>(values.size())});
}

}  // namespace

// ---- LRScheduler

LRScheduler::LRScheduler(std::string name, Optimizer& optimizer)
    : optimizer_(optimizer), name_(std::move(name)) {
  for (int g = 0; g < optimizer_.num_groups(); ++g) {
    if (!optimizer_.initial_lr(g).has_value()) optimizer_.set_initial_lr(g, GroupLr(g));
    base_lrs_.push_back(*optimizer_.initial_lr(g));
  }
  last_lrs_.assign(base_lrs_.size(), 0);
  for (int g = 0; g < num_groups(); ++g) last_lrs_[g] = GroupLr(g);
}

void LRScheduler::InitialStep() {
  last_epoch_ = -1;
  step();
}

void LRScheduler::step() {
  ++last_epoch_;
  Apply(ComputeLr());
}

void LRScheduler::Restart() {
  last_epoch_ = 0;
  Apply(ClosedFormLr());
}

void LRScheduler::Apply(const std::vector<double>& lrs) {
  for (int g = 0; g < num_groups(); ++g) optimizer_.set_option(g, "lr", lrs[g]);
  last_lrs_ = lrs;
}

void LRScheduler::AppendState(const std::string& prefix, NamedTensors& out) const {
  out.emplace_back(prefix + "last_epoch", scalar(static_cast<double>(last_epoch_), DType::kI64));
  out.emplace_back(prefix + "base_lrs", Doubles(base_lrs_));
  out.emplace_back(prefix + "last_lrs", Doubles(last_lrs_));
  for (const auto& [field, value] : ExtraState()) {
    out.emplace_back(prefix + field, scalar(value, DType::kF64));
  }
  const std::vector<LRScheduler*> children = Children();
  for (size_t i = 0; i < children.size(); ++i) {
    children[i]->AppendState(absl::StrCat(prefix, i, "."), out);
  }
}

void LRScheduler::ReadState(const std::string& prefix, const NamedTensors& state) {
  absl::flat_hash_map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : state) by_name.emplace(name, &t);
  last_epoch_ = by_name.at(prefix + "last_epoch")->item<int64_t>();
  base_lrs_ = by_name.at(prefix + "base_lrs")->to_vector<double>();
  last_lrs_ = by_name.at(prefix + "last_lrs")->to_vector<double>();
  Fields fields = ExtraState();
  for (auto& [field, value] : fields) value = by_name.at(prefix + field)->item<double>();
  LoadExtraState(fields);
  const std::vector<LRScheduler*> children = Children();
  for (size_t i = 0; i < children.size(); ++i) {
    children[i]->ReadState(absl::StrCat(prefix, i, "."), state);
  }
}

NamedTensors LRScheduler::state() const {
  NamedTensors out;
  AppendState(std::string(kSchedulerStatePrefix), out);
  return out;
}

absl::Status LRScheduler::CheckState(const NamedTensors& state) const {
  const std::string mismatch = DescribeMismatch(this->state(), state, "got");
  if (!mismatch.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, " state does not match the scheduler: ", mismatch));
  }
  for (const auto& [name, t] : state) {
    if (absl::EndsWith(name, "last_epoch") && t.item<int64_t>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(name_, " state: ", name, " is ",
                                                     t.item<int64_t>(), "; it cannot be negative"));
    }
    if (t.dtype() == DType::kF64) {
      for (double v : t.to_vector<double>()) {
        // best may be infinite (nothing seen yet); rates are finite and >= 0.
        const bool rates = absl::EndsWith(name, "_lrs");
        if (std::isnan(v) || (rates && !(v >= 0 && std::isfinite(v)))) {
          return absl::InvalidArgumentError(absl::StrCat(name_, " state: ", name, " holds ", v));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status LRScheduler::load_state(const NamedTensors& state) {
  if (absl::Status s = CheckState(state); !s.ok()) return s;
  ReadState(std::string(kSchedulerStatePrefix), state);
  for (int g = 0; g < num_groups(); ++g) optimizer_.set_option(g, "lr", last_lrs_[g]);
  Restored();
  return absl::OkStatus();
}

// ---- StepLR, MultiStepLR, ExponentialLR

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler("StepLR", optimizer), step_size_(step_size), gamma_(gamma) {
  Require(step_size > 0, name_, absl::StrCat("step_size must be > 0, got ", step_size));
  InitialStep();
}

std::vector<double> StepLR::ComputeLr() {
  std::vector<double> lrs;
  const bool decay = last_epoch_ != 0 && last_epoch_ % step_size_ == 0;
  for (int g = 0; g < num_groups(); ++g) lrs.push_back(GroupLr(g) * (decay ? gamma_ : 1));
  return lrs;
}

std::vector<double> StepLR::ClosedFormLr() {
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_ / step_size_)));
  }
  return lrs;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler("MultiStepLR", optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  absl::c_sort(milestones_);
  InitialStep();
}

std::vector<double> MultiStepLR::ComputeLr() {
  const auto hits = static_cast<double>(absl::c_count(milestones_, last_epoch_));
  std::vector<double> lrs;
  for (int g = 0; g < num_groups(); ++g) lrs.push_back(GroupLr(g) * std::pow(gamma_, hits));
  return lrs;
}

std::vector<double> MultiStepLR::ClosedFormLr() {
  const auto passed = static_cast<double>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, passed));
  return lrs;
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler("ExponentialLR", optimizer), gamma_(gamma) {
  InitialStep();
}

std::vector<double> ExponentialLR::ComputeLr() {
  std::vector<double> lrs;
  for (int g = 0; g < num_groups(); ++g)
    lrs.push_back(GroupLr(g) * (last_epoch_ == 0 ? 1 : gamma_));
  return lrs;
}

std::vector<double> ExponentialLR::ClosedFormLr() {
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
  }
  return lrs;
}

// ---- CosineAnnealingLR

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler("CosineAnnealingLR", optimizer), t_max_(t_max), eta_min_(eta_min) {
  Require(t_max > 0, name_, absl::StrCat("t_max must be > 0, got ", t_max));
  InitialStep();
}

std::vector<double> CosineAnnealingLR::ComputeLr() {
  const double t = static_cast<double>(last_epoch_), period = static_cast<double>(t_max_);
  std::vector<double> lrs;
  for (int g = 0; g < num_groups(); ++g) {
    const double lr = GroupLr(g);
    if (last_epoch_ == 0) {
      lrs.push_back(lr);
    } else if ((last_epoch_ - 1 - t_max_) % (2 * t_max_) == 0) {
      // The bottom of a period: the recursion would divide by zero.
      lrs.push_back(lr + (base_lrs_[g] - eta_min_) * (1 - std::cos(kPi / period)) / 2);
    } else {
      lrs.push_back((1 + std::cos(kPi * t / period)) / (1 + std::cos(kPi * (t - 1) / period)) *
                        (lr - eta_min_) +
                    eta_min_);
    }
  }
  return lrs;
}

std::vector<double> CosineAnnealingLR::ClosedFormLr() {
  const double t = static_cast<double>(last_epoch_), period = static_cast<double>(t_max_);
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(kPi * t / period)) / 2);
  }
  return lrs;
}

// ---- LinearLR

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler("LinearLR", optimizer),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  Require(start_factor > 0 && start_factor <= 1, name_,
          absl::StrCat("start_factor must be in (0, 1], got ", start_factor));
  Require(end_factor >= 0 && end_factor <= 1, name_,
          absl::StrCat("end_factor must be in [0, 1], got ", end_factor));
  Require(total_iters > 0, name_, absl::StrCat("total_iters must be > 0, got ", total_iters));
  InitialStep();
}

std::vector<double> LinearLR::ComputeLr() {
  std::vector<double> lrs;
  for (int g = 0; g < num_groups(); ++g) {
    const double lr = GroupLr(g);
    if (last_epoch_ == 0) {
      lrs.push_back(lr * start_factor_);
    } else if (last_epoch_ > total_iters_) {
      lrs.push_back(lr);
    } else {
      const double slope = end_factor_ - start_factor_;
      lrs.push_back(lr * (1.0 + slope / (static_cast<double>(total_iters_) * start_factor_ +
                                         static_cast<double>(last_epoch_ - 1) * slope)));
    }
  }
  return lrs;
}

std::vector<double> LinearLR::ClosedFormLr() {
  const double progress =
      static_cast<double>(std::min(total_iters_, last_epoch_)) / static_cast<double>(total_iters_);
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(base * (start_factor_ + (end_factor_ - start_factor_) * progress));
  }
  return lrs;
}

// ---- OneCycleLR

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, const OneCycleOptions& options)
    : OneCycleLR(optimizer, std::vector<double>(optimizer.num_groups(), max_lr), options) {}

OneCycleLR::OneCycleLR(Optimizer& optimizer, const std::vector<double>& max_lrs,
                       const OneCycleOptions& options)
    : LRScheduler("OneCycleLR", optimizer), options_(options) {
  Require(static_cast<int>(max_lrs.size()) == num_groups(), name_,
          absl::StrCat("expected one max_lr per parameter group (", num_groups(), "), got ",
                       max_lrs.size()));
  Require(options.total_steps > 0, name_,
          absl::StrCat("total_steps must be > 0, got ", options.total_steps));
  Require(options.pct_start >= 0 && options.pct_start <= 1, name_,
          absl::StrCat("pct_start must be in [0, 1], got ", options.pct_start));
  Require(options.anneal_strategy == "cos" || options.anneal_strategy == "linear", name_,
          absl::StrCat("anneal_strategy must be \"cos\" or \"linear\", got \"",
                       options.anneal_strategy, "\""));
  if (options.cycle_momentum) {
    momentum_option_ = optimizer.has_option("momentum") ? "momentum" : "beta1";
    Require(optimizer.has_option(momentum_option_), name_,
            absl::StrCat(optimizer.name(), " has neither momentum nor beta1 to cycle; ",
                         "pass cycle_momentum = false"));
  }
  for (int g = 0; g < num_groups(); ++g) {
    const double initial = max_lrs[g] / options.div_factor;
    initial_lrs_.push_back(initial);
    max_lrs_.push_back(max_lrs[g]);
    min_lrs_.push_back(initial / options.final_div_factor);
    // The cycle starts from its own initial rate, as PyTorch's sets it.
    optimizer.set_option(g, "lr", initial);
    optimizer.set_initial_lr(g, initial);
    base_lrs_[g] = initial;
    if (!momentum_option_.empty()) optimizer.set_option(g, momentum_option_, options.max_momentum);
  }
  InitialStep();
}

void OneCycleLR::Restored() {
  if (!momentum_option_.empty() && last_epoch_ <= options_.total_steps) ComputeLr();
}

double OneCycleLR::Anneal(double start, double end, double pct) const {
  if (options_.anneal_strategy == "linear") return (end - start) * pct + start;
  return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
}

std::vector<double> OneCycleLR::ComputeLr() {
  if (last_epoch_ > options_.total_steps) {
    Fail(name_, absl::StrCat("step ", last_epoch_, " is past total_steps ", options_.total_steps));
  }
  const double total = static_cast<double>(options_.total_steps);
  const double base_m = options_.base_momentum, max_m = options_.max_momentum;
  std::vector<double> lrs;
  for (int g = 0; g < num_groups(); ++g) {
    std::vector<Phase> phases;
    if (options_.three_phase) {
      phases = {{options_.pct_start * total - 1, initial_lrs_[g], max_lrs_[g], max_m, base_m},
                {2 * options_.pct_start * total - 2, max_lrs_[g], initial_lrs_[g], base_m, max_m},
                {total - 1, initial_lrs_[g], min_lrs_[g], max_m, max_m}};
    } else {
      phases = {{options_.pct_start * total - 1, initial_lrs_[g], max_lrs_[g], max_m, base_m},
                {total - 1, max_lrs_[g], min_lrs_[g], base_m, max_m}};
    }
    const double step = static_cast<double>(last_epoch_);
    double start_step = 0;
    for (size_t i = 0; i < phases.size(); ++i) {
      const Phase& phase = phases[i];
      if (step <= phase.end_step || i + 1 == phases.size()) {
        const double pct = (step - start_step) / (phase.end_step - start_step);
        lrs.push_back(Anneal(phase.start_lr, phase.end_lr, pct));
        if (!momentum_option_.empty()) {
          optimizer_.set_option(g, momentum_option_,
                                Anneal(phase.start_momentum, phase.end_momentum, pct));
        }
        break;
      }
      start_step = phase.end_step;
    }
  }
  return lrs;
}

// ---- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const PlateauOptions& options)
    : LRScheduler("ReduceLROnPlateau", optimizer), options_(options) {
  Require(options.mode == "min" || options.mode == "max", name_,
          absl::StrCat("mode must be \"min\" or \"max\", got \"", options.mode, "\""));
  Require(options.threshold_mode == "rel" || options.threshold_mode == "abs", name_,
          absl::StrCat("threshold_mode must be \"rel\" or \"abs\", got \"", options.threshold_mode,
                       "\""));
  Require(options.factor < 1, name_, absl::StrCat("factor must be < 1, got ", options.factor));
  best_ = options.mode == "min" ? std::numeric_limits<double>::infinity()
                                : -std::numeric_limits<double>::infinity();
  last_epoch_ = 0;
}

bool ReduceLROnPlateau::IsBetter(double value) const {
  const double best = best_, t = options_.threshold;
  const bool rel = options_.threshold_mode == "rel";
  if (options_.mode == "min") return value < (rel ? best * (1 - t) : best - t);
  return value > (rel ? best * (t + 1) : best + t);
}

void LRScheduler::step(double) { step(); }

void ReduceLROnPlateau::step() { Fail(name_, "step() needs the metric: call step(metric)"); }

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (IsBetter(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (cooldown_counter_ > 0) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;
  }
  std::vector<double> lrs;
  for (int g = 0; g < num_groups(); ++g) lrs.push_back(GroupLr(g));
  if (num_bad_epochs_ > options_.patience) {
    lrs = ComputeLr();
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  Apply(lrs);
}

std::vector<double> ReduceLROnPlateau::ComputeLr() {
  std::vector<double> lrs;
  for (int g = 0; g < num_groups(); ++g) {
    const double old_lr = GroupLr(g);
    const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
    lrs.push_back(old_lr - new_lr > options_.eps ? new_lr : old_lr);
  }
  return lrs;
}

LRScheduler::Fields ReduceLROnPlateau::ExtraState() const {
  return {{"best", best_},
          {"num_bad_epochs", static_cast<double>(num_bad_epochs_)},
          {"cooldown_counter", static_cast<double>(cooldown_counter_)}};
}

void ReduceLROnPlateau::LoadExtraState(const Fields& fields) {
  best_ = fields[0].second;
  num_bad_epochs_ = static_cast<int64_t>(fields[1].second);
  cooldown_counter_ = static_cast<int64_t>(fields[2].second);
}

// ---- ChainedScheduler, SequentialLR

namespace {

Optimizer& OptimizerOf(absl::string_view name,
                       const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  Require(!schedulers.empty(), name, "no schedulers");
  return schedulers[0]->optimizer();
}

}  // namespace

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : LRScheduler("ChainedScheduler", OptimizerOf("ChainedScheduler", schedulers)),
      schedulers_(std::move(schedulers)) {
  for (const auto& s : schedulers_) {
    Require(&s->optimizer() == &optimizer_, name_, "every scheduler must drive one optimizer");
  }
  last_epoch_ = 0;
  Apply(ComputeLr());  // the rates the schedulers left, whatever their order
}

void ChainedScheduler::step() {
  ++last_epoch_;
  for (const auto& s : schedulers_) s->step();
  Apply(ComputeLr());
}

void ChainedScheduler::step(double metric) {
  ++last_epoch_;
  for (const auto& s : schedulers_) s->step(metric);
  Apply(ComputeLr());
}

bool ChainedScheduler::needs_metric() const {
  return absl::c_any_of(schedulers_, [](const auto& s) { return s->needs_metric(); });
}

std::vector<double> ChainedScheduler::ComputeLr() {
  std::vector<double> lrs;
  for (int g = 0; g < num_groups(); ++g) lrs.push_back(GroupLr(g));
  return lrs;
}

std::vector<LRScheduler*> ChainedScheduler::Children() const {
  std::vector<LRScheduler*> out;
  for (const auto& s : schedulers_) out.push_back(s.get());
  return out;
}

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler("SequentialLR", optimizer),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  Require(!schedulers_.empty(), name_, "no schedulers");
  Require(milestones_.size() + 1 == schedulers_.size(), name_,
          absl::StrCat("expected ", schedulers_.size() - 1, " milestones for ", schedulers_.size(),
                       " schedulers, got ", milestones_.size()));
  Require(absl::c_is_sorted(milestones_), name_, "milestones must be in increasing order");
  for (const auto& s : schedulers_) {
    Require(&s->optimizer() == &optimizer_, name_, "every scheduler must drive its optimizer");
  }
  // Back to the initial rates, and only the first scheduler's step 0.
  for (int g = 0; g < num_groups(); ++g) optimizer_.set_option(g, "lr", base_lrs_[g]);
  for (const auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->InitialStep();
  last_epoch_ = 0;
  Apply(schedulers_[0]->get_last_lr());
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t index =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  LRScheduler& current = *schedulers_[index];
  if (index > 0 && milestones_[index - 1] == last_epoch_) {
    current.Restart();
  } else {
    current.step();
  }
  Apply(current.get_last_lr());
}

std::vector<double> SequentialLR::ComputeLr() { return get_last_lr(); }

std::vector<LRScheduler*> SequentialLR::Children() const {
  std::vector<LRScheduler*> out;
  for (const auto& s : schedulers_) out.push_back(s.get());
  return out;
}

}  // namespace tc::nn
