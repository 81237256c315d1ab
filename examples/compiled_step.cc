// The whole training step compiled once: a model and its loss traced
// together, split by the min-cut partitioner, both halves lowered to planned
// programs, and SGD updating the parameters in place. After the first step
// nothing is allocated. Trains the reference mlp on one synthetic batch and
// fails unless the loss falls. Also the program the installation tests build
// against an installed tensorcut (tests/install/).
//
//   bazel run -c opt //examples:compiled_step
#include <cstdio>

#include "tensorcut/tensorcut.h"

int main() {
  tc::nn::ModelSpec spec = tc::nn::MakeModel("mlp", /*seed=*/0).value();
  tc::nn::SGD sgd(spec.module->named_parameters(), /*lr=*/0.05);
  std::unique_ptr<tc::TrainStep> step =
      tc::TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd).value();
  const std::vector<tc::Tensor> batch = {spec.inputs.leaf(), spec.targets.leaf()};
  double first = 0, loss = 0;
  for (int i = 1; i <= 50; ++i) {
    loss = step->Run(batch).value();
    if (i == 1) first = loss;
    if (i == 1 || i % 10 == 0) std::printf("step %2d  loss %.4f\n", i, loss);
  }
  return loss < first ? 0 : 1;  // the loss fell
}
