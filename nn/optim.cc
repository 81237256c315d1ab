#include "nn/optim.h"

#include <cmath>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nn/named_tensors.h"
#include "runtime/autograd_meta.h"
#include "runtime/error.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/threads.h"

namespace tc::nn {
namespace {

[[noreturn]] void Fail(absl::string_view optimizer, absl::string_view what) {
  throw Error(absl::InvalidArgumentError(absl::StrCat(optimizer, ": ", what)));
}

void Require(bool ok, absl::string_view optimizer, absl::string_view what) {
  if (!ok) Fail(optimizer, what);
}

std::string StateName(absl::string_view key, absl::string_view slot) {
  return absl::StrCat(kOptimizerStatePrefix, key, ".", slot);
}

std::string GroupOptionName(int group, absl::string_view option) {
  return absl::StrCat(kOptimizerStatePrefix, "param_groups.", group, ".", option);
}

// A problem with a group's values, naming the group when there are several.
std::string InGroup(size_t group, size_t groups, const std::string& problem) {
  return groups > 1 ? absl::StrCat("group ", group, ": ", problem) : problem;
}

// The loops below are the whole cost of a step: one pass over contiguous data,
// coefficients converted to the parameter's type once, as PyTorch's scalars are.
// The pointers never alias (a parameter, its grad and its own state), which
// lets the compiler vectorise the loops; plain SGD gets a loop of its own.
template <typename T>
void SgdLoop(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t n, double lr,
             double momentum, double dampening, double weight_decay, bool nesterov, bool first) {
  const T lr_t = lr, mom = momentum, keep = 1 - dampening, wd = weight_decay;
  if (weight_decay == 0 && buf == nullptr) {
    for (int64_t i = 0; i < n; ++i) p[i] -= lr_t * g[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    T d = g[i];
    if (weight_decay != 0) d += wd * p[i];
    if (buf != nullptr) {
      buf[i] = first ? d : mom * buf[i] + keep * d;
      d = nesterov ? d + mom * buf[i] : buf[i];
    }
    p[i] -= lr_t * d;
  }
}

// `v_max` (amsgrad): the largest v so far, which takes v's place in the
// denominator; NaN propagates, as torch.maximum's.
template <typename T>
void AdamLoop(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
              T* __restrict v_max, int64_t n, double lr, double beta1, double beta2, double eps,
              double weight_decay, bool decoupled, int64_t step) {
  const double bias1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias2 = 1 - std::pow(beta2, static_cast<double>(step));
  const T step_size = lr / bias1, bias2_sqrt = std::sqrt(bias2), eps_t = eps;
  const T b1 = 1 - beta1, b2 = beta2, one_minus_b2 = 1 - beta2;
  const T decay = decoupled ? 1 - lr * weight_decay : 1;
  const T l2 = decoupled ? 0 : weight_decay;
  for (int64_t i = 0; i < n; ++i) {
    if (decoupled) p[i] *= decay;
    const T gi = l2 != 0 ? g[i] + l2 * p[i] : g[i];
    m[i] += b1 * (gi - m[i]);  // PyTorch's lerp: beta1 * m + (1 - beta1) * g
    v[i] = b2 * v[i] + one_minus_b2 * gi * gi;
    T denominator = v[i];
    if (v_max != nullptr) {
      if (!(v_max[i] >= v[i])) v_max[i] = v[i];
      denominator = v_max[i];
    }
    p[i] += -step_size * (m[i] / (std::sqrt(denominator) / bias2_sqrt + eps_t));
  }
}

template <typename T>
void RmspropLoop(T* __restrict p, const T* __restrict g, T* __restrict square_avg,
                 T* __restrict buf, T* __restrict grad_avg, int64_t n, double lr, double alpha,
                 double eps, double weight_decay, double momentum) {
  const T lr_t = lr, a = alpha, one_minus_a = 1 - alpha, eps_t = eps, wd = weight_decay,
          mom = momentum;
  for (int64_t i = 0; i < n; ++i) {
    const T gi = weight_decay != 0 ? g[i] + wd * p[i] : g[i];
    square_avg[i] = a * square_avg[i] + one_minus_a * gi * gi;
    T v = square_avg[i];
    if (grad_avg != nullptr) {
      grad_avg[i] += one_minus_a * (gi - grad_avg[i]);  // PyTorch's lerp
      v -= grad_avg[i] * grad_avg[i];
    }
    const T d = std::sqrt(v) + eps_t;
    if (buf != nullptr) {
      buf[i] = mom * buf[i] + gi / d;
      p[i] -= lr_t * buf[i];
    } else {
      p[i] -= lr_t * (gi / d);
    }
  }
}

template <typename T>
void AdagradLoop(T* __restrict p, const T* __restrict g, T* __restrict sum, int64_t n, double lr,
                 double lr_decay, double weight_decay, double eps, int64_t step) {
  const T clr = lr / (1 + static_cast<double>(step - 1) * lr_decay), wd = weight_decay, eps_t = eps;
  for (int64_t i = 0; i < n; ++i) {
    const T gi = weight_decay != 0 ? g[i] + wd * p[i] : g[i];
    sum[i] += gi * gi;
    p[i] -= clr * (gi / (std::sqrt(sum[i]) + eps_t));
  }
}

// The data of the buffer `name` from element `begin` on, or nullptr when
// the parameter has none.
template <typename T>
T* SlotData(absl::Span<const Tensor> slots, absl::Span<const std::string> names,
            absl::string_view name, int64_t begin) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return slots[i].data<T>() + begin;
  }
  return nullptr;
}

// Whether every buffer `needed` names is among `allocated`.
bool Covers(const std::vector<std::string>& allocated, const std::vector<std::string>& needed) {
  for (const std::string& name : needed) {
    if (!absl::c_linear_search(allocated, name)) return false;
  }
  return true;
}

std::string Invalid(absl::string_view what, double value) {
  return absl::StrCat("invalid ", what, " ", value);
}

// "" when every named value is >= 0, else the first that is not.
std::string RequireNonNegative(absl::Span<const double> options,
                               std::initializer_list<std::pair<int, const char*>> checks) {
  for (const auto& [index, what] : checks) {
    if (!(options[index] >= 0)) return Invalid(what, options[index]);
  }
  return "";
}

bool IsFlag(double value) { return value == 0 || value == 1; }

}  // namespace

ParamList::ParamList(std::vector<Tensor> params) : positional(true) {
  for (size_t i = 0; i < params.size(); ++i) entries.emplace_back(absl::StrCat(i), params[i]);
}
ParamList::ParamList(std::initializer_list<Tensor> params)
    : ParamList(std::vector<Tensor>(params)) {}
ParamList::ParamList(NamedTensors named) : entries(std::move(named)) {}

Optimizer::Optimizer(Definition definition, std::vector<ParamGroup> groups)
    : name_(definition.name), definition_(std::move(definition)) {
  for (const auto& [option, value] : definition_.defaults) option_names_.push_back(option);
  Require(!groups.empty(), name_, "no parameter groups");
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<double> values;
    for (const auto& [option, value] : definition_.defaults) values.push_back(value);
    for (const auto& [option, value] : groups[g].options) {
      const auto it = absl::c_find(option_names_, option);
      Require(it != option_names_.end(), name_,
              absl::StrCat("group ", g, " sets \"", option, "\", which is not an option (",
                           absl::StrJoin(option_names_, ", "), ")"));
      values[it - option_names_.begin()] = value;
    }
    const std::string problem = Check(values);
    Require(problem.empty(), name_, InGroup(g, groups.size(), problem));
    initial_lrs_.emplace_back();
    step_options_.push_back(values);
    std::vector<Tensor>& stored = group_options_.emplace_back();
    for (double v : values) stored.push_back(scalar(v, DType::kF64));
    const std::vector<std::string> slots = definition_.slots(values);
    for (const auto& [key, p] : groups[g].params.entries) {
      const std::string full_key = groups[g].params.positional ? absl::StrCat(params_.size()) : key;
      Require(p.defined(), name_, absl::StrCat("parameter ", full_key, " is undefined"));
      Require(p.dtype() == DType::kF32 || p.dtype() == DType::kF64, name_,
              absl::StrCat("parameter ", full_key, " has dtype ", DTypeName(p.dtype()),
                           "; only f32 and f64 parameters can be optimized"));
      Require(p.is_contiguous(), name_, absl::StrCat("parameter ", full_key, " is not contiguous"));
      for (const auto& [other_key, other] : params_) {
        Require(!other.same(p), name_,
                absl::StrCat("parameter ", full_key, " is the same tensor as ", other_key));
        Require(other_key != full_key, name_,
                absl::StrCat("two parameters have the key ", full_key));
      }
      params_.emplace_back(full_key, p);
      group_of_.push_back(static_cast<int>(g));
      slot_names_.push_back(slots);
      steps_.push_back(Tensor::Empty({}, DType::kI64));
      std::vector<Tensor>& buffers = slots_.emplace_back();
      for (size_t i = 0; i < slots.size(); ++i)
        buffers.push_back(Tensor::Empty(p.shape(), p.dtype()));
    }
  }
  updates_.reserve(params_.size());
  update_sizes_.reserve(params_.size());
}

std::string Optimizer::Check(absl::Span<const double> values) const {
  if (!(values[0] >= 0)) return absl::StrCat("invalid learning rate ", values[0]);
  return definition_.check(values);
}

void Optimizer::step() {
  NoGradGuard no_grad;
  for (size_t g = 0; g < group_options_.size(); ++g) {
    for (size_t o = 0; o < option_names_.size(); ++o) {
      step_options_[g][o] = *group_options_[g][o].data<double>();
    }
  }
  // Every parameter is checked before any is updated: a step that throws
  // changes nothing.
  updates_.clear();
  update_sizes_.clear();
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& [key, p] = params_[i];
    Tensor grad = p.grad();
    if (!grad.defined()) continue;
    // Messages are built only on failure: a step allocates nothing.
    const bool usable = (p.dtype() == DType::kF32 || p.dtype() == DType::kF64) &&
                        p.is_contiguous() &&
                        (slots_[i].empty() ||
                         (p.dtype() == slots_[i][0].dtype() && p.shape() == slots_[i][0].shape()));
    if (!usable) {
      Fail(name_, absl::StrCat("parameter ", key, " is now ", p.type().ToString(),
                               p.is_contiguous() ? "" : " (not contiguous)",
                               "; the optimizer was built for a contiguous f32/f64 parameter",
                               slots_[i].empty() ? "" : " of type ",
                               slots_[i].empty() ? "" : slots_[i][0].type().ToString()));
    }
    if (grad.dtype() != p.dtype() || grad.shape() != p.shape()) {
      Fail(name_, absl::StrCat("grad of ", key, " is ", grad.type().ToString(), ", parameter is ",
                               p.type().ToString()));
    }
    const int64_t count = steps_[i].data<int64_t>()[0] + 1;
    updates_.push_back(
        {p, grad.contiguous(), slots_[i], slot_names_[i], count, step_options_[group_of_[i]]});
    update_sizes_.push_back(p.numel());
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].second.grad().defined()) ++steps_[i].data<int64_t>()[0];
  }
  ParallelOverTensors(update_sizes_, [&](size_t k, int64_t begin, int64_t end) {
    Update(updates_[k], begin, end);
  });
  updates_.clear();  // lets go of the grads
}

void Optimizer::zero_grad() {
  for (const auto& [key, p] : params_) p.set_grad(Tensor());
}

NamedTensors Optimizer::group_params(int group) const {
  RequireGroup(group);
  NamedTensors out;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (group_of_[i] == group) out.push_back(params_[i]);
  }
  return out;
}

bool Optimizer::has_option(absl::string_view name) const {
  return absl::c_linear_search(option_names_, name);
}

int Optimizer::OptionIndex(absl::string_view name) const {
  const auto it = absl::c_find(option_names_, name);
  Require(it != option_names_.end(), name_,
          absl::StrCat("no option \"", name, "\" (", absl::StrJoin(option_names_, ", "), ")"));
  return static_cast<int>(it - option_names_.begin());
}

void Optimizer::RequireGroup(int group) const {
  Require(group >= 0 && group < num_groups(), name_,
          absl::StrCat("no group ", group, "; there are ", num_groups()));
}

double Optimizer::option(int group, absl::string_view name) const {
  RequireGroup(group);
  return *group_options_[group][OptionIndex(name)].data<double>();
}

std::vector<double> Optimizer::GroupValues(int group) const {
  std::vector<double> values;
  for (const Tensor& t : group_options_[group]) values.push_back(*t.data<double>());
  return values;
}

void Optimizer::set_option(int group, absl::string_view name, double value) {
  RequireGroup(group);
  const int index = OptionIndex(name);
  std::vector<double> values = GroupValues(group);
  values[index] = value;
  const std::string problem = Check(values);
  Require(problem.empty(), name_, InGroup(group, num_groups(), problem));
  // Buffers the new value needs are made while no parameter of the group
  // has stepped (a scheduler setting momentum before training); after that
  // they would start from nothing, so it is an error. Buffers it no longer
  // needs stay, unused, as PyTorch keeps them.
  const std::vector<std::string> needed = definition_.slots(values);
  bool stepped = false, covered = true;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (group_of_[i] != group) continue;
    stepped = stepped || *steps_[i].data<int64_t>() > 0;
    covered = covered && Covers(slot_names_[i], needed);
  }
  Require(covered || !stepped, name_,
          absl::StrCat("setting ", name, " of group ", group, " to ", value,
                       " needs state buffers (", absl::StrJoin(needed, ", "),
                       ") its parameters lack after their first step: build the optimizer "
                       "with that value"));
  if (!covered) {
    for (size_t i = 0; i < params_.size(); ++i) {
      if (group_of_[i] != group) continue;
      slot_names_[i] = needed;
      slots_[i].clear();
      for (size_t k = 0; k < needed.size(); ++k) {
        slots_[i].push_back(Tensor::Empty(params_[i].second.shape(), params_[i].second.dtype()));
      }
    }
  }
  *group_options_[group][index].data<double>() = value;
}

std::optional<double> Optimizer::initial_lr(int group) const {
  RequireGroup(group);
  return initial_lrs_[group];
}

void Optimizer::set_initial_lr(int group, double lr) {
  RequireGroup(group);
  initial_lrs_[group] = lr;
}

void Optimizer::set_lr(double lr) {
  for (int g = 0; g < num_groups(); ++g) set_option(g, "lr", lr);
}

NamedTensors Optimizer::state() const {
  NamedTensors out;
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& key = params_[i].first;
    out.emplace_back(StateName(key, "step"), steps_[i]);
    for (size_t s = 0; s < slot_names_[i].size(); ++s) {
      out.emplace_back(StateName(key, slot_names_[i][s]), slots_[i][s]);
    }
  }
  for (int g = 0; g < num_groups(); ++g) {
    for (size_t o = 0; o < option_names_.size(); ++o) {
      out.emplace_back(GroupOptionName(g, option_names_[o]), group_options_[g][o]);
    }
  }
  return out;
}

bool IsGroupOptionName(absl::string_view name) {
  return absl::StartsWith(name, absl::StrCat(kOptimizerStatePrefix, "param_groups."));
}

NamedTensors WithoutGroupOptions(const NamedTensors& state) {
  NamedTensors out;
  for (const auto& entry : state) {
    if (!IsGroupOptionName(entry.first)) out.push_back(entry);
  }
  return out;
}

NamedTensors Optimizer::state_for(const NamedTensors& saved) const {
  absl::flat_hash_set<absl::string_view> saved_names;
  for (const auto& [name, t] : saved) saved_names.insert(name);
  NamedTensors out;
  for (const auto& entry : state()) {
    if (!IsGroupOptionName(entry.first) || saved_names.contains(entry.first)) out.push_back(entry);
  }
  return out;
}

absl::Status Optimizer::load_state(const NamedTensors& state) {
  const NamedTensors current = state_for(state);
  absl::flat_hash_map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : state) by_name.emplace(name, &t);
  const std::string mismatch = DescribeMismatch(current, state, "got");
  if (!mismatch.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, " state does not match the optimizer: ", mismatch));
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string name = StateName(params_[i].first, "step");
    const int64_t count = by_name.at(name)->item<int64_t>();
    if (count < 0) {
      return absl::InvalidArgumentError(absl::StrCat(name_, " state: ", name, " is ", count,
                                                     "; a step count cannot be negative"));
    }
  }
  for (int g = 0; g < num_groups(); ++g) {
    std::vector<double> values;
    for (size_t o = 0; o < option_names_.size(); ++o) {
      const auto given = by_name.find(GroupOptionName(g, option_names_[o]));
      values.push_back(given != by_name.end() ? given->second->item<double>()
                                              : *group_options_[g][o].data<double>());
    }
    std::string problem = Check(values);
    const std::vector<std::string> needed = definition_.slots(values);
    for (size_t i = 0; i < params_.size() && problem.empty(); ++i) {
      if (group_of_[i] == g && !Covers(slot_names_[i], needed)) {
        problem = "its options need state buffers this optimizer's parameters lack";
      }
    }
    if (!problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name_, " state: group ", g, ": ", problem));
    }
  }
  for (const auto& [name, t] : current) CopyValues(t, *by_name.at(name));
  return absl::OkStatus();
}

// ---- SGD

namespace {

enum SgdOption { kSgdLr, kSgdMomentum, kSgdDampening, kSgdWeightDecay, kSgdNesterov };

std::vector<std::string> SgdSlots(absl::Span<const double> o) {
  return o[kSgdMomentum] != 0 ? std::vector<std::string>{"momentum_buffer"}
                              : std::vector<std::string>{};
}

std::string SgdCheck(absl::Span<const double> o) {
  std::string problem =
      RequireNonNegative(o, {{kSgdMomentum, "momentum"}, {kSgdWeightDecay, "weight_decay"}});
  if (!problem.empty()) return problem;
  if (!IsFlag(o[kSgdNesterov])) return Invalid("nesterov (0 or 1)", o[kSgdNesterov]);
  if (o[kSgdNesterov] == 1 && !(o[kSgdMomentum] > 0 && o[kSgdDampening] == 0)) {
    return "Nesterov momentum requires a momentum and zero dampening";
  }
  return "";
}

}  // namespace

SGD::SGD(ParamList params, double lr, double momentum, double dampening, double weight_decay,
         bool nesterov)
    : SGD(std::vector<ParamGroup>{{std::move(params)}}, lr, momentum, dampening, weight_decay,
          nesterov) {}

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum, double dampening,
         double weight_decay, bool nesterov)
    : Optimizer({"SGD",
                 {{"lr", lr},
                  {"momentum", momentum},
                  {"dampening", dampening},
                  {"weight_decay", weight_decay},
                  {"nesterov", nesterov ? 1.0 : 0.0}},
                 &SgdSlots,
                 &SgdCheck},
                std::move(groups)) {}

void SGD::Update(const ParamUpdate& u, int64_t begin, int64_t end) {
  const absl::Span<const double> o = u.options;
  kernels::VisitFloatDType(u.param.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* buffer = o[kSgdMomentum] != 0 ? SlotData<T>(u.slots, u.slot_names, "momentum_buffer", begin)
                                     : nullptr;
    SgdLoop(u.param.data<T>() + begin, u.grad.data<T>() + begin, buffer, end - begin, o[kSgdLr],
            o[kSgdMomentum], o[kSgdDampening], o[kSgdWeightDecay], o[kSgdNesterov] != 0,
            u.step == 1);
  });
}

// ---- Adam, AdamW

namespace {

enum AdamOption { kAdamLr, kAdamBeta1, kAdamBeta2, kAdamEps, kAdamWeightDecay, kAdamAmsgrad };

std::vector<std::string> AdamSlots(absl::Span<const double> o) {
  std::vector<std::string> slots = {"exp_avg", "exp_avg_sq"};
  if (o[kAdamAmsgrad] != 0) slots.push_back("max_exp_avg_sq");
  return slots;
}

std::string AdamCheck(absl::Span<const double> o) {
  if (!(o[kAdamBeta1] >= 0 && o[kAdamBeta1] < 1)) return Invalid("beta1", o[kAdamBeta1]);
  if (!(o[kAdamBeta2] >= 0 && o[kAdamBeta2] < 1)) return Invalid("beta2", o[kAdamBeta2]);
  if (!IsFlag(o[kAdamAmsgrad])) return Invalid("amsgrad (0 or 1)", o[kAdamAmsgrad]);
  return RequireNonNegative(o, {{kAdamEps, "eps"}, {kAdamWeightDecay, "weight_decay"}});
}

}  // namespace

Adam::Adam(ParamList params, double lr, double beta1, double beta2, double eps, double weight_decay,
           bool amsgrad)
    : Adam(std::vector<ParamGroup>{{std::move(params)}}, lr, beta1, beta2, eps, weight_decay,
           amsgrad) {}

Adam::Adam(std::vector<ParamGroup> groups, double lr, double beta1, double beta2, double eps,
           double weight_decay, bool amsgrad)
    : Adam("Adam", std::move(groups), lr, beta1, beta2, eps, weight_decay, amsgrad,
           /*decoupled=*/false) {}

Adam::Adam(ParamList params, double lr, std::pair<double, double> betas, double eps,
           double weight_decay, bool amsgrad)
    : Adam(std::move(params), lr, betas.first, betas.second, eps, weight_decay, amsgrad) {}

Adam::Adam(std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas, double eps,
           double weight_decay, bool amsgrad)
    : Adam(std::move(groups), lr, betas.first, betas.second, eps, weight_decay, amsgrad) {}

Adam::Adam(absl::string_view name, std::vector<ParamGroup> groups, double lr, double beta1,
           double beta2, double eps, double weight_decay, bool amsgrad, bool decoupled)
    : Optimizer({std::string(name),
                 {{"lr", lr},
                  {"beta1", beta1},
                  {"beta2", beta2},
                  {"eps", eps},
                  {"weight_decay", weight_decay},
                  {"amsgrad", amsgrad ? 1.0 : 0.0}},
                 &AdamSlots,
                 &AdamCheck},
                std::move(groups)),
      decoupled_(decoupled) {}

void Adam::Update(const ParamUpdate& u, int64_t begin, int64_t end) {
  const absl::Span<const double> o = u.options;
  kernels::VisitFloatDType(u.param.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* v_max = o[kAdamAmsgrad] != 0 ? SlotData<T>(u.slots, u.slot_names, "max_exp_avg_sq", begin)
                                    : nullptr;
    AdamLoop(u.param.data<T>() + begin, u.grad.data<T>() + begin, u.slots[0].data<T>() + begin,
             u.slots[1].data<T>() + begin, v_max, end - begin, o[kAdamLr], o[kAdamBeta1],
             o[kAdamBeta2], o[kAdamEps], o[kAdamWeightDecay], decoupled_, u.step);
  });
}

AdamW::AdamW(ParamList params, double lr, double beta1, double beta2, double eps,
             double weight_decay, bool amsgrad)
    : AdamW(std::vector<ParamGroup>{{std::move(params)}}, lr, beta1, beta2, eps, weight_decay,
            amsgrad) {}

AdamW::AdamW(std::vector<ParamGroup> groups, double lr, double beta1, double beta2, double eps,
             double weight_decay, bool amsgrad)
    : Adam("AdamW", std::move(groups), lr, beta1, beta2, eps, weight_decay, amsgrad,
           /*decoupled=*/true) {}

AdamW::AdamW(ParamList params, double lr, std::pair<double, double> betas, double eps,
             double weight_decay, bool amsgrad)
    : AdamW(std::move(params), lr, betas.first, betas.second, eps, weight_decay, amsgrad) {}

AdamW::AdamW(std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas, double eps,
             double weight_decay, bool amsgrad)
    : AdamW(std::move(groups), lr, betas.first, betas.second, eps, weight_decay, amsgrad) {}

// ---- RMSprop

namespace {

enum RmspropOption { kRmsLr, kRmsAlpha, kRmsEps, kRmsWeightDecay, kRmsMomentum, kRmsCentered };

std::vector<std::string> RmspropSlots(absl::Span<const double> o) {
  std::vector<std::string> slots = {"square_avg"};
  if (o[kRmsMomentum] > 0) slots.push_back("momentum_buffer");
  if (o[kRmsCentered] != 0) slots.push_back("grad_avg");
  return slots;
}

std::string RmspropCheck(absl::Span<const double> o) {
  std::string problem = RequireNonNegative(o, {{kRmsAlpha, "alpha"},
                                               {kRmsEps, "eps"},
                                               {kRmsWeightDecay, "weight_decay"},
                                               {kRmsMomentum, "momentum"}});
  if (problem.empty() && !IsFlag(o[kRmsCentered])) {
    problem = Invalid("centered (0 or 1)", o[kRmsCentered]);
  }
  return problem;
}

}  // namespace

RMSprop::RMSprop(ParamList params, double lr, double alpha, double eps, double weight_decay,
                 double momentum, bool centered)
    : RMSprop(std::vector<ParamGroup>{{std::move(params)}}, lr, alpha, eps, weight_decay, momentum,
              centered) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, double lr, double alpha, double eps,
                 double weight_decay, double momentum, bool centered)
    : Optimizer({"RMSprop",
                 {{"lr", lr},
                  {"alpha", alpha},
                  {"eps", eps},
                  {"weight_decay", weight_decay},
                  {"momentum", momentum},
                  {"centered", centered ? 1.0 : 0.0}},
                 &RmspropSlots,
                 &RmspropCheck},
                std::move(groups)) {}

void RMSprop::Update(const ParamUpdate& u, int64_t begin, int64_t end) {
  const absl::Span<const double> o = u.options;
  kernels::VisitFloatDType(u.param.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* buffer = o[kRmsMomentum] > 0 ? SlotData<T>(u.slots, u.slot_names, "momentum_buffer", begin)
                                    : nullptr;
    T* grad_avg =
        o[kRmsCentered] != 0 ? SlotData<T>(u.slots, u.slot_names, "grad_avg", begin) : nullptr;
    RmspropLoop(u.param.data<T>() + begin, u.grad.data<T>() + begin, u.slots[0].data<T>() + begin,
                buffer, grad_avg, end - begin, o[kRmsLr], o[kRmsAlpha], o[kRmsEps],
                o[kRmsWeightDecay], o[kRmsMomentum]);
  });
}

// ---- Adagrad

namespace {

enum AdagradOption {
  kAdagradLr,
  kAdagradLrDecay,
  kAdagradWeightDecay,
  kAdagradInitial,
  kAdagradEps
};

std::vector<std::string> AdagradSlots(absl::Span<const double>) { return {"sum"}; }

std::string AdagradCheck(absl::Span<const double> o) {
  return RequireNonNegative(o, {{kAdagradLrDecay, "lr_decay"},
                                {kAdagradWeightDecay, "weight_decay"},
                                {kAdagradInitial, "initial_accumulator_value"},
                                {kAdagradEps, "eps"}});
}

}  // namespace

Adagrad::Adagrad(ParamList params, double lr, double lr_decay, double weight_decay,
                 double initial_accumulator_value, double eps)
    : Adagrad(std::vector<ParamGroup>{{std::move(params)}}, lr, lr_decay, weight_decay,
              initial_accumulator_value, eps) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, double lr, double lr_decay, double weight_decay,
                 double initial_accumulator_value, double eps)
    : Optimizer({"Adagrad",
                 {{"lr", lr},
                  {"lr_decay", lr_decay},
                  {"weight_decay", weight_decay},
                  {"initial_accumulator_value", initial_accumulator_value},
                  {"eps", eps}},
                 &AdagradSlots,
                 &AdagradCheck},
                std::move(groups)) {
  // The sums start at each group's initial_accumulator_value.
  for (size_t i = 0; i < params().size(); ++i) {
    const double initial = option(group_of(i), "initial_accumulator_value");
    if (initial != 0)
      CopyValues(slots_of(i)[0],
                 full(params()[i].second.shape(), initial, params()[i].second.dtype()));
  }
}

void Adagrad::Update(const ParamUpdate& u, int64_t begin, int64_t end) {
  const absl::Span<const double> o = u.options;
  kernels::VisitFloatDType(u.param.dtype(), [&](auto zero) {
    using T = decltype(zero);
    AdagradLoop(u.param.data<T>() + begin, u.grad.data<T>() + begin, u.slots[0].data<T>() + begin,
                end - begin, o[kAdagradLr], o[kAdagradLrDecay], o[kAdagradWeightDecay],
                o[kAdagradEps], u.step);
  });
}

}  // namespace tc::nn
