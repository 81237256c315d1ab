// The compiled training step against eager training of the same model: the
// losses and every parameter and buffer after three steps, in f64 (tight)
// and f32, with SGD and Adam; and the errors a caller can hit.
#include "pipeline/train_step.h"

#include <cmath>

#include "catch2/catch.hpp"
#include "nn/clip_grad.h"
#include "nn/layers.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "runtime/bf16.h"
#include "runtime/ops.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

std::vector<Tensor> Batch(const nn::ModelSpec& spec) {
  std::vector<Tensor> batch = Flatten(spec.inputs).first;
  for (const Tensor& t : Flatten(spec.targets).first) batch.push_back(t);
  return batch;
}

nn::ModelSpec Model(const std::string& name, DType dtype) {
  nn::ModelSpec spec = nn::MakeModel(name, 5).value();
  spec.module->to(dtype);
  auto cast = [&](const Tensor& t) { return IsFloating(t.dtype()) ? t.to(dtype) : t; };
  spec.inputs = spec.inputs.Map(cast);
  spec.targets = spec.targets.Map(cast);
  return spec;
}

std::unique_ptr<nn::Optimizer> MakeOptimizer(const std::string& kind, nn::Module& module) {
  // Adam divides by the gradient's RMS, so a parameter whose exact gradient
  // is 0 (a convolution's bias ahead of batch norm) would take full steps in
  // the direction of f32 rounding noise, which any other summation order
  // flips; eps = 1e-4 keeps such steps at the noise's size.
  if (kind == "adam") {
    return std::make_unique<nn::Adam>(module.named_parameters(), 1e-3, 0.9, 0.999, /*eps=*/1e-4);
  }
  return std::make_unique<nn::SGD>(module.named_parameters(), 0.05, /*momentum=*/0.9);
}

void CheckAgainstEager(const std::string& name, DType dtype, const std::string& optimizer,
                       double tol, const testing::NamedCompiler& compiler) {
  INFO(name << " " << DTypeName(dtype) << " " << optimizer << " " << compiler.name);
  nn::ModelSpec compiled = Model(name, dtype), eager = Model(name, dtype);
  std::unique_ptr<nn::Optimizer> opt_c = MakeOptimizer(optimizer, *compiled.module);
  std::unique_ptr<nn::Optimizer> opt_e = MakeOptimizer(optimizer, *eager.module);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*compiled.module, compiled.loss, compiled.inputs, compiled.targets, *opt_c,
                        {.compiler = compiler.compiler})
          .value();
  const std::vector<Tensor> batch = Batch(compiled);
  for (int i = 0; i < 3; ++i) {
    const double loss_c = step->Run(batch).value();
    opt_e->zero_grad();
    const Tensor loss_e = eager.loss((*eager.module)(eager.inputs), eager.targets);
    loss_e.backward();
    opt_e->step();
    REQUIRE(loss_c == Approx(loss_e.to(DType::kF64).item<double>()).epsilon(tol));
  }
  testing::RequireSameState(*compiled.module, *eager.module, tol, /*grads=*/false);
}

TEST_CASE("a compiled training step trains as eager does, under either compiler") {
  for (const testing::NamedCompiler& compiler : testing::AllCompilers()) {
    for (const std::string name : {"linear", "convbn", "mlp", "cnn", "transformer"}) {
      CheckAgainstEager(name, DType::kF64, "sgd", 1e-10, compiler);
      CheckAgainstEager(name, DType::kF32, "adam", 1e-4, compiler);
    }
  }
}

// The squared distance between each parameter of `a` and `b` and the one
// `before` held, summed: |a - before|^2 and |a - b|^2 over all parameters.
struct UpdateGap {
  double update = 0, gap = 0;
};
UpdateGap CompareUpdates(const nn::Module& a, const nn::Module& b, const nn::NamedTensors& before) {
  const nn::NamedTensors pa = a.named_parameters(), pb = b.named_parameters();
  UpdateGap g;
  for (size_t i = 0; i < before.size(); ++i) {
    const Tensor x = pa[i].second.to(DType::kF64), y = pb[i].second.to(DType::kF64);
    const Tensor step = sub(x, before[i].second.to(DType::kF64));
    g.update += sum(mul(step, step)).item<double>();
    const Tensor d = sub(x, y);
    g.gap += sum(mul(d, d)).item<double>();
  }
  return g;
}

TEST_CASE("a bf16 training step tracks the f32 one, for every reference model") {
  // bf16 keeps 8 significant bits: each product's operands are rounded by up
  // to 2^-9 relative, which after a few layers and three steps leaves the
  // losses within 2% and the parameters' updates within 10% (as norms) of
  // f32's. Without bf16 instructions the bf16 step is the f32 step.
  bool any_differs = false;
  for (const std::string& name : nn::ModelNames()) {
    INFO(name);
    nn::ModelSpec f32 = nn::MakeModel(name, 5).value(), bf16 = nn::MakeModel(name, 5).value();
    nn::NamedTensors before;
    for (const auto& [n, p] : f32.module->named_parameters()) before.emplace_back(n, p.clone());
    nn::SGD sgd_f32(f32.module->named_parameters(), 0.05);
    nn::SGD sgd_bf16(bf16.module->named_parameters(), 0.05);
    std::unique_ptr<TrainStep> step_f32 =
        TrainStep::Create(*f32.module, f32.loss, f32.inputs, f32.targets, sgd_f32).value();
    std::unique_ptr<TrainStep> step_bf16 =
        TrainStep::Create(*bf16.module, bf16.loss, bf16.inputs, bf16.targets, sgd_bf16,
                          {.precision = Precision::kBF16})
            .value();
    for (int i = 0; i < 3; ++i) {
      // The same dropout masks in both.
      DefaultGenerator().Reseed(100 + i);
      const double loss_f32 = step_f32->Run(Batch(f32)).value();
      DefaultGenerator().Reseed(100 + i);
      const double loss_bf16 = step_bf16->Run(Batch(bf16)).value();
      if (CpuHasBf16()) {
        CHECK(loss_bf16 == Approx(loss_f32).epsilon(2e-2));
      } else {
        CHECK(loss_bf16 == loss_f32);
      }
      any_differs = any_differs || loss_bf16 != loss_f32;
    }
    const UpdateGap g = CompareUpdates(*bf16.module, *f32.module, before);
    CHECK(std::sqrt(g.gap) <= 0.1 * std::sqrt(g.update));
  }
  CHECK(any_differs == CpuHasBf16());
}

TEST_CASE("gradient clipping inside a step equals clipping the eager gradients") {
  for (const bool by_norm : {true, false}) {
    INFO((by_norm ? "clip_grad_norm" : "clip_grad_value"));
    nn::ModelSpec compiled = Model("mlp", DType::kF64), eager = Model("mlp", DType::kF64);
    nn::SGD opt_c(compiled.module->named_parameters(), 0.05, 0.9);
    nn::SGD opt_e(eager.module->named_parameters(), 0.05, 0.9);
    // Small enough that every step clips.
    TrainStepOptions options;
    if (by_norm) {
      options.clip_grad_norm = 0.05;
      options.clip_norm_type = 3;
    } else {
      options.clip_grad_value = 1e-3;
    }
    std::unique_ptr<TrainStep> step =
        TrainStep::Create(*compiled.module, compiled.loss, compiled.inputs, compiled.targets, opt_c,
                          options)
            .value();
    const std::vector<Tensor> batch = Batch(compiled);
    for (int i = 0; i < 3; ++i) {
      step->Run(batch).value();
      opt_e.zero_grad();
      eager.loss((*eager.module)(eager.inputs), eager.targets).backward();
      if (by_norm) {
        const double norm = nn::clip_grad_norm_(eager.module->parameters(), 0.05, 3);
        CHECK(norm > 0.05);
        CHECK(step->last_grad_norm() == Approx(norm).epsilon(1e-10));
      } else {
        nn::clip_grad_value_(eager.module->parameters(), 1e-3);
        CHECK(std::isnan(step->last_grad_norm()));
      }
      opt_e.step();
    }
    testing::RequireSameState(*compiled.module, *eager.module, 1e-10, /*grads=*/false);
  }
  nn::ModelSpec spec = Model("linear", DType::kF64);
  nn::SGD sgd(spec.module->named_parameters(), 0.1);
  CHECK(TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd,
                          {.clip_grad_value = -1})
            .status()
            .message() == "TrainStep: clip_grad_value must be >= 0, got -1");
  CHECK(TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd,
                          {.clip_grad_norm = 1, .clip_norm_type = 0})
            .status()
            .message() == "TrainStep: clip_norm_type must be > 0, got 0");
}

TEST_CASE("the staged compile hands the cnn's saved activations to the backward channels-last") {
  nn::ModelSpec spec = Model("cnn", DType::kF32);
  nn::SGD sgd(spec.module->named_parameters(), 0.1);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd).value();
  // Outputs: the loss, the running statistics, then the saved values.
  int channels_last = 0;
  for (int i = 0; i < step->forward().num_outputs(); ++i) {
    channels_last += step->forward().output_order(i) == kChannelsLast;
  }
  CHECK(step->forward().output_order(0).empty());
  CHECK(channels_last > 0);
  CHECK(step->forward().planned_memory().arena_bytes > 0);
  CHECK(step->forward().planned_memory().saved_bytes > 0);
}

TEST_CASE("a batch of the wrong count, dtype or shape is an error naming it") {
  nn::ModelSpec spec = Model("mlp", DType::kF32);
  nn::SGD sgd(spec.module->named_parameters(), 0.1);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd).value();
  std::vector<Tensor> batch = Batch(spec);
  absl::StatusOr<double> r = step->Run({batch[0]});
  REQUIRE(r.status().message() ==
          "TrainStep: expected 2 batch tensors (inputs, then targets), got 1");
  // A batch of another size compiles for any size, which a model whose
  // inputs disagree in their batch cannot be.
  r = step->Run({zeros({64, 784}), batch[1]});
  REQUIRE_FALSE(r.ok());
  REQUIRE_THAT(std::string(r.status().message()),
               Catch::StartsWith("TrainStep: batch[0] (inputs): expected f32[128,784], got "
                                 "f32[64,784]; "
                                 "compiled for any size of the dims that differ, it fails: "
                                 "cross_entropy: expected targets i64[s") &&
                   Catch::Contains("got i64[128]"));
  // Not tried again: the same answer, and still one compilation.
  r = step->Run({zeros({64, 784}), batch[1]});
  REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("it fails: cross_entropy"));
  REQUIRE(step->compilations() == 1);
  REQUIRE(step->Run(batch).ok());  // the failed runs left it usable
  // The targets are named as Create's argument is, not by their placeholder.
  r = step->Run({batch[0], batch[1].to(DType::kF32)});
  REQUIRE(r.status().message() == "TrainStep: batch[1] (targets): expected i64[128], got f32[128]");
}

TEST_CASE("a compiled step refuses a class target out of range, and stays usable") {
  nn::ModelSpec spec = Model("mlp", DType::kF32);
  nn::SGD sgd(spec.module->named_parameters(), 0.1);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd).value();
  std::vector<Tensor> batch = Batch(spec);
  Tensor bad = batch[1].clone();
  bad.data<int64_t>()[3] = 10;  // the mlp has 10 classes
  const absl::StatusOr<double> r = step->Run({batch[0], bad});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(std::string(r.status().message()),
             Catch::Contains("check_class_index: target 10 of sample 3 is not a class in [0, 10)"));
  CHECK(step->Run(batch).ok());
}

TEST_CASE("a loss that is not one scalar is rejected") {
  nn::ModelSpec spec = Model("linear", DType::kF32);
  nn::SGD sgd(spec.module->named_parameters(), 0.1);
  nn::LossFn not_scalar = [](const TensorTree& out, const TensorTree&) { return out.leaf(); };
  absl::StatusOr<std::unique_ptr<TrainStep>> step =
      TrainStep::Create(*spec.module, not_scalar, spec.inputs, spec.targets, sgd);
  REQUIRE(step.status().message() == "TrainStep: the loss must be one scalar tensor");
}

TEST_CASE("a step that returns the model's outputs gives eager's, and trains as eager does") {
  // convbn: the outputs come before the updated running statistics.
  for (const std::string name : {"mlp", "convbn", "transformer"}) {
    INFO(name);
    nn::ModelSpec compiled = Model(name, DType::kF64), eager = Model(name, DType::kF64);
    std::unique_ptr<nn::Optimizer> opt_c = MakeOptimizer("sgd", *compiled.module);
    std::unique_ptr<nn::Optimizer> opt_e = MakeOptimizer("sgd", *eager.module);
    std::unique_ptr<TrainStep> step =
        TrainStep::Create(*compiled.module, compiled.loss, compiled.inputs, compiled.targets,
                          *opt_c, {.return_outputs = true})
            .value();
    for (int i = 0; i < 3; ++i) {
      const double loss_c = step->Run(Batch(compiled)).value();
      opt_e->zero_grad();
      const TensorTree out_e = (*eager.module)(eager.inputs);
      const Tensor loss_e = eager.loss(out_e, eager.targets);
      loss_e.backward();
      opt_e->step();
      REQUIRE(loss_c == Approx(loss_e.item<double>()).epsilon(1e-10));
      const std::vector<Tensor> out_c = Flatten(step->outputs().value()).first;
      const std::vector<Tensor> expected = Flatten(out_e).first;
      REQUIRE(out_c.size() == expected.size());
      for (size_t k = 0; k < out_c.size(); ++k) {
        CHECK(testing::CompareTensors(out_c[k], expected[k].detach(), 1e-10, 1e-12) == "");
      }
    }
    testing::RequireSameState(*compiled.module, *eager.module, 1e-10, /*grads=*/false);
  }
}

TEST_CASE("a step's outputs follow a batch of another size") {
  nn::ModelSpec spec = Model("mlp", DType::kF32);
  nn::SGD sgd(spec.module->named_parameters(), 0.1);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd,
                        {.dynamic_dims = {{"arg0", {0}}, {"arg1", {0}}}, .return_outputs = true})
          .value();
  std::vector<Tensor> batch = Batch(spec);
  const Tensor x = batch[0].slice(0, 0, 40).contiguous(), y = batch[1].slice(0, 0, 40).contiguous();
  const Tensor expected = (*spec.module)(TensorTree::MakeLeaf(x)).leaf().detach();
  REQUIRE(step->Run({x, y}).ok());
  const Tensor out = step->outputs().value().leaf();
  CHECK(out.shape() == Shape{40, 10});
  CHECK(testing::CompareTensors(out, expected, 1e-5, 1e-6) == "");
  REQUIRE(step->Run(batch).ok());
  CHECK(step->outputs().value().leaf().shape() == Shape{128, 10});
}

TEST_CASE("outputs() of a step that does not return them is an error") {
  nn::ModelSpec spec = Model("linear", DType::kF32);
  nn::SGD sgd(spec.module->named_parameters(), 0.1);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd).value();
  REQUIRE(step->outputs().status().message() ==
          "TrainStep: outputs() of a step created without TrainStepOptions::return_outputs");
}

TEST_CASE("a step program whose model output's tangent the backward reads is refused") {
  nn::ModelSpec spec = Model("mlp", DType::kF32);
  nn::SGD sgd(spec.module->named_parameters(), 0.1);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd).value();
  const StepProgram& program = step->compiled().program();
  REQUIRE(VerifyStepProgram(program).ok());
  // Call the first saved value a model output: the loss's tangent, which
  // the backward reads, becomes the one after it.
  StepProgram edited{.forward = program.forward.Clone(),
                     .backward = program.backward.Clone(),
                     .inputs = program.inputs,
                     .batch_words = program.batch_words,
                     .num_outputs = 1,
                     .mutated_buffers = program.mutated_buffers,
                     .num_saved = program.num_saved - 1,
                     .gradient_of = program.gradient_of,
                     .random = program.random,
                     .dynamic_dims = program.dynamic_dims};
  REQUIRE(VerifyStepProgram(edited).message() ==
          "step program: model output 0 must be detached, but the backward reads its tangent");
}

}  // namespace
}  // namespace tc
