// A small classifier built with nn, compiled stage by stage with the min-cut
// partition, trained for a few steps, saved, and loaded back into a fresh
// model that then gives the same predictions.
//
//   bazel run //examples:train_and_save -- /tmp/classifier.safetensors
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nn/checkpoint.h"
#include "nn/layers.h"
#include "nn/losses.h"
#include "nn/optim.h"
#include "partition/min_cut.h"
#include "pipeline/compiler_pipeline.h"

namespace {

std::shared_ptr<tc::nn::Sequential> Classifier(tc::Generator* gen) {
  return std::make_shared<tc::nn::Sequential>(std::vector<std::shared_ptr<tc::nn::Module>>{
      std::make_shared<tc::nn::Linear>(8, 32, true, gen), std::make_shared<tc::nn::ReLU>(),
      std::make_shared<tc::nn::Linear>(32, 4, true, gen)});
}

}  // namespace

int main(int argc, char** argv) {
  const char* tmp = std::getenv("TEST_TMPDIR");  // set under `bazel test`
  const std::string path = argc > 1 ? argv[1]
                           : tmp    ? std::string(tmp) + "/classifier.safetensors"
                                    : "classifier.safetensors";
  tc::Generator gen(7);
  auto model = Classifier(&gen);
  // The task: the class of x is argmax(x w) for a fixed random w.
  const tc::Tensor w = tc::randn({8, 4}, tc::DType::kF32, &gen);
  const tc::TensorTree inputs = tc::TensorTree::MakeLeaf(tc::randn({64, 8}, tc::DType::kF32, &gen));

  // Capture, joint graph, partition, compile: each stage on its own.
  auto pipeline = tc::CompilerPipeline::Create(*model, inputs).value();
  if (auto s = pipeline.generate_ir_for_training({.decompositions = &tc::DefaultDecompositions()});
      !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  auto part = pipeline.partition(tc::partition::MinCutPartition, *pipeline.joint_graph().value());
  auto fw = pipeline.fw_compile(tc::codegen::interpreter(), *part);
  auto bw = pipeline.bw_compile(tc::codegen::interpreter(), *part, *fw);
  tc::Function step_fn = pipeline.make_autograd_function(*fw, *bw, *part).value();

  tc::nn::SGD optimizer(model->named_parameters(), /*lr=*/0.1, /*momentum=*/0.9);
  for (int step = 1; step <= 60; ++step) {
    const tc::Tensor x = tc::randn({64, 8}, tc::DType::kF32, &gen);  // a fresh batch
    const tc::Tensor logits = step_fn(tc::TensorTree::MakeLeaf(x)).value().leaf();
    const tc::Tensor loss = tc::nn::cross_entropy(logits, tc::argmax(tc::matmul(x, w), 1));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (step % 20 == 0) std::printf("step %d loss %.4f\n", step, loss.item<float>());
  }
  if (auto s = tc::nn::save(*model, path); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }

  tc::Generator other(99);
  auto restored = Classifier(&other);
  if (auto s = tc::nn::load(*restored, path); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  const tc::Tensor a = (*model)(inputs).leaf(), b = (*restored)(inputs).leaf();
  const double max_diff = tc::max(tc::abs(a - b)).item<float>();
  std::printf("saved %s; the restored model's outputs differ by %g\n", path.c_str(), max_diff);
  return max_diff == 0 ? 0 : 1;
}
