#include "nn/optim.h"

#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "nn/named_tensors.h"
#include "runtime/autograd_meta.h"
#include "runtime/error.h"

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

template <typename T>
void AdamLoop(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n,
              double lr, double beta1, double beta2, double eps, double weight_decay,
              bool decoupled, int64_t step) {
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
    p[i] += -step_size * (m[i] / (std::sqrt(v[i]) / bias2_sqrt + eps_t));
  }
}

}  // namespace

ParamList::ParamList(std::vector<Tensor> params) {
  for (size_t i = 0; i < params.size(); ++i) entries.emplace_back(absl::StrCat(i), params[i]);
}
ParamList::ParamList(std::initializer_list<Tensor> params)
    : ParamList(std::vector<Tensor>(params)) {}
ParamList::ParamList(NamedTensors named) : entries(std::move(named)) {}

Optimizer::Optimizer(absl::string_view name, ParamList params, double lr,
                     std::vector<std::string> slots)
    : name_(name), params_(std::move(params.entries)), slot_names_(std::move(slots)), lr_(lr) {
  Require(lr >= 0, name_, absl::StrCat("invalid learning rate ", lr));
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& [key, p] = params_[i];
    Require(p.defined(), name_, absl::StrCat("parameter ", key, " is undefined"));
    Require(p.dtype() == DType::kF32 || p.dtype() == DType::kF64, name_,
            absl::StrCat("parameter ", key, " has dtype ", DTypeName(p.dtype()),
                         "; only f32 and f64 parameters can be optimized"));
    Require(p.is_contiguous(), name_, absl::StrCat("parameter ", key, " is not contiguous"));
    for (size_t j = 0; j < i; ++j) {
      Require(!params_[j].second.same(p), name_,
              absl::StrCat("parameter ", key, " is the same tensor as ", params_[j].first));
    }
    steps_.push_back(Tensor::Empty({}, DType::kI64));
    std::vector<Tensor>& buffers = slots_.emplace_back();
    for (size_t s = 0; s < slot_names_.size(); ++s) {
      buffers.push_back(Tensor::Empty(p.shape(), p.dtype()));
    }
  }
}

void Optimizer::step() {
  NoGradGuard no_grad;
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
    grad = grad.contiguous();
    int64_t& count = steps_[i].data<int64_t>()[0];
    ++count;
    Update(p, grad, slots_[i], count);
  }
}

void Optimizer::zero_grad() {
  for (const auto& [key, p] : params_) p.set_grad(Tensor());
}

NamedTensors Optimizer::state() const {
  NamedTensors out;
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& key = params_[i].first;
    out.emplace_back(StateName(key, "step"), steps_[i]);
    for (size_t s = 0; s < slot_names_.size(); ++s) {
      out.emplace_back(StateName(key, slot_names_[s]), slots_[i][s]);
    }
  }
  return out;
}

absl::Status Optimizer::load_state(const NamedTensors& state) {
  const NamedTensors current = this->state();
  const std::string mismatch = DescribeMismatch(current, state, "got");
  if (!mismatch.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, " state does not match the optimizer: ", mismatch));
  }
  absl::flat_hash_map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : state) by_name.emplace(name, &t);
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string name = StateName(params_[i].first, "step");
    const int64_t count = by_name.at(name)->item<int64_t>();
    if (count < 0) {
      return absl::InvalidArgumentError(absl::StrCat(name_, " state: ", name, " is ", count,
                                                     "; a step count cannot be negative"));
    }
  }
  for (const auto& [name, t] : current) CopyValues(t, *by_name.at(name));
  return absl::OkStatus();
}

SGD::SGD(ParamList params, double lr, double momentum, double dampening, double weight_decay,
         bool nesterov)
    : Optimizer(
          "SGD", std::move(params), lr,
          momentum != 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{}),
      momentum_(momentum),
      dampening_(dampening),
      weight_decay_(weight_decay),
      nesterov_(nesterov) {
  Require(momentum >= 0, name_, absl::StrCat("invalid momentum ", momentum));
  Require(weight_decay >= 0, name_, absl::StrCat("invalid weight_decay ", weight_decay));
  Require(!nesterov || (momentum > 0 && dampening == 0), name_,
          "Nesterov momentum requires a momentum and zero dampening");
}

void SGD::Update(const Tensor& param, const Tensor& grad, absl::Span<const Tensor> slots,
                 int64_t step) {
  const bool first = step == 1;
  if (param.dtype() == DType::kF32) {
    SgdLoop(param.data<float>(), grad.data<float>(),
            slots.empty() ? nullptr : slots[0].data<float>(), param.numel(), lr(), momentum_,
            dampening_, weight_decay_, nesterov_, first);
  } else {
    SgdLoop(param.data<double>(), grad.data<double>(),
            slots.empty() ? nullptr : slots[0].data<double>(), param.numel(), lr(), momentum_,
            dampening_, weight_decay_, nesterov_, first);
  }
}

Adam::Adam(ParamList params, double lr, double beta1, double beta2, double eps, double weight_decay)
    : Adam("Adam", std::move(params), lr, beta1, beta2, eps, weight_decay, /*decoupled=*/false) {}

Adam::Adam(absl::string_view name, ParamList params, double lr, double beta1, double beta2,
           double eps, double weight_decay, bool decoupled)
    : Optimizer(name, std::move(params), lr, {"exp_avg", "exp_avg_sq"}),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      weight_decay_(weight_decay),
      decoupled_(decoupled) {
  Require(beta1 >= 0 && beta1 < 1, name_, absl::StrCat("invalid beta1 ", beta1));
  Require(beta2 >= 0 && beta2 < 1, name_, absl::StrCat("invalid beta2 ", beta2));
  Require(eps >= 0, name_, absl::StrCat("invalid eps ", eps));
  Require(weight_decay >= 0, name_, absl::StrCat("invalid weight_decay ", weight_decay));
}

void Adam::Update(const Tensor& param, const Tensor& grad, absl::Span<const Tensor> slots,
                  int64_t step) {
  if (param.dtype() == DType::kF32) {
    AdamLoop(param.data<float>(), grad.data<float>(), slots[0].data<float>(),
             slots[1].data<float>(), param.numel(), lr(), beta1_, beta2_, eps_, weight_decay_,
             decoupled_, step);
  } else {
    AdamLoop(param.data<double>(), grad.data<double>(), slots[0].data<double>(),
             slots[1].data<double>(), param.numel(), lr(), beta1_, beta2_, eps_, weight_decay_,
             decoupled_, step);
  }
}

AdamW::AdamW(ParamList params, double lr, double beta1, double beta2, double eps,
             double weight_decay)
    : Adam("AdamW", std::move(params), lr, beta1, beta2, eps, weight_decay, /*decoupled=*/true) {}

}  // namespace tc::nn
