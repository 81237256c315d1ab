// `tensorcut demo`: trains a small CNN on Fashion-MNIST for one epoch through
// the compiled pipeline with the min-cut partitioner, then reports test
// accuracy, time, saved bytes against the default partition, and writes a
// checkpoint.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "base/status_macros.h"
#include "codegen/fusing_compiler.h"
#include "nn/checkpoint.h"
#include "nn/data/data_loader.h"
#include "nn/data/idx.h"
#include "nn/layers.h"
#include "nn/losses.h"
#include "nn/optim.h"
#include "partition/min_cut.h"
#include "pipeline/compiler_pipeline.h"
#include "tools/cli.h"
#include "tools/flags.h"
#include "tools/subcommands.h"
#include "tools/training.h"

namespace tc {
namespace {

// Conv(1,16)-BN-ReLU-MaxPool-Conv(16,32)-BN-ReLU-MaxPool-Flatten-Linear(1568,10):
// the reference `cnn` sized for 28x28 single-channel images.
std::shared_ptr<nn::Sequential> MakeModel(Generator* gen) {
  return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(1, 16, 3, 1, 1, 1, 1, true, gen),
      std::make_shared<nn::BatchNorm2d>(16), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2d>(2),
      std::make_shared<nn::Conv2d>(16, 32, 3, 1, 1, 1, 1, true, gen),
      std::make_shared<nn::BatchNorm2d>(32), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(32 * 7 * 7, 10, true, gen)});
}

int64_t SavedBytes(const partition::PartitionResult& part) {
  int64_t bytes = 0;
  for (const partition::SavedValue& v : part.saved) bytes += v.bytes;
  return bytes;
}

absl::Status Run() {
  const int64_t batch = absl::GetFlag(FLAGS_batch);
  if (batch < 1) return absl::InvalidArgumentError("--batch must be at least 1");
  const Clock::time_point start = Clock::now();
  TC_ASSIGN_OR_RETURN(nn::LabeledImages train,
                      nn::LoadFashionMnist(absl::GetFlag(FLAGS_data), true));
  TC_ASSIGN_OR_RETURN(nn::LabeledImages test,
                      nn::LoadFashionMnist(absl::GetFlag(FLAGS_data), false));
  std::printf(
      "tensorcut demo: Fashion-MNIST, %lld training and %lld test images (loaded in %.1fs)\n",
      static_cast<long long>(train.labels.numel()), static_cast<long long>(test.labels.numel()),
      Seconds(start));

  Generator gen(0);
  std::shared_ptr<nn::Sequential> model = MakeModel(&gen);
  const Tensor x = empty({batch, 1, 28, 28}), y = empty({batch}, DType::kI64);
  const TensorTree inputs = TensorTree::MakeLeaf(x);

  TC_ASSIGN_OR_RETURN(const Precision precision, ParsePrecision(absl::GetFlag(FLAGS_precision)));
  // The staged pipeline, each stage on its own line.
  const Clock::time_point compile_start = Clock::now();
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline, CompilerPipeline::Create(*model, inputs));
  TC_RETURN_IF_ERROR(pipeline.generate_ir_for_training({.precision = precision}));
  const JointGraph& joint = **pipeline.joint_graph();
  TC_ASSIGN_OR_RETURN(partition::PartitionResult part,
                      pipeline.partition(partition::MinCutPartition, joint));
  TC_ASSIGN_OR_RETURN(partition::PartitionResult save_all,
                      pipeline.partition(partition::DefaultPartition, joint));
  TC_ASSIGN_OR_RETURN(Function step_fn, pipeline.compile_training(codegen::fusing(), part));
  const int64_t saved_bytes = SavedBytes(part), default_bytes = SavedBytes(save_all);
  std::printf(
      "compiled in %.0f ms: joint graph %d nodes -> forward %d + backward %d; "
      "%zu values (%.2f MB) saved for backward\n%s",
      1e3 * Seconds(compile_start), joint.graph.num_nodes(), part.forward.num_nodes(),
      part.backward.num_nodes(), part.saved.size(), saved_bytes / 1e6,
      PrecisionLine(precision).c_str());

  nn::Adam optimizer(model->named_parameters(), absl::GetFlag(FLAGS_lr));
  const int64_t steps = train.labels.numel() / batch;
  const std::vector<int64_t> order = nn::ShuffledOrder(train.labels.numel(), /*stream=*/1);
  ProgressBar progress(0, steps, batch, /*every=*/100);
  const Clock::time_point train_start = Clock::now();
  for (int64_t step = 1; step <= steps; ++step) {
    Gather(train, order, (step - 1) * batch, x, y);
    TC_ASSIGN_OR_RETURN(TensorTree out, step_fn(inputs));
    const Tensor logits = out.leaf();
    const Tensor loss = nn::cross_entropy(logits, y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    progress.Update(step, loss.item<float>(), Accuracy(logits.detach(), y));
  }
  const double epoch_s = Seconds(train_start);

  // Evaluation through the compiled inference path, BatchNorm on running stats.
  model->eval();
  TC_ASSIGN_OR_RETURN(const double test_accuracy,
                      CompiledAccuracy(*model,
                                       std::make_shared<nn::TensorDataset>(
                                           std::vector<Tensor>{test.images, test.labels}),
                                       x.shape(), batch, precision));

  const std::string flag = absl::GetFlag(FLAGS_checkpoint);
  const std::string path = OutputPath(flag.empty() ? "tensorcut_demo.safetensors" : flag);
  TC_RETURN_IF_ERROR(nn::save(*model, path, &optimizer));

  std::printf("\ntest accuracy %.2f%% after one epoch (%lld steps of %lld)\n", 100 * test_accuracy,
              static_cast<long long>(steps), static_cast<long long>(batch));
  std::printf("epoch %.1fs (%.0f images/s), whole demo %.1fs\n", epoch_s, steps * batch / epoch_s,
              Seconds(start));
  std::printf("partition: min-cut saves %zu values, %.2f MB per step; default saves %zu, %.2f MB\n",
              part.saved.size(), saved_bytes / 1e6, save_all.saved.size(), default_bytes / 1e6);
  std::printf("checkpoint: %s\n", path.c_str());
  return absl::OkStatus();
}

}  // namespace

int FashionDemo() { return ExitCode("demo", Run()); }

}  // namespace tc
