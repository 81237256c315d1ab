// Optimizers against the update formulas of torch.optim, evaluated here in
// double by a few lines each; plus state save/restore, error paths, and a
// check that a step allocates nothing.
#include "nn/optim.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "runtime/error.h"
#include "tests/test_util.h"

// Counts heap allocations made while `g_counting` is set. Not under
// AddressSanitizer, which owns operator new: objects the Catch2 library
// allocates through it would be freed through this file's operator delete.
#if !defined(__SANITIZE_ADDRESS__)
#define TC_COUNT_ALLOCATIONS 1
namespace {
bool g_counting = false;
int64_t g_allocations = 0;
}  // namespace

void* operator new(std::size_t size) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace tc::nn {
namespace {

using testing::ThrownMessage;

using Vec = std::vector<double>;

const Vec kInit = {1.0, -2.0, 0.5, 3.0};

// The grad of step t (1-based): hand-set values that change from step to step.
Vec GradAt(int t) {
  const Vec base = {0.5, -1.0, 0.25, 2.0};
  Vec g;
  for (double b : base) g.push_back(b * (1 + 0.5 * t) - 0.1 * t);
  return g;
}

Tensor MakeTensor(const Vec& values, DType dtype) {
  return from_vector(values, {static_cast<int64_t>(values.size())}).to(dtype);
}

// Runs `steps` steps of `opt` over its single parameter with GradAt(t).
void RunSteps(Optimizer& opt, int first_step, int steps) {
  const Tensor& p = opt.params()[0].second;
  for (int t = first_step; t < first_step + steps; ++t) {
    p.set_grad(MakeTensor(GradAt(t), p.dtype()));
    opt.step();
  }
}

// torch.optim.SGD, one step, in double.
struct RefSgd {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  Vec buf;
  int step = 0;

  void Step(Vec& p, Vec g) {
    ++step;
    if (buf.empty()) buf.assign(p.size(), 0);
    for (size_t i = 0; i < p.size(); ++i) {
      g[i] += weight_decay * p[i];
      if (momentum != 0) {
        buf[i] = step == 1 ? g[i] : momentum * buf[i] + (1 - dampening) * g[i];
        g[i] = nesterov ? g[i] + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * g[i];
    }
  }
};

// torch.optim.Adam (decoupled = false) and AdamW (true), one step, in double.
struct RefAdam {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled;
  bool amsgrad = false;
  Vec m, v, v_max;
  int step = 0;

  void Step(Vec& p, const Vec& grad) {
    ++step;
    if (m.empty()) m.assign(p.size(), 0), v.assign(p.size(), 0), v_max.assign(p.size(), 0);
    const double bias1 = 1 - std::pow(beta1, step), bias2 = 1 - std::pow(beta2, step);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (decoupled) {
        p[i] *= 1 - lr * weight_decay;
      } else {
        g += weight_decay * p[i];
      }
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      v_max[i] = std::max(v_max[i], v[i]);
      const double m_hat = m[i] / bias1, v_hat = (amsgrad ? v_max[i] : v[i]) / bias2;
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

// torch.optim.RMSprop, one step, in double.
struct RefRmsprop {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered;
  Vec square_avg, buf, grad_avg;

  void Step(Vec& p, const Vec& grad) {
    if (square_avg.empty()) {
      square_avg.assign(p.size(), 0), buf.assign(p.size(), 0), grad_avg.assign(p.size(), 0);
    }
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = grad[i] + weight_decay * p[i];
      square_avg[i] = alpha * square_avg[i] + (1 - alpha) * g * g;
      double avg = square_avg[i];
      if (centered) {
        grad_avg[i] = alpha * grad_avg[i] + (1 - alpha) * g;
        avg -= grad_avg[i] * grad_avg[i];
      }
      const double d = std::sqrt(avg) + eps;
      if (momentum > 0) {
        buf[i] = momentum * buf[i] + g / d;
        p[i] -= lr * buf[i];
      } else {
        p[i] -= lr * g / d;
      }
    }
  }
};

// torch.optim.Adagrad, one step, in double.
struct RefAdagrad {
  double lr, lr_decay, weight_decay, initial, eps;
  Vec sum;
  int step = 0;

  void Step(Vec& p, const Vec& grad) {
    ++step;
    if (sum.empty()) sum.assign(p.size(), initial);
    const double clr = lr / (1 + (step - 1) * lr_decay);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = grad[i] + weight_decay * p[i];
      sum[i] += g * g;
      p[i] -= clr * g / (std::sqrt(sum[i]) + eps);
    }
  }
};

std::vector<std::string> Names(const NamedTensors& named) {
  std::vector<std::string> names;
  for (const auto& [name, t] : named) names.push_back(name);
  return names;
}

// Checks the first three steps of `opt` against `ref`.
template <typename Ref>
void CheckThreeSteps(Optimizer& opt, Ref ref, double tolerance) {
  Vec expected = kInit;
  for (int t = 1; t <= 3; ++t) {
    ref.Step(expected, GradAt(t));
    RunSteps(opt, t, 1);
    INFO("step " << t);
    REQUIRE_TENSORS_CLOSE(opt.params()[0].second.to(DType::kF64), MakeTensor(expected, DType::kF64),
                          tolerance, tolerance);
  }
}

double ToleranceFor(DType dtype) { return dtype == DType::kF32 ? 2e-6 : 1e-13; }

TEST_CASE("SGD first step by hand") {
  Tensor p = MakeTensor({1.0, -2.0}, DType::kF64);
  p.set_grad(MakeTensor({0.5, -1.0}, DType::kF64));
  SGD opt({p}, /*lr=*/0.1);
  opt.step();
  CHECK(p.to_vector<double>() == Vec{1.0 - 0.05, -2.0 + 0.1});
}

TEST_CASE("SGD matches torch.optim.SGD over three steps") {
  struct Config {
    const char* name;
    double momentum, dampening, weight_decay;
    bool nesterov;
  };
  const Config configs[] = {{"plain", 0, 0, 0, false},
                            {"momentum", 0.9, 0, 0, false},
                            {"momentum with dampening", 0.9, 0.3, 0, false},
                            {"weight decay", 0, 0, 0.1, false},
                            {"nesterov", 0.9, 0, 0, true},
                            {"nesterov with weight decay", 0.8, 0, 0.05, true}};
  for (const Config& c : configs) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      INFO(c.name << " " << DTypeName(dtype));
      SGD opt({MakeTensor(kInit, dtype)}, 0.1, c.momentum, c.dampening, c.weight_decay, c.nesterov);
      CheckThreeSteps(opt, RefSgd{0.1, c.momentum, c.dampening, c.weight_decay, c.nesterov},
                      ToleranceFor(dtype));
    }
  }
}

TEST_CASE("Adam first step by hand: lr * g / (|g| + eps)") {
  Tensor p = MakeTensor({1.0, -2.0}, DType::kF64);
  p.set_grad(MakeTensor({0.5, -4.0}, DType::kF64));
  Adam opt({p}, /*lr=*/0.1);
  opt.step();
  // m_hat = g and v_hat = g^2 after one step.
  CHECK(p.to_vector<double>()[0] == Approx(1.0 - 0.1 * 0.5 / (0.5 + 1e-8)).epsilon(1e-15));
  CHECK(p.to_vector<double>()[1] == Approx(-2.0 + 0.1 * 4.0 / (4.0 + 1e-8)).epsilon(1e-15));
}

TEST_CASE("Adam and AdamW match torch.optim over three steps") {
  struct Config {
    const char* name;
    double lr, beta1, beta2, eps, weight_decay;
  };
  const Config configs[] = {{"defaults", 1e-3, 0.9, 0.999, 1e-8, 0},
                            {"weight decay", 0.05, 0.9, 0.999, 1e-8, 0.1},
                            {"other betas", 0.05, 0.8, 0.99, 1e-6, 0.02}};
  for (const Config& c : configs) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      INFO(c.name << " " << DTypeName(dtype));
      Adam adam({MakeTensor(kInit, dtype)}, c.lr, c.beta1, c.beta2, c.eps, c.weight_decay);
      CheckThreeSteps(adam, RefAdam{c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, false},
                      ToleranceFor(dtype));
      AdamW adamw({MakeTensor(kInit, dtype)}, c.lr, c.beta1, c.beta2, c.eps, c.weight_decay);
      CheckThreeSteps(adamw, RefAdam{c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, true},
                      ToleranceFor(dtype));
    }
  }
}

TEST_CASE("amsgrad divides by the largest second moment so far") {
  // Grads that shrink, so that v falls below its earlier maximum.
  const std::vector<Vec> grads = {{2.0, -1.0, 0.5, 3.0},
                                  {1.5, -0.5, 0.5, 2.0},
                                  {0.01, 0.02, -0.01, 0.0},
                                  {0.02, -0.01, 0.0, 0.01}};
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (bool decoupled : {false, true}) {
      INFO((decoupled ? "AdamW " : "Adam ") << DTypeName(dtype));
      const Tensor p = MakeTensor(kInit, dtype), plain_p = MakeTensor(kInit, dtype);
      std::unique_ptr<Optimizer> opt, plain;
      if (decoupled) {
        opt = std::make_unique<AdamW>(ParamList{p}, 0.1, std::pair{0.9, 0.5}, 1e-8, 0.01, true);
        plain = std::make_unique<AdamW>(ParamList{plain_p}, 0.1, 0.9, 0.5, 1e-8, 0.01);
      } else {
        opt = std::make_unique<Adam>(ParamList{p}, 0.1, std::pair{0.9, 0.5}, 1e-8, 0.01, true);
        plain = std::make_unique<Adam>(ParamList{plain_p}, 0.1, 0.9, 0.5, 1e-8, 0.01);
      }
      RefAdam ref{0.1, 0.9, 0.5, 1e-8, 0.01, decoupled, /*amsgrad=*/true};
      Vec expected = kInit;
      for (const Vec& g : grads) {
        ref.Step(expected, g);
        p.set_grad(MakeTensor(g, dtype));
        plain_p.set_grad(MakeTensor(g, dtype));
        opt->step();
        plain->step();
      }
      REQUIRE_TENSORS_CLOSE(p.to(DType::kF64), MakeTensor(expected, DType::kF64),
                            ToleranceFor(dtype), ToleranceFor(dtype));
      // Without amsgrad the last steps differ: the test sees the maximum.
      CHECK(testing::CompareTensors(plain_p.to(DType::kF64), MakeTensor(expected, DType::kF64),
                                    1e-3, 1e-3) != "");
      CHECK(Names(opt->state())[3] == "optim.0.max_exp_avg_sq");
    }
  }
  Tensor w = MakeTensor(kInit, DType::kF32);
  CHECK(ThrownMessage([&] {
          Adam({{{w}, {{"amsgrad", 2}}}});
        }) == "Adam: invalid amsgrad (0 or 1) 2");
}

TEST_CASE("SGD's learning rate defaults to PyTorch's, for groups that all set their own") {
  Tensor a = MakeTensor({1.0}, DType::kF64), b = MakeTensor({1.0}, DType::kF64);
  SGD sgd({{{a}, {{"lr", 0.5}}}, {{b}, {{"lr", 0.25}}}});
  CHECK(SGD({a}).lr() == 1e-3);
  a.set_grad(MakeTensor({1.0}, DType::kF64));
  b.set_grad(MakeTensor({1.0}, DType::kF64));
  sgd.step();
  CHECK(a.to_vector<double>() == Vec{0.5});
  CHECK(b.to_vector<double>() == Vec{0.75});
}

TEST_CASE("a state saved before an option existed loads, the option keeping its value") {
  Tensor w = MakeTensor(kInit, DType::kF32);
  w.set_grad(MakeTensor(GradAt(1), DType::kF32));
  Adam saved({w}, 0.05);
  saved.step();
  NamedTensors old_state;  // as 0.2 saved it: no amsgrad
  for (const auto& [name, t] : saved.state()) {
    if (name != "optim.param_groups.0.amsgrad") old_state.emplace_back(name, t.clone());
  }
  Adam restored({MakeTensor(kInit, DType::kF32)}, 0.01);
  REQUIRE(restored.load_state(old_state).ok());
  CHECK(restored.lr() == 0.05);
  CHECK(restored.option(0, "amsgrad") == 0);
  // An option the state gives but this optimizer lacks is still a mismatch.
  NamedTensors extra = saved.state();
  extra.emplace_back("optim.param_groups.0.nesterov", scalar(0, DType::kF64));
  CHECK(!restored.load_state(extra).ok());
}

TEST_CASE("RMSprop and Adagrad match torch.optim over three steps") {
  struct RmsConfig {
    const char* name;
    double lr, alpha, eps, weight_decay, momentum;
    bool centered;
  };
  const RmsConfig rms_configs[] = {{"defaults", 1e-2, 0.99, 1e-8, 0, 0, false},
                                   {"momentum", 0.05, 0.9, 1e-6, 0, 0.8, false},
                                   {"centered", 0.05, 0.9, 1e-6, 0.1, 0, true},
                                   {"centered with momentum", 0.02, 0.95, 1e-8, 0.01, 0.5, true}};
  for (const RmsConfig& c : rms_configs) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      INFO("RMSprop " << c.name << " " << DTypeName(dtype));
      RMSprop opt({MakeTensor(kInit, dtype)}, c.lr, c.alpha, c.eps, c.weight_decay, c.momentum,
                  c.centered);
      CheckThreeSteps(opt, RefRmsprop{c.lr, c.alpha, c.eps, c.weight_decay, c.momentum, c.centered},
                      ToleranceFor(dtype));
    }
  }
  struct AdagradConfig {
    const char* name;
    double lr, lr_decay, weight_decay, initial, eps;
  };
  const AdagradConfig adagrad_configs[] = {{"defaults", 1e-2, 0, 0, 0, 1e-10},
                                           {"decays", 0.1, 0.5, 0.1, 0, 1e-10},
                                           {"initial accumulator", 0.1, 0, 0, 0.3, 1e-6}};
  for (const AdagradConfig& c : adagrad_configs) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      INFO("Adagrad " << c.name << " " << DTypeName(dtype));
      Adagrad opt({MakeTensor(kInit, dtype)}, c.lr, c.lr_decay, c.weight_decay, c.initial, c.eps);
      CheckThreeSteps(opt, RefAdagrad{c.lr, c.lr_decay, c.weight_decay, c.initial, c.eps},
                      ToleranceFor(dtype));
    }
  }
}

TEST_CASE("RMSprop and Adagrad first steps by hand") {
  // RMSprop: v = 0.01 g^2, p -= lr g / (0.1 |g| + eps).
  Tensor p = MakeTensor({1.0, -2.0}, DType::kF64);
  p.set_grad(MakeTensor({0.5, -4.0}, DType::kF64));
  RMSprop rms({p}, /*lr=*/0.01);
  rms.step();
  CHECK(p.to_vector<double>()[0] == Approx(1.0 - 0.01 * 0.5 / (0.05 + 1e-8)).epsilon(1e-14));
  CHECK(p.to_vector<double>()[1] == Approx(-2.0 + 0.01 * 4.0 / (0.4 + 1e-8)).epsilon(1e-14));
  // Adagrad: s = g^2, p -= lr g / (|g| + eps): a step of lr against the sign.
  Tensor q = MakeTensor({1.0, -2.0}, DType::kF64);
  q.set_grad(MakeTensor({0.5, -4.0}, DType::kF64));
  Adagrad adagrad({q}, /*lr=*/0.1);
  adagrad.step();
  CHECK(q.to_vector<double>()[0] == Approx(0.9).epsilon(1e-9));
  CHECK(q.to_vector<double>()[1] == Approx(-1.9).epsilon(1e-9));
  CHECK(Names(rms.state()) ==
        std::vector<std::string>{"optim.0.step", "optim.0.square_avg", "optim.param_groups.0.lr",
                                 "optim.param_groups.0.alpha", "optim.param_groups.0.eps",
                                 "optim.param_groups.0.weight_decay",
                                 "optim.param_groups.0.momentum", "optim.param_groups.0.centered"});
  CHECK(Names(RMSprop({q}, 0.1, 0.9, 1e-8, 0, 0.9, true).state())[3] == "optim.0.grad_avg");
  CHECK(Names(adagrad.state())[1] == "optim.0.sum");
}

TEST_CASE("parameter groups take their own hyper-parameters") {
  // Two groups of the same SGD: the second overrides lr and momentum.
  Tensor a = MakeTensor(kInit, DType::kF64), b = MakeTensor(kInit, DType::kF64);
  SGD sgd({{NamedTensors{{"body.w", a}}},
           {NamedTensors{{"head.w", b}}, {{"lr", 0.5}, {"momentum", 0}}}},
          /*lr=*/0.1, /*momentum=*/0.9);
  CHECK(sgd.num_groups() == 2);
  CHECK(sgd.option(0, "lr") == 0.1);
  CHECK(sgd.option(1, "lr") == 0.5);
  CHECK(Names(sgd.group_params(1)) == std::vector<std::string>{"head.w"});
  RefSgd body{0.1, 0.9, 0, 0, false}, head{0.5, 0, 0, 0, false};
  Vec want_a = kInit, want_b = kInit;
  for (int t = 1; t <= 3; ++t) {
    a.set_grad(MakeTensor(GradAt(t), DType::kF64));
    b.set_grad(MakeTensor(GradAt(t), DType::kF64));
    sgd.step();
    body.Step(want_a, GradAt(t));
    head.Step(want_b, GradAt(t));
  }
  REQUIRE_TENSORS_CLOSE(a, MakeTensor(want_a, DType::kF64), 1e-13, 1e-13);
  REQUIRE_TENSORS_CLOSE(b, MakeTensor(want_b, DType::kF64), 1e-13, 1e-13);
  // Only the group with a momentum has momentum buffers.
  CHECK(Names(sgd.state())[1] == "optim.body.w.momentum_buffer");
  CHECK(Names(sgd.state())[2] == "optim.head.w.step");

  // Positional keys count across the groups, as PyTorch's state indices.
  Adam adam(
      {{{MakeTensor(kInit, DType::kF32)}}, {{MakeTensor(kInit, DType::kF32)}, {{"beta1", 0.5}}}});
  CHECK(Names(adam.params()) == std::vector<std::string>{"0", "1"});
  CHECK(adam.option(1, "beta1") == 0.5);
  CHECK(adam.option(1, "beta2") == 0.999);

  // set_option and set_lr, as a scheduler uses them.
  sgd.set_option(1, "lr", 0.25);
  CHECK(sgd.option(1, "lr") == 0.25);
  sgd.set_lr(0.01);
  CHECK(sgd.option(0, "lr") == 0.01);
  CHECK(sgd.option(1, "lr") == 0.01);
  CHECK(sgd.lr() == 0.01);
  CHECK(sgd.has_option("nesterov"));
  CHECK(!sgd.has_option("beta1"));
}

TEST_CASE("parameter groups and options refuse what PyTorch refuses") {
  Tensor a = MakeTensor(kInit, DType::kF32), b = MakeTensor(kInit, DType::kF32);
  CHECK(ThrownMessage([&] {
          SGD({{{a}}, {{b}, {{"betas", 0.9}}}}, 0.1);
        }) ==
        "SGD: group 1 sets \"betas\", which is not an option (lr, momentum, dampening, "
        "weight_decay, nesterov)");
  CHECK(ThrownMessage([&] {
          SGD({{{a}}, {{b}, {{"lr", -0.5}}}}, 0.1);
        }) == "SGD: group 1: invalid learning rate -0.5");
  CHECK(ThrownMessage([&] {
          SGD(std::vector<ParamGroup>{{{a}}, {{a}}}, 0.1);
        }) == "SGD: parameter 1 is the same tensor as 0");
  CHECK(ThrownMessage([&] {
          SGD({{NamedTensors{{"w", a}}}, {NamedTensors{{"w", b}}}}, 0.1);
        }) == "SGD: two parameters have the key w");
  CHECK(ThrownMessage([&] { SGD(std::vector<ParamGroup>{}, 0.1); }) == "SGD: no parameter groups");
  CHECK(ThrownMessage([&] { RMSprop({a}, 0.1, -0.5); }) == "RMSprop: invalid alpha -0.5");
  CHECK(ThrownMessage([&] { Adagrad({a}, 0.1, -1); }) == "Adagrad: invalid lr_decay -1");
  SGD sgd({a}, 0.1);
  CHECK(ThrownMessage([&] { sgd.option(1, "lr"); }) == "SGD: no group 1; there are 1");
  CHECK(ThrownMessage([&] { sgd.option(0, "beta1"); }) ==
        "SGD: no option \"beta1\" (lr, momentum, dampening, weight_decay, nesterov)");
  CHECK(ThrownMessage([&] { sgd.set_option(0, "weight_decay", -1); }) ==
        "SGD: invalid weight_decay -1");
  // Momentum buffers are made before the first step, refused after it.
  SGD fresh({MakeTensor(kInit, DType::kF64)}, 0.1);
  fresh.set_option(0, "momentum", 0.9);
  CHECK(Names(fresh.state())[1] == "optim.0.momentum_buffer");
  a.set_grad(MakeTensor(GradAt(1), DType::kF32));
  sgd.step();
  CHECK(ThrownMessage([&] { sgd.set_option(0, "momentum", 0.9); }) ==
        "SGD: setting momentum of group 0 to 0.9 needs state buffers (momentum_buffer) its "
        "parameters lack after their first step: build the optimizer with that value");
  CHECK(sgd.option(0, "momentum") == 0);
  // A buffer no longer needed stays, unused: momentum 0 is plain SGD again.
  Tensor m = MakeTensor(kInit, DType::kF64), plain_p = MakeTensor(kInit, DType::kF64);
  SGD with_momentum({m}, 0.1, 0.9, 0.5), plain({plain_p}, 0.1);
  with_momentum.set_option(0, "momentum", 0);
  m.set_grad(MakeTensor(GradAt(1), DType::kF64));
  plain_p.set_grad(MakeTensor(GradAt(1), DType::kF64));
  with_momentum.step();
  plain.step();
  CHECK(m.to_vector<double>() == plain_p.to_vector<double>());
}

TEST_CASE("AdamW decouples weight decay from the gradient") {
  // With a zero grad, Adam's L2 term drives the whole step (about lr * sign(p)),
  // while AdamW only shrinks p by the factor 1 - lr * wd.
  Tensor p_adam = MakeTensor({2.0, -4.0}, DType::kF64);
  Tensor p_adamw = MakeTensor({2.0, -4.0}, DType::kF64);
  p_adam.set_grad(zeros({2}, DType::kF64));
  p_adamw.set_grad(zeros({2}, DType::kF64));
  Adam adam({p_adam}, 0.1, 0.9, 0.999, 1e-8, 0.5);
  AdamW adamw({p_adamw}, 0.1, 0.9, 0.999, 1e-8, 0.5);
  adam.step();
  adamw.step();
  CHECK(p_adamw.to_vector<double>() == Vec{2.0 * 0.95, -4.0 * 0.95});
  CHECK(p_adam.to_vector<double>()[0] == Approx(2.0 - 0.1).epsilon(1e-8));
  CHECK(p_adam.to_vector<double>()[1] == Approx(-4.0 + 0.1).epsilon(1e-8));
  CHECK(AdamW({MakeTensor(kInit, DType::kF32)}).name() == "AdamW");
}

TEST_CASE("parameters without a grad are skipped") {
  Tensor a = MakeTensor({1.0, 2.0}, DType::kF32);
  Tensor b = MakeTensor({3.0, 4.0}, DType::kF32);
  Adam opt({a, b}, 0.1);
  a.set_grad(MakeTensor({1.0, 1.0}, DType::kF32));
  opt.step();
  CHECK(b.to_vector<double>() == Vec{3.0, 4.0});
  const NamedTensors state = opt.state();
  CHECK(state[0].first == "optim.0.step");
  CHECK(state[0].second.item<int64_t>() == 1);
  CHECK(state[3].first == "optim.1.step");
  CHECK(state[3].second.item<int64_t>() == 0);
  opt.zero_grad();
  CHECK(!a.grad().defined());
}

TEST_CASE("state names follow the parameter keys, then the groups' options") {
  Tensor w = MakeTensor({1.0}, DType::kF32);
  std::vector<std::string> names;
  for (const auto& [name, t] : SGD(NamedTensors{{"fc.weight", w}}, 0.1, 0.9).state()) {
    names.push_back(name);
  }
  CHECK(names == std::vector<std::string>{
                     "optim.fc.weight.step", "optim.fc.weight.momentum_buffer",
                     "optim.param_groups.0.lr", "optim.param_groups.0.momentum",
                     "optim.param_groups.0.dampening", "optim.param_groups.0.weight_decay",
                     "optim.param_groups.0.nesterov"});
  names.clear();
  for (const auto& [name, t] : Adam({w}).state()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"optim.0.step", "optim.0.exp_avg", "optim.0.exp_avg_sq",
                                          "optim.param_groups.0.lr", "optim.param_groups.0.beta1",
                                          "optim.param_groups.0.beta2", "optim.param_groups.0.eps",
                                          "optim.param_groups.0.weight_decay",
                                          "optim.param_groups.0.amsgrad"});
  // No momentum: the step count and the options only.
  CHECK(SGD({w}, 0.1).state().size() == 1 + 5);
}

// 3 steps, save, restore into a fresh optimizer over a copy of the parameter,
// 2 more steps: bitwise the same as 5 uninterrupted steps.
template <typename MakeOpt>
void CheckResume(MakeOpt make) {
  for (DType dtype : {DType::kF32, DType::kF64}) {
    INFO(DTypeName(dtype));
    auto straight = make(MakeTensor(kInit, dtype));
    RunSteps(*straight, 1, 5);

    auto first = make(MakeTensor(kInit, dtype));
    RunSteps(*first, 1, 3);
    NamedTensors saved;
    for (const auto& [name, t] : first->state()) saved.emplace_back(name, t.clone());
    auto resumed = make(first->params()[0].second.clone());
    REQUIRE(resumed->load_state(saved).ok());
    RunSteps(*resumed, 4, 2);
    CHECK(resumed->params()[0].second.template to_vector<double>() ==
          straight->params()[0].second.template to_vector<double>());
    for (size_t i = 0; i < saved.size(); ++i) {
      CHECK(resumed->state()[i].second.template to_vector<double>() ==
            straight->state()[i].second.template to_vector<double>());
    }
  }
}

TEST_CASE("restored state continues identically") {
  CheckResume([](Tensor p) { return std::make_unique<SGD>(ParamList{p}, 0.1, 0.9, 0.1, 0.01); });
  CheckResume([](Tensor p) { return std::make_unique<SGD>(ParamList{p}, 0.1, 0.9, 0, 0, true); });
  CheckResume([](Tensor p) { return std::make_unique<Adam>(ParamList{p}, 0.05, 0.9, 0.99); });
  CheckResume([](Tensor p) { return std::make_unique<AdamW>(ParamList{p}, 0.05); });
  CheckResume([](Tensor p) {
    return std::make_unique<RMSprop>(ParamList{p}, 0.05, 0.9, 1e-8, 0.01, 0.5, true);
  });
  CheckResume([](Tensor p) { return std::make_unique<Adagrad>(ParamList{p}, 0.1, 0.1, 0, 0.2); });
}

// A clone of `state` with `name` replaced by `value` (or removed, if undefined).
NamedTensors With(const NamedTensors& state, const std::string& name, const Tensor& value) {
  NamedTensors out;
  for (const auto& [n, t] : state) {
    if (n != name) {
      out.emplace_back(n, t.clone());
    } else if (value.defined()) {
      out.emplace_back(n, value);
    }
  }
  return out;
}

TEST_CASE("load_state rejects a mismatched state and changes nothing") {
  Tensor p = MakeTensor({1.0, 2.0}, DType::kF32);
  Adam opt({p}, 0.1);
  p.set_grad(MakeTensor({1.0, -1.0}, DType::kF32));
  opt.step();
  const Vec exp_avg = opt.state()[1].second.to_vector<double>();
  const NamedTensors good = opt.state();

  NamedTensors bad = With(good, "optim.0.exp_avg_sq", Tensor());
  bad = With(bad, "optim.0.exp_avg", zeros({3}, DType::kF32));
  bad.emplace_back("optim.1.exp_avg", zeros({2}, DType::kF32));
  CHECK(opt.load_state(bad).message() ==
        "Adam state does not match the optimizer: missing: optim.0.exp_avg_sq; unexpected: "
        "optim.1.exp_avg; mismatched: optim.0.exp_avg (expected f32[2], got f32[3])");
  CHECK(opt.load_state(With(good, "optim.0.step", scalar(1, DType::kF32))).message() ==
        "Adam state does not match the optimizer: mismatched: optim.0.step (expected i64[], got "
        "f32[])");
  CHECK(opt.load_state(With(good, "optim.0.step", scalar(-2, DType::kI64))).message() ==
        "Adam state: optim.0.step is -2; a step count cannot be negative");
  CHECK(opt.load_state(With(good, "optim.param_groups.0.beta1", scalar(1.5, DType::kF64)))
            .message() == "Adam state: group 0: invalid beta1 1.5");
  CHECK(opt.state()[0].second.item<int64_t>() == 1);
  CHECK(opt.state()[1].second.to_vector<double>() == exp_avg);
  CHECK(opt.option(0, "beta1") == 0.9);
  // A group option that would need other buffers (SGD's momentum from 0).
  SGD plain({p}, 0.1);
  CHECK(plain
            .load_state(
                With(plain.state(), "optim.param_groups.0.momentum", scalar(0.9, DType::kF64)))
            .message() ==
        "SGD state: group 0: its options need state buffers this optimizer's parameters lack");
}

TEST_CASE("invalid hyperparameters, parameters and grads throw") {
  Tensor p = MakeTensor({1.0, 2.0}, DType::kF32);
  CHECK(ThrownMessage([&] { SGD({p}, 0.1, 0.9, 0.5, 0, true); }) ==
        "SGD: Nesterov momentum requires a momentum and zero dampening");
  CHECK(ThrownMessage([&] { SGD({p}, -1); }) == "SGD: invalid learning rate -1");
  CHECK(ThrownMessage([&] { Adam({p}, 0.1, 1.0); }) == "Adam: invalid beta1 1");
  CHECK(ThrownMessage([&] { Adam({p, p}); }) == "Adam: parameter 1 is the same tensor as 0");
  CHECK(ThrownMessage([&] { SGD({zeros({2}, DType::kI64)}, 0.1); }) ==
        "SGD: parameter 0 has dtype i64; only f32 and f64 parameters can be optimized");
  CHECK(ThrownMessage([&] {
          SGD({zeros({2, 3}).transpose(0, 1)}, 0.1);
        }) == "SGD: parameter 0 is not contiguous");
  SGD opt({p}, 0.1);
  p.set_grad(zeros({3}));
  CHECK(ThrownMessage([&] { opt.step(); }) == "SGD: grad of 0 is f32[3], parameter is f32[2]");
  // Every grad is checked before any parameter moves: nothing changes.
  Tensor good = MakeTensor({1.0, 2.0}, DType::kF32), bad = MakeTensor({3.0}, DType::kF32);
  Adam adam({good, bad});
  good.set_grad(MakeTensor({1.0, 1.0}, DType::kF32));
  bad.set_grad(zeros({2}));
  CHECK(ThrownMessage([&] { adam.step(); }) == "Adam: grad of 1 is f32[2], parameter is f32[1]");
  CHECK(good.to_vector<double>() == Vec{1.0, 2.0});
  CHECK(adam.state()[0].first == "optim.0.step");
  CHECK(adam.state()[0].second.item<int64_t>() == 0);
}

// Parameters of several sizes, more elements in all than a step keeps on one
// thread, with grads that differ from element to element.
std::vector<Tensor> LargeParams(DType dtype) {
  std::vector<Tensor> params;
  for (int64_t n : {70001, 3, 40000, 17}) {
    Tensor p = testing::Random({n}, dtype, /*seed=*/n);
    p.set_grad(testing::Random({n}, dtype, /*seed=*/n + 1));
    params.push_back(p);
  }
  return params;
}

TEST_CASE("a step split between threads gives the bits of one thread") {
  using Make = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;
  const std::vector<std::pair<std::string, Make>> optimizers = {
      {"SGD", [](auto p) { return std::make_unique<SGD>(p, 0.1, 0.9, 0, 0.01, true); }},
      {"Adam", [](auto p) { return std::make_unique<Adam>(p, 0.01, 0.9, 0.99, 1e-8, 0.1); }},
      {"AdamW", [](auto p) { return std::make_unique<AdamW>(p, 0.01); }},
      {"RMSprop",
       [](auto p) { return std::make_unique<RMSprop>(p, 0.01, 0.9, 1e-8, 0.1, 0.5, true); }},
      {"Adagrad", [](auto p) { return std::make_unique<Adagrad>(p, 0.1, 0.01, 0.1, 0.5); }},
  };
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (const auto& [name, make] : optimizers) {
      INFO(name << " in " << DTypeName(dtype));
      std::vector<std::vector<Tensor>> results;
      for (int threads : {1, 2, 3}) {
        std::vector<Tensor> params = LargeParams(dtype);
        std::unique_ptr<Optimizer> opt = make(params);
        testing::OnThreads(threads, [&] {
          for (int t = 0; t < 3; ++t) opt->step();
        });
        results.push_back(params);
      }
      const std::vector<Tensor> before = LargeParams(dtype);
      for (size_t k = 0; k < before.size(); ++k) {
        const std::vector<double> one_thread = results[0][k].to_vector<double>();
        CHECK(one_thread != before[k].to_vector<double>());
        CHECK(results[1][k].to_vector<double>() == one_thread);
        CHECK(results[2][k].to_vector<double>() == one_thread);
      }
    }
  }
}

#if defined(TC_COUNT_ALLOCATIONS)
TEST_CASE("a step allocates nothing") {
  Tensor w = MakeTensor(kInit, DType::kF32);
  Tensor b = MakeTensor({1.0, 2.0}, DType::kF64);
  w.set_grad(MakeTensor(GradAt(1), DType::kF32));
  b.set_grad(MakeTensor({0.5, 0.5}, DType::kF64));
  SGD sgd({w, b}, 0.1, 0.9, 0, 0.01, true);
  AdamW adamw({w, b});
  RMSprop rmsprop({{{w}}, {{b}, {{"momentum", 0.9}, {"centered", 1}}}});
  Adagrad adagrad({w, b});
  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < 3; ++i) {
    sgd.step();
    adamw.step();
    rmsprop.step();
    adagrad.step();
  }
  g_counting = false;
  CHECK(g_allocations == 0);
  // Nor does one split between threads, once their team exists.
  std::vector<Tensor> large = LargeParams(DType::kF32);
  Adam adam(large);
  testing::OnThreads(2, [&] {
    adam.step();
    g_counting = true;
    adam.step();
    g_counting = false;
  });
  CHECK(g_allocations == 0);
  // The counter does see allocations (of any library): a new tensor makes some.
  g_counting = true;
  Tensor t = zeros({2});
  g_counting = false;
  CHECK(g_allocations > 0);
}
#endif

}  // namespace
}  // namespace tc::nn
