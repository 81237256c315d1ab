// `tensorcut ops`: a few f32 ops through oneDNN, timed, and checked against the
// same ops run in f64 (oneDNN has no f64, so those run on the reference kernels).

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/build_info.h"
#include "runtime/ops.h"
#include "runtime/threads.h"
#include "tools/cli.h"
#include "tools/flags.h"
#include "tools/subcommands.h"

namespace tc {
namespace {

int Runs() { return std::max(1, absl::GetFlag(FLAGS_runs)); }

double MaxAbsDiff(const Tensor& f32, const Tensor& f64) {
  return max(abs(f32.to(DType::kF64) - f64)).item<double>();
}

std::string ShapeText(const Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.shape(), "x"), "]");
}

// One table row; `rate` is GFLOP/s for compute-bound ops, GB/s (bytes read
// plus written, once each) for memory-bound ones.
void PrintRow(const char* op, const std::string& shapes, double ms, double rate, const char* unit,
              double diff) {
  std::printf("%-11s %-34s %9.3f ms %8.1f %-7s %12.2e\n", op, shapes.c_str(), ms, rate, unit, diff);
}

Tensor F64(const Tensor& t) { return t.to(DType::kF64); }

void DemoMatmul(Generator& gen) {
  const Tensor a = randn({512, 784}, DType::kF32, &gen);
  const Tensor b = randn({784, 512}, DType::kF32, &gen);
  Tensor c;
  const double ms = MedianMs(Runs(), [&] { c = matmul(a, b); });
  const double gflops = 2.0 * 512 * 784 * 512 / (ms * 1e6);
  PrintRow("matmul", absl::StrCat(ShapeText(a), " x ", ShapeText(b)), ms, gflops, "GFLOP/s",
           MaxAbsDiff(c, matmul(F64(a), F64(b))));
}

void DemoConv2d(Generator& gen) {
  const Tensor x = randn({32, 3, 32, 32}, DType::kF32, &gen);
  const Tensor w = randn({32, 3, 3, 3}, DType::kF32, &gen);
  Conv2dOptions options;
  options.padding = {1, 1};
  Tensor y;
  const double ms = MedianMs(Runs(), [&] { y = conv2d(x, w, options); });
  const double gflops = 2.0 * y.numel() * 3 * 3 * 3 / (ms * 1e6);  // per output: C*KH*KW MACs
  PrintRow("conv2d", absl::StrCat(ShapeText(x), " * ", ShapeText(w), " pad 1"), ms, gflops,
           "GFLOP/s", MaxAbsDiff(y, conv2d(F64(x), F64(w), options)));
}

void DemoBatchNorm(Generator& gen) {
  const Tensor x = randn({32, 32, 32, 32}, DType::kF32, &gen);
  const Tensor weight = randn({32}, DType::kF32, &gen);
  const Tensor bias = randn({32}, DType::kF32, &gen);
  constexpr double kEps = 1e-5;
  NormResult r;
  const double ms = MedianMs(Runs(), [&] { r = batch_norm(x, weight, bias, kEps); });
  const double gbs = 2.0 * x.bytes() / (ms * 1e6);
  PrintRow("batch_norm", absl::StrCat(ShapeText(x), " training"), ms, gbs, "GB/s",
           MaxAbsDiff(r.y, batch_norm(F64(x), F64(weight), F64(bias), kEps).y));
}

void DemoSoftmax(Generator& gen) {
  const Tensor x = randn({512, 1000}, DType::kF32, &gen);
  Tensor y;
  const double ms = MedianMs(Runs(), [&] { y = softmax(x, 1); });
  const double gbs = 2.0 * x.bytes() / (ms * 1e6);
  PrintRow("softmax", absl::StrCat(ShapeText(x), " dim 1"), ms, gbs, "GB/s",
           MaxAbsDiff(y, softmax(F64(x), 1)));
}

}  // namespace

int OpsDemo() {
  const BuildInfo build = GetBuildInfo();
  std::printf("tensorcut ops: f32 ops through oneDNN %s, checked against f64 reference\n",
              build.onednn_version.c_str());
  std::printf("oneDNN ISA: %s, threads: %d, time: median of %d runs\n\n", build.cpu_isa.c_str(),
              build.threads, Runs());
  std::printf("%-11s %-34s %12s %8s %-7s %12s\n", "op", "shapes", "median", "rate", "",
              "max|f32-f64|");
  Generator gen(0);
  DemoMatmul(gen);
  DemoConv2d(gen);
  DemoBatchNorm(gen);
  DemoSoftmax(gen);
  return 0;
}

}  // namespace tc
