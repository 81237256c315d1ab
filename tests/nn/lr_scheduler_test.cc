// The learning-rate schedulers against PyTorch's closed forms over 200 steps
// (the recursions they run must stay on them), chained and sequential ones
// included; OneCycleLR's phases and momentum; ReduceLROnPlateau on a
// hand-traced metric; the state through a save and a resume, bit for bit;
// and the errors.
#include "nn/lr_scheduler.h"

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc::nn {
namespace {

using testing::ThrownMessage;

constexpr double kPi = 3.14159265358979323846;
constexpr int kSteps = 200;

std::unique_ptr<SGD> MakeSgd(std::vector<double> lrs = {0.1}, double momentum = 0.9) {
  std::vector<ParamGroup> groups;
  for (double lr : lrs) groups.push_back({{zeros({2})}, {{"lr", lr}}});
  return std::make_unique<SGD>(std::move(groups), lrs[0], momentum);
}

// Group `group`'s rate after construction and after each of kSteps steps
// equals want(t, base) within a relative 1e-12.
void RequireFollows(LRScheduler& scheduler, const std::function<double(int, double)>& want,
                    int steps = kSteps) {
  Optimizer& opt = scheduler.optimizer();
  std::vector<double> bases;
  for (int g = 0; g < opt.num_groups(); ++g) bases.push_back(*opt.initial_lr(g));
  for (int t = 0; t <= steps; ++t) {
    if (t > 0) scheduler.step();
    for (int g = 0; g < opt.num_groups(); ++g) {
      INFO("step " << t << " group " << g);
      const double expected = want(t, bases[g]);
      REQUIRE(opt.option(g, "lr") == Approx(expected).epsilon(1e-12).margin(1e-15));
      REQUIRE(scheduler.get_last_lr()[g] == opt.option(g, "lr"));
    }
  }
}

TEST_CASE("StepLR, MultiStepLR, ExponentialLR follow their closed forms over 200 steps") {
  auto sgd = MakeSgd({0.1, 0.02});
  StepLR step_lr(*sgd, 30, 0.5);
  RequireFollows(step_lr, [](int t, double base) { return base * std::pow(0.5, t / 30); });

  sgd = MakeSgd({0.1, 0.02});
  MultiStepLR multi(*sgd, {150, 20, 80, 80}, 0.3);  // unsorted, 80 twice
  RequireFollows(multi, [](int t, double base) {
    const int passed = (t >= 20) + 2 * (t >= 80) + (t >= 150);
    return base * std::pow(0.3, passed);
  });

  sgd = MakeSgd({0.1, 0.02});
  ExponentialLR exponential(*sgd, 0.97);
  RequireFollows(exponential, [](int t, double base) { return base * std::pow(0.97, t); });
}

TEST_CASE("CosineAnnealingLR and LinearLR follow their closed forms, past t_max too") {
  auto sgd = MakeSgd({0.1, 0.02});
  CosineAnnealingLR cosine(*sgd, 30, 0.001);
  RequireFollows(cosine, [](int t, double base) {
    return 0.001 + (base - 0.001) * (1 + std::cos(kPi * t / 30)) / 2;
  });

  sgd = MakeSgd({0.1, 0.02});
  LinearLR warmup(*sgd, 0.25, 1.0, 20);
  RequireFollows(warmup,
                 [](int t, double base) { return base * (0.25 + 0.75 * std::min(t, 20) / 20.0); });
}

TEST_CASE("ChainedScheduler multiplies its schedulers' factors; SequentialLR hands over") {
  auto sgd = MakeSgd({0.1, 0.02});
  ChainedScheduler chained(
      {std::make_shared<ExponentialLR>(*sgd, 0.99), std::make_shared<StepLR>(*sgd, 10, 0.5)});
  RequireFollows(
      chained, [](int t, double base) { return base * std::pow(0.99, t) * std::pow(0.5, t / 10); });
  // Chained in another order than they were built: the rate at step 0 is
  // the one they left (LinearLR's start factor), as PyTorch's.
  sgd = MakeSgd();
  auto exponential = std::make_shared<ExponentialLR>(*sgd, 0.9);
  auto linear = std::make_shared<LinearLR>(*sgd, 0.5, 1.0, 4);
  ChainedScheduler reordered({linear, exponential});
  CHECK(sgd->lr() == Approx(0.05));

  // A linear warm-up for 5 steps, then a cosine decay from the base rate.
  sgd = MakeSgd({0.1, 0.02});
  auto warmup = std::make_shared<LinearLR>(*sgd, 0.1, 1.0, 5);
  auto decay = std::make_shared<CosineAnnealingLR>(*sgd, 50);
  SequentialLR sequential(*sgd, {warmup, decay}, {5});
  RequireFollows(sequential, [](int t, double base) {
    if (t < 5) return base * (0.1 + 0.9 * t / 5.0);
    return base * (1 + std::cos(kPi * (t - 5) / 50)) / 2;
  });
}

TEST_CASE("OneCycleLR goes up over pct_start, down to max_lr / 25 / 1e4, momentum against it") {
  auto sgd = MakeSgd();
  OneCycleLR one_cycle(*sgd, 1.0, {.total_steps = 100});
  // The phases end at steps 29 and 99; cosine annealing within each.
  auto anneal = [](double start, double end, double pct) {
    return end + (start - end) / 2 * (std::cos(kPi * pct) + 1);
  };
  for (int t = 0; t <= 100; ++t) {
    if (t > 0) one_cycle.step();
    INFO("step " << t);
    const bool up = t <= 29;
    const double pct = up ? t / 29.0 : (t - 29) / 70.0;
    REQUIRE(sgd->lr() == Approx(up ? anneal(0.04, 1, pct) : anneal(1, 4e-6, pct)).epsilon(1e-12));
    REQUIRE(sgd->option(0, "momentum") ==
            Approx(up ? anneal(0.95, 0.85, pct) : anneal(0.85, 0.95, pct)).epsilon(1e-12));
  }
  CHECK_THROWS_WITH(one_cycle.step(), "OneCycleLR: step 101 is past total_steps 100");

  // Three phases, linear: up to max, back to the start at 2 * 30 - 2, then
  // down; Adam's beta1 cycles.
  Adam adam({zeros({2})});
  OneCycleLR three(adam, 0.5,
                   {.total_steps = 100, .anneal_strategy = "linear", .three_phase = true});
  std::vector<double> lrs = {adam.lr()}, betas = {adam.option(0, "beta1")};
  for (int t = 1; t <= 99; ++t) {
    three.step();
    lrs.push_back(adam.lr());
    betas.push_back(adam.option(0, "beta1"));
  }
  CHECK(lrs[0] == Approx(0.02));
  CHECK(lrs[29] == Approx(0.5));
  CHECK(lrs[15] == Approx(0.02 + (0.5 - 0.02) * 15 / 29));
  CHECK(lrs[58] == Approx(0.02));
  CHECK(lrs[99] == Approx(0.02 / 1e4));
  CHECK(betas[0] == Approx(0.95));
  CHECK(betas[29] == Approx(0.85));
  CHECK(betas[99] == Approx(0.95));

  // SGD built without momentum cycles it too: its buffers are made before
  // the first step, as PyTorch makes them lazily.
  auto plain = std::make_unique<SGD>(std::vector<ParamGroup>{{{zeros({2})}}}, 0.1);
  OneCycleLR plain_cycle(*plain, 1.0, {.total_steps = 10});
  CHECK(plain->option(0, "momentum") == Approx(0.95));
  CHECK(plain->state()[1].first == "optim.0.momentum_buffer");

  Adagrad adagrad({zeros({2})});
  CHECK_THROWS_WITH(OneCycleLR(adagrad, 1.0, {.total_steps = 10}),
                    "OneCycleLR: Adagrad has neither momentum nor beta1 to cycle; pass "
                    "cycle_momentum = false");
  OneCycleLR no_momentum(adagrad, 1.0, {.total_steps = 10, .cycle_momentum = false});
  CHECK(adagrad.lr() == Approx(0.04));
}

TEST_CASE("ReduceLROnPlateau cuts the rate after patience bad steps, then cools down") {
  auto sgd = MakeSgd({0.1, 0.001});
  ReduceLROnPlateau plateau(*sgd, {.factor = 0.5, .patience = 2, .cooldown = 1, .min_lr = 0.0008});
  // Improvements at steps 1-2; 3, 4, 5 are bad (the third exceeds patience
  // 2: cut); 6 cools down; 7, 8, 9 bad again: cut at 9.
  const std::vector<double> metrics = {5, 4, 4.5, 4.2, 4.1, 4.3, 4.3, 4.3, 4.3};
  const std::vector<double> want = {0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025};
  for (size_t i = 0; i < metrics.size(); ++i) {
    plateau.step(metrics[i]);
    INFO("step " << i + 1);
    CHECK(sgd->option(0, "lr") == Approx(want[i]));
  }
  // The second group stops at min_lr: 0.001 -> 0.0008, then unchanged.
  CHECK(sgd->option(1, "lr") == Approx(0.0008));
  // A relative improvement below the threshold is not one.
  auto other = MakeSgd();
  ReduceLROnPlateau strict(*other, {.mode = "max", .patience = 0, .threshold = 0.1});
  strict.step(1.0);
  strict.step(1.05);  // not above 1.0 * 1.1
  CHECK(other->lr() == Approx(0.01));
  CHECK_THROWS_WITH(strict.step(), "ReduceLROnPlateau: step() needs the metric: call step(metric)");
}

TEST_CASE("OneCycleLR takes one max_lr per group") {
  auto sgd = MakeSgd({0.1, 0.1});
  OneCycleLR one_cycle(*sgd, std::vector<double>{1.0, 0.2}, {.total_steps = 100});
  CHECK(sgd->option(0, "lr") == Approx(1.0 / 25));
  CHECK(sgd->option(1, "lr") == Approx(0.2 / 25));
  for (int t = 1; t <= 29; ++t) one_cycle.step();
  CHECK(sgd->option(0, "lr") == Approx(1.0));  // the peak, at the end of pct_start
  CHECK(sgd->option(1, "lr") == Approx(0.2));
  CHECK_THROWS_WITH(OneCycleLR(*sgd, std::vector<double>{1.0}, {.total_steps = 10}),
                    "OneCycleLR: expected one max_lr per parameter group (2), got 1");
}

TEST_CASE("any scheduler steps through the base with a metric; only a plateau watches it") {
  auto sgd = MakeSgd();
  std::vector<std::unique_ptr<LRScheduler>> schedulers;
  schedulers.push_back(std::make_unique<StepLR>(*sgd, 1, 0.5));
  auto watched = MakeSgd();
  schedulers.push_back(
      std::make_unique<ReduceLROnPlateau>(*watched, PlateauOptions{.patience = 0}));
  CHECK(!schedulers[0]->needs_metric());
  CHECK(schedulers[1]->needs_metric());
  for (double metric : {3.0, 4.0}) {
    for (auto& s : schedulers) s->step(metric);
  }
  CHECK(sgd->lr() == Approx(0.025));     // two halvings, the metric ignored
  CHECK(watched->lr() == Approx(0.01));  // 4 is no better than 3: cut once
  // A chain passes the metric on.
  auto chained_opt = MakeSgd();
  auto plateau = std::make_shared<ReduceLROnPlateau>(*chained_opt, PlateauOptions{.patience = 0});
  ChainedScheduler chain({std::make_shared<StepLR>(*chained_opt, 1, 0.5), plateau});
  CHECK(chain.needs_metric());
  chain.step(3.0);
  chain.step(4.0);
  CHECK(chained_opt->lr() == Approx(0.1 * 0.25 * 0.1));
}

// 80 steps, a snapshot of the optimizer's and the scheduler's state, a fresh
// optimizer and scheduler loaded from it, 80 more steps: the rates (and
// momentum) equal an uninterrupted run's at every step, bit for bit.
void CheckResume(const std::function<std::unique_ptr<LRScheduler>(Optimizer&)>& make,
                 bool plateau = false) {
  auto step = [&](LRScheduler& s, int t) {
    if (plateau) {
      static_cast<ReduceLROnPlateau&>(s).step(t % 7 == 0 ? 1.0 : 2.0 + t % 3);
    } else {
      s.step();
    }
  };
  auto straight_opt = MakeSgd({0.1, 0.03});
  auto straight = make(*straight_opt);
  std::vector<double> want;
  for (int t = 1; t <= 160; ++t) {
    step(*straight, t);
    want.push_back(straight_opt->option(1, "lr") + straight_opt->option(0, "momentum"));
  }
  auto first_opt = MakeSgd({0.1, 0.03});
  auto first = make(*first_opt);
  for (int t = 1; t <= 80; ++t) step(*first, t);
  NamedTensors opt_state, sched_state;
  for (const auto& [name, t] : first_opt->state()) opt_state.emplace_back(name, t.clone());
  sched_state = first->state();

  auto resumed_opt = MakeSgd({0.1, 0.03});
  auto resumed = make(*resumed_opt);
  REQUIRE(resumed_opt->load_state(opt_state).ok());
  REQUIRE(resumed->load_state(sched_state).ok());
  for (int t = 81; t <= 160; ++t) {
    step(*resumed, t);
    INFO("step " << t);
    REQUIRE(resumed_opt->option(1, "lr") + resumed_opt->option(0, "momentum") == want[t - 1]);
  }
}

TEST_CASE("every scheduler resumes from its saved state exactly") {
  CheckResume([](Optimizer& o) { return std::make_unique<StepLR>(o, 7, 0.8); });
  CheckResume([](Optimizer& o) {
    return std::make_unique<MultiStepLR>(o, std::vector<int64_t>{50, 90});
  });
  CheckResume([](Optimizer& o) { return std::make_unique<ExponentialLR>(o, 0.98); });
  CheckResume([](Optimizer& o) { return std::make_unique<CosineAnnealingLR>(o, 40, 1e-3); });
  CheckResume([](Optimizer& o) { return std::make_unique<LinearLR>(o, 0.2, 1.0, 100); });
  CheckResume([](Optimizer& o) {
    return std::make_unique<OneCycleLR>(o, 0.5, OneCycleOptions{.total_steps = 160});
  });
  CheckResume(
      [](Optimizer& o) {
        // factor 0.9: the rate stays far above eps over the 160 steps.
        return std::make_unique<ReduceLROnPlateau>(o, PlateauOptions{.factor = 0.9, .patience = 3});
      },
      /*plateau=*/true);
  CheckResume([](Optimizer& o) {
    return std::make_unique<ChainedScheduler>(std::vector<std::shared_ptr<LRScheduler>>{
        std::make_shared<ExponentialLR>(o, 0.99), std::make_shared<StepLR>(o, 30, 0.5)});
  });
  CheckResume([](Optimizer& o) {
    return std::make_unique<SequentialLR>(
        o,
        std::vector<std::shared_ptr<LRScheduler>>{std::make_shared<LinearLR>(o, 0.1, 1.0, 10),
                                                  std::make_shared<CosineAnnealingLR>(o, 100)},
        std::vector<int64_t>{10});
  });
}

TEST_CASE("schedulers refuse bad arguments and mismatched state") {
  auto sgd = MakeSgd();
  CHECK(ThrownMessage([&] { StepLR(*sgd, 0); }) == "StepLR: step_size must be > 0, got 0");
  CHECK(ThrownMessage([&] { CosineAnnealingLR(*sgd, 0); }) ==
        "CosineAnnealingLR: t_max must be > 0, got 0");
  CHECK(ThrownMessage([&] { LinearLR(*sgd, 0); }) ==
        "LinearLR: start_factor must be in (0, 1], got 0");
  CHECK(ThrownMessage([&] {
          OneCycleLR(*sgd, 1, {.total_steps = 10, .anneal_strategy = "step"});
        }) == "OneCycleLR: anneal_strategy must be \"cos\" or \"linear\", got \"step\"");
  CHECK(ThrownMessage([&] { ReduceLROnPlateau(*sgd, {.mode = "lowest"}); }) ==
        "ReduceLROnPlateau: mode must be \"min\" or \"max\", got \"lowest\"");
  CHECK(ThrownMessage([&] {
          auto a = std::make_shared<StepLR>(*sgd, 5);
          SequentialLR(*sgd, {a, a}, {});
        }) == "SequentialLR: expected 1 milestones for 2 schedulers, got 0");

  StepLR step_lr(*sgd, 5);
  ExponentialLR other(*sgd, 0.9);
  CHECK(step_lr.load_state(other.state()).ok());  // same fields: accepted
  NamedTensors bad = step_lr.state();
  bad[1].second = zeros({2}, DType::kF64);
  CHECK(step_lr.load_state(bad).message() ==
        "StepLR state does not match the scheduler: mismatched: optim.lr_scheduler.base_lrs "
        "(expected f64[1], got f64[2])");
  bad = step_lr.state();
  bad[0].second = scalar(-3, DType::kI64);
  CHECK(step_lr.load_state(bad).message() ==
        "StepLR state: optim.lr_scheduler.last_epoch is -3; it cannot be negative");
}

}  // namespace
}  // namespace tc::nn
