// The whole training step compiled once: a model and its loss traced
// together, split by the min-cut partitioner, both halves lowered to planned
// programs, and SGD updating the parameters in place. After the first step
// nothing is allocated. Trains the reference mlp on one synthetic batch.
//
//   bazel run -c opt //examples:compiled_step
#include <cstdio>

#include "nn/models/models.h"
#include "nn/optim.h"
#include "pipeline/train_step.h"

int main() {
  tc::nn::ModelSpec spec = tc::nn::MakeModel("mlp", /*seed=*/0).value();
  tc::nn::SGD sgd(spec.module->named_parameters(), /*lr=*/0.05);
  std::unique_ptr<tc::TrainStep> step =
      tc::TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd).value();
  std::printf("forward arena %.2f MB, backward arena %.2f MB\n",
              step->forward().arena_bytes() / 1e6, step->backward().arena_bytes() / 1e6);
  const std::vector<tc::Tensor> batch = {spec.inputs.leaf(), spec.targets.leaf()};
  for (int i = 1; i <= 50; ++i) {
    const double loss = step->Run(batch).value();
    if (i == 1 || i % 10 == 0) std::printf("step %2d  loss %.4f\n", i, loss);
  }
  return 0;
}
