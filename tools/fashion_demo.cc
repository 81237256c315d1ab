// `tensorcut demo`: trains a small CNN on Fashion-MNIST for one epoch through
// the compiled pipeline with the min-cut partitioner, then reports test
// accuracy, time, saved bytes against the default partition, and writes a
// checkpoint.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "nn/checkpoint.h"
#include "nn/data/idx.h"
#include "nn/layers.h"
#include "nn/losses.h"
#include "nn/optim.h"
#include "partition/min_cut.h"
#include "pipeline/compiler_pipeline.h"
#include "tools/subcommands.h"

ABSL_FLAG(std::string, data, tc::nn::kFashionMnistDir,
          "folder with the Fashion-MNIST IDX files (.gz or plain)");
ABSL_FLAG(std::string, checkpoint, "tensorcut_demo.safetensors",
          "where the demo writes the trained model (relative paths: the current folder)");
ABSL_FLAG(int, batch, 100, "images per training step");
ABSL_FLAG(double, lr, 2e-3, "Adam learning rate");

namespace tc {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

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

// Rows `order[first..first+n)` of `images`/`labels` copied into `x`/`y`.
void Gather(const nn::Dataset& data, const std::vector<int64_t>& order, int64_t first,
            const Tensor& x, const Tensor& y) {
  const int64_t n = x.size(0), row = x.numel() / n;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t src = order[first + i];
    std::memcpy(x.data<float>() + i * row, data.images.data<float>() + src * row,
                row * sizeof(float));
    y.data<int64_t>()[i] = data.labels.data<int64_t>()[src];
  }
}

// A progress line: a bar on a terminal, a plain line every `every` steps
// otherwise (logs, CI).
void Progress(int64_t step, int64_t steps, double loss, double accuracy, double images_per_s,
              bool terminal) {
  const double eta =
      (steps - step) * (images_per_s > 0 ? absl::GetFlag(FLAGS_batch) / images_per_s : 0);
  if (terminal) {
    const int width = 30, filled = static_cast<int>(width * step / steps);
    std::printf("\r[%s%s] %5lld/%lld loss %.4f acc %5.1f%% %6.0f img/s ETA %3.0fs",
                std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                static_cast<long long>(step), static_cast<long long>(steps), loss, 100 * accuracy,
                images_per_s, eta);
    if (step == steps) std::printf("\n");
  } else if (step % 100 == 0 || step == steps) {
    std::printf("step %lld/%lld loss %.4f acc %.1f%% %.0f img/s ETA %.0fs\n",
                static_cast<long long>(step), static_cast<long long>(steps), loss, 100 * accuracy,
                images_per_s, eta);
  }
  std::fflush(stdout);
}

int64_t SavedBytes(const partition::PartitionResult& part) {
  int64_t bytes = 0;
  for (const partition::SavedValue& v : part.saved) bytes += v.bytes;
  return bytes;
}

double Accuracy(const Tensor& logits, const Tensor& labels) {
  return mean(cast(eq(argmax(logits, 1), labels), DType::kF32)).item<float>();
}

absl::Status Run() {
  const int64_t batch = absl::GetFlag(FLAGS_batch);
  if (batch < 1) return absl::InvalidArgumentError("--batch must be at least 1");
  const Clock::time_point start = Clock::now();
  absl::StatusOr<nn::Dataset> train = nn::LoadFashionMnist(absl::GetFlag(FLAGS_data), true);
  if (!train.ok()) return train.status();
  absl::StatusOr<nn::Dataset> test = nn::LoadFashionMnist(absl::GetFlag(FLAGS_data), false);
  if (!test.ok()) return test.status();
  std::printf(
      "tensorcut demo: Fashion-MNIST, %lld training and %lld test images (loaded in %.1fs)\n",
      static_cast<long long>(train->labels.numel()), static_cast<long long>(test->labels.numel()),
      Seconds(start));

  Generator gen(0);
  std::shared_ptr<nn::Sequential> model = MakeModel(&gen);
  const Tensor x = empty({batch, 1, 28, 28}), y = empty({batch}, DType::kI64);
  const TensorTree inputs = TensorTree::MakeLeaf(x);

  // The staged pipeline, each stage on its own line.
  const Clock::time_point compile_start = Clock::now();
  absl::StatusOr<CompilerPipeline> pipeline = CompilerPipeline::Create(*model, inputs);
  if (!pipeline.ok()) return pipeline.status();
  if (absl::Status s = pipeline->generate_ir_for_training(); !s.ok()) return s;
  const JointGraph& joint = **pipeline->joint_graph();
  absl::StatusOr<partition::PartitionResult> part =
      pipeline->partition(partition::MinCutPartition, joint);
  if (!part.ok()) return part.status();
  absl::StatusOr<partition::PartitionResult> save_all =
      pipeline->partition(partition::DefaultPartition, joint);
  if (!save_all.ok()) return save_all.status();
  absl::StatusOr<CompiledForward> fw = pipeline->fw_compile(codegen::interpreter(), *part);
  if (!fw.ok()) return fw.status();
  absl::StatusOr<CompiledBackward> bw = pipeline->bw_compile(codegen::interpreter(), *part, *fw);
  if (!bw.ok()) return bw.status();
  absl::StatusOr<Function> step_fn = pipeline->make_autograd_function(*fw, *bw, *part);
  if (!step_fn.ok()) return step_fn.status();
  const int64_t saved_bytes = SavedBytes(*part), default_bytes = SavedBytes(*save_all);
  std::printf(
      "compiled in %.0f ms: joint graph %d nodes -> forward %d + backward %d; "
      "%zu values (%.2f MB) saved for backward\n",
      1e3 * Seconds(compile_start), joint.graph.num_nodes(), part->forward.num_nodes(),
      part->backward.num_nodes(), part->saved.size(), saved_bytes / 1e6);

  nn::Adam optimizer(model->named_parameters(), absl::GetFlag(FLAGS_lr));
  const int64_t steps = train->labels.numel() / batch;
  std::vector<int64_t> order(train->labels.numel());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  for (size_t i = order.size() - 1; i > 0; --i) {  // Fisher-Yates from the counter RNG
    std::swap(order[i], order[RandomBits(1, i) % (i + 1)]);
  }
  const bool terminal = isatty(fileno(stdout));
  const Clock::time_point train_start = Clock::now();
  double loss_avg = 0, acc_avg = 0;
  for (int64_t step = 1; step <= steps; ++step) {
    Gather(*train, order, (step - 1) * batch, x, y);
    absl::StatusOr<TensorTree> out = (*step_fn)(inputs);
    if (!out.ok()) return out.status();
    const Tensor logits = out->leaf();
    const Tensor loss = nn::cross_entropy(logits, y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    const double k = step < 20 ? 1.0 / step : 0.05;  // running averages
    loss_avg += k * (loss.item<float>() - loss_avg);
    acc_avg += k * (Accuracy(logits.detach(), y) - acc_avg);
    Progress(step, steps, loss_avg, acc_avg, step * batch / Seconds(train_start), terminal);
  }
  const double epoch_s = Seconds(train_start);

  // Evaluation through the compiled inference path, BatchNorm on running stats.
  model->eval();
  absl::StatusOr<Function> eval_fn = compile(*model, inputs, {.training = false});
  if (!eval_fn.ok()) return eval_fn.status();
  std::vector<int64_t> test_order(test->labels.numel());
  for (size_t i = 0; i < test_order.size(); ++i) test_order[i] = static_cast<int64_t>(i);
  double correct = 0;
  const int64_t test_steps = test->labels.numel() / batch;
  for (int64_t s = 0; s < test_steps; ++s) {
    Gather(*test, test_order, s * batch, x, y);
    absl::StatusOr<TensorTree> out = (*eval_fn)(inputs);
    if (!out.ok()) return out.status();
    correct += Accuracy(out->leaf(), y) * batch;
  }
  const double test_accuracy = correct / (test_steps * batch);

  std::string path = absl::GetFlag(FLAGS_checkpoint);
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");  // set by `bazel run`
  if (cwd != nullptr && !path.empty() && path[0] != '/') path = absl::StrCat(cwd, "/", path);
  if (absl::Status s = nn::save(*model, path, &optimizer); !s.ok()) return s;

  std::printf("\ntest accuracy %.2f%% after one epoch (%lld steps of %lld)\n", 100 * test_accuracy,
              static_cast<long long>(steps), static_cast<long long>(batch));
  std::printf("epoch %.1fs (%.0f images/s), whole demo %.1fs\n", epoch_s, steps * batch / epoch_s,
              Seconds(start));
  std::printf("partition: min-cut saves %zu values, %.2f MB per step; default saves %zu, %.2f MB\n",
              part->saved.size(), saved_bytes / 1e6, save_all->saved.size(), default_bytes / 1e6);
  std::printf("checkpoint: %s\n", path.c_str());
  return absl::OkStatus();
}

}  // namespace

int FashionDemo() {
  const absl::Status status = Run();
  if (!status.ok()) {
    std::fprintf(stderr, "tensorcut demo: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace tc
