// The libtorch peer of tensorcut's model benchmark (bench/model_bench.cc):
// the same four reference models (nn/models/models.h) written in libtorch's
// C++ eager API, timed the same way (3 untimed calls, then the median of
// `runs` timed calls) as a training step (forward, loss, zero_grad, backward,
// SGD update) and as an inference step (eval mode, no grad, forward only).
// Prints one JSON line per model:
//
//   libtorch_bench --model all --threads 1 --runs 30 --seed 0
//   {"model": "mlp", "threads": 1, "runs": 30, "step_ms": 1.23, "inference_ms": 0.45}
//   libtorch_bench --blas_check   # its BLAS's f32 error and speed (run.sh's choice)
//
// Not part of the Bazel build: bench/peers/run.sh compiles it with g++
// against Debian's libtorch (bench/peers/install_libtorch.sh).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace tc::peers {
namespace {

namespace F = torch::nn::functional;

struct Options {
  std::string model = "all";  // linear, mlp, cnn, transformer or all
  int threads = 1;            // torch::set_num_threads; 0: leave libtorch's default
  int runs = 30;              // timed calls per measurement
  int warmup = 3;             // untimed calls first, as tensorcut's bench
  uint64_t seed = 0;          // torch::manual_seed before each model is built
  double lr = 1e-3;           // SGD learning rate of the training step
  // The transformer's attention: "module" (torch::nn::MultiheadAttention) or
  // "manual" (tensorcut's nn/attention.cc written out op by op).
  std::string attention = "module";
};

// A model with its example input; `targets` undefined: the loss is
// mean(out^2), else cross-entropy against the class labels in `targets`.
struct Model {
  std::shared_ptr<torch::nn::Module> module;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
  torch::Tensor input, targets;
};

torch::Tensor Loss(const Model& model, const torch::Tensor& out) {
  if (model.targets.defined()) return F::cross_entropy(out, model.targets);
  return (out * out).mean();
}

// A pre-LayerNorm transformer encoder block, as tensorcut's TransformerBlock:
//   h = x + attn(ln1(x));  out = h + mlp(ln2(h)),  mlp = Linear, GELU, Linear.
// With module attention the input is [seq, batch, embed] (libtorch's
// MultiheadAttention layout); with manual attention [batch, seq, embed].
class TransformerBlockImpl : public torch::nn::Module {
 public:
  TransformerBlockImpl(int64_t d_model, int64_t num_heads, int64_t d_mlp, bool manual_attention)
      : num_heads_(num_heads), manual_attention_(manual_attention) {
    ln1_ = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
    attn_ = register_module("attn", torch::nn::MultiheadAttention(d_model, num_heads));
    ln2_ = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
    mlp_ = register_module(
        "mlp", torch::nn::Sequential(torch::nn::Linear(d_model, d_mlp), torch::nn::GELU(),
                                     torch::nn::Linear(d_mlp, d_model)));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor n = ln1_->forward(x);
    const torch::Tensor h =
        x + (manual_attention_ ? ManualAttention(n)
                               : std::get<0>(attn_->forward(n, n, n, {}, /*need_weights=*/false)));
    return h + mlp_->forward(ln2_->forward(h));
  }

 private:
  // tensorcut's MultiheadAttention::attend on x [B, S, E], with the module's
  // parameters: one projection per slice of in_proj, heads as [B, H, S, D].
  torch::Tensor ManualAttention(const torch::Tensor& x) {
    const int64_t b = x.size(0), s = x.size(1), e = x.size(2);
    auto project = [&](int64_t part) {
      const torch::Tensor heads =
          F::linear(x, attn_->in_proj_weight.slice(0, part * e, (part + 1) * e),
                    attn_->in_proj_bias.slice(0, part * e, (part + 1) * e));
      return heads.reshape({b, s, num_heads_, e / num_heads_}).permute({0, 2, 1, 3});
    };
    const torch::Tensor q = project(0), k = project(1), v = project(2);
    const double scale = 1.0 / std::sqrt(static_cast<double>(e / num_heads_));
    const torch::Tensor scores = torch::matmul(q, k.transpose(2, 3)) * scale;
    const torch::Tensor heads = torch::matmul(scores.softmax(3), v);
    return attn_->out_proj->forward(heads.permute({0, 2, 1, 3}).reshape({b, s, e}));
  }

  int64_t num_heads_;
  bool manual_attention_;
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  torch::nn::MultiheadAttention attn_{nullptr};
  torch::nn::Sequential mlp_{nullptr};
};
TORCH_MODULE(TransformerBlock);

Model FromSequential(torch::nn::Sequential seq, torch::Tensor input, torch::Tensor targets) {
  return Model{seq.ptr(), [seq](const torch::Tensor& x) mutable { return seq->forward(x); },
               std::move(input), std::move(targets)};
}

constexpr const char* kModelNames[] = {"linear", "mlp", "cnn", "transformer"};

// The model `name` (one of kModelNames) built after torch::manual_seed(seed).
Model MakeModel(const std::string& name, const Options& options) {
  torch::manual_seed(options.seed);
  Model model;
  namespace nn = torch::nn;
  if (name == "linear") {
    model = FromSequential(nn::Sequential(nn::Linear(3, 2)), torch::randn({4, 3}), {});
  } else if (name == "mlp") {
    model = FromSequential(nn::Sequential(nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 512),
                                          nn::ReLU(), nn::Linear(512, 10)),
                           torch::randn({128, 784}), torch::randint(0, 10, {128}, torch::kLong));
  } else if (name == "cnn") {
    model = FromSequential(
        nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 32, 3).padding(1)), nn::BatchNorm2d(32),
                       nn::ReLU(), nn::Conv2d(nn::Conv2dOptions(32, 32, 3).padding(1)),
                       nn::BatchNorm2d(32), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                       nn::Linear(32 * 16 * 16, 10)),
        torch::randn({32, 3, 32, 32}), torch::randint(0, 10, {32}, torch::kLong));
  } else {
    const bool manual = options.attention == "manual";
    TransformerBlock block(256, 4, 1024, manual);
    torch::Tensor input = manual ? torch::randn({8, 128, 256}) : torch::randn({128, 8, 256});
    model = Model{block.ptr(),
                  [block](const torch::Tensor& x) mutable { return block(x); },
                  std::move(input),
                  {}};
  }
  return model;
}

// The median of `runs` timed calls of `fn` after `warmup` untimed ones, in
// milliseconds, as tensorcut's bench::TimeCalls.
double MedianMs(int warmup, int runs, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms(runs);
  for (double& t : ms) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  std::sort(ms.begin(), ms.end());
  return (ms[(runs - 1) / 2] + ms[runs / 2]) / 2;
}

// Forward, loss, zero_grad (grads set to none, as tensorcut's SGD and
// PyTorch 2's default), backward, SGD step.
double TimeTraining(const std::string& name, const Options& options) {
  Model model = MakeModel(name, options);
  std::vector<torch::Tensor> params = model.module->parameters();
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(options.lr));
  return MedianMs(options.warmup, options.runs, [&] {
    const torch::Tensor loss = Loss(model, model.forward(model.input));
    for (torch::Tensor& p : params) p.mutable_grad().reset();
    loss.backward();
    sgd.step();
  });
}

double TimeInference(const std::string& name, const Options& options) {
  Model model = MakeModel(name, options);
  model.module->eval();
  torch::NoGradGuard no_grad;
  return MedianMs(options.warmup, options.runs, [&] { model.forward(model.input); });
}

// What run.sh asks before it times anything, once per OpenBLAS core type
// (OPENBLAS_CORETYPE) it tries: on one thread, the f32 matrix products of
// the benchmark's shapes against the same products in f64 (the largest
// relative error of any element over the row's largest magnitude) and a
// 512^3 product's GFLOP/s. One JSON line.
int BlasCheck() {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  const int64_t shapes[][3] = {
      {128, 784, 512}, {1024, 256, 768}, {1024, 1024, 256}, {512, 512, 512}, {32, 8192, 10}};
  double worst = 0;
  for (const auto& s : shapes) {
    const torch::Tensor a = torch::randn({s[0], s[1]}), b = torch::randn({s[1], s[2]});
    const torch::Tensor got = torch::mm(a, b).to(torch::kFloat64);
    const torch::Tensor want = torch::mm(a.to(torch::kFloat64), b.to(torch::kFloat64));
    const torch::Tensor scale = want.abs().amax(1, /*keepdim=*/true).clamp_min(1e-30);
    worst = std::max(worst, ((got - want).abs() / scale).max().item<double>());
  }
  const torch::Tensor a = torch::randn({512, 512}), b = torch::randn({512, 512});
  const double ms = MedianMs(3, 20, [&] { torch::mm(a, b); });
  std::printf("{\"max_rel_error\": %.3g, \"gflops\": %.4g}\n", worst,
              2.0 * 512 * 512 * 512 / ms / 1e6);
  return 0;
}

// Reads "--name=value" or "--name value" into `value`; false when `argv[*i]`
// is not the flag `name`.
bool ReadFlag(int argc, char** argv, int* i, const std::string& name, std::string* value) {
  const std::string arg = argv[*i], prefix = "--" + name;
  if (arg.rfind(prefix + "=", 0) == 0) {
    *value = arg.substr(prefix.size() + 1);
    return true;
  }
  if (arg != prefix || *i + 1 >= argc) return false;
  *value = argv[++*i];
  return true;
}

int Usage(const char* message) {
  std::fprintf(stderr,
               "libtorch_bench: %s\nusage: libtorch_bench [--model linear|mlp|cnn|transformer|all]"
               " [--threads N] [--runs R] [--seed S] [--attention module|manual]\n"
               "       libtorch_bench --blas_check\n",
               message);
  return 2;
}

int Main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--blas_check") return BlasCheck();
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string value;
    if (ReadFlag(argc, argv, &i, "model", &value)) {
      options.model = value;
    } else if (ReadFlag(argc, argv, &i, "threads", &value)) {
      options.threads = std::atoi(value.c_str());
    } else if (ReadFlag(argc, argv, &i, "runs", &value)) {
      options.runs = std::atoi(value.c_str());
    } else if (ReadFlag(argc, argv, &i, "seed", &value)) {
      options.seed = std::strtoull(value.c_str(), nullptr, 10);
    } else if (ReadFlag(argc, argv, &i, "attention", &value)) {
      options.attention = value;
    } else {
      return Usage(("unknown flag " + std::string(argv[i])).c_str());
    }
  }
  if (options.runs < 1 || options.threads < 0) return Usage("expected runs >= 1, threads >= 0");
  if (options.attention != "module" && options.attention != "manual") {
    return Usage("expected --attention module or manual");
  }
  std::vector<std::string> names(std::begin(kModelNames), std::end(kModelNames));
  if (options.model != "all") {
    if (std::find(names.begin(), names.end(), options.model) == names.end()) {
      return Usage(("unknown model " + options.model).c_str());
    }
    names = {options.model};
  }
  if (options.threads > 0) torch::set_num_threads(options.threads);
  for (const std::string& name : names) {
    const double step_ms = TimeTraining(name, options);
    const double inference_ms = TimeInference(name, options);
    std::printf(
        "{\"model\": \"%s\", \"threads\": %d, \"runs\": %d, \"step_ms\": %.6g, "
        "\"inference_ms\": %.6g}\n",
        name.c_str(), torch::get_num_threads(), options.runs, step_ms, inference_ms);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tc::peers

int main(int argc, char** argv) { return tc::peers::Main(argc, argv); }
