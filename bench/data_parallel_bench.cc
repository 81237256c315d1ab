// A data-parallel training step over MPI, as `mpirun ... tensorcut train`
// runs it: each rank's share of a global batch through the compiled forward
// and backward (the backward summing the parameters' gradients in buckets,
// dist::BackwardAllReduce), the loss eagerly, an SGD update. Run under
// `mpirun -np N`, or alone: then one process trains on the whole batch, with
// no all-reduce. Rank 0 prints one JSON line:
//
//   mpirun -np 2 bazel-bin/bench/data_parallel_bench --model mlp --threads 1
//   {"model": "mlp", "ranks": 2, "threads": 1, "batch": 128, "step_ms": ...,
//    "examples_per_s": ..., "buckets": 2, "bytes_per_step": ...,
//    "wait_ms": ..., "all_reduce_ms": ..., "hidden": ...}
//
// With --after_backward the gradients are averaged after the backward
// instead (dist::AverageGradients: one blocking bucketed all-reduce), the
// path a TrainStep takes. step_ms is the median step. wait_ms is the median time a step spent in
// its buckets' waits: the communication the backward did not hide.
// all_reduce_ms is the median time the same buckets take started and
// waited for back to back, with no work between; hidden is 1 - wait_ms /
// all_reduce_ms, the fraction of the all-reduce the backward hid.
// bench/dist/run.sh runs the configurations side by side.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/fusing_compiler.h"
#include "dist/data_parallel.h"
#include "dist/process_group.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "partition/min_cut.h"
#include "pipeline/compiler_pipeline.h"
#include "runtime/ops.h"
#include "runtime/threads.h"

ABSL_FLAG(std::string, model, "mlp", "mlp, cnn or transformer");
ABSL_FLAG(int, threads, 1, "oneDNN/OpenMP threads per rank");
ABSL_FLAG(int, runs, 30, "timed steps; medians are reported");
ABSL_FLAG(int, warmup, 5, "untimed steps first");
ABSL_FLAG(int64_t, bucket_kb, 25 << 10, "bucket size in KiB (the first bucket closes at 1 MiB)");
ABSL_FLAG(bool, after_backward, false,
          "average the gradients after the backward (dist::AverageGradients), not in it");

namespace tc {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rows [first, first + count) of the example's leaves.
TensorTree Rows(const TensorTree& tree, int64_t first, int64_t count) {
  return tree.Map([&](const Tensor& t) { return t.slice(0, first, first + count).contiguous(); });
}

absl::Status Run() {
  const int runs = absl::GetFlag(FLAGS_runs), warmup = absl::GetFlag(FLAGS_warmup);
  if (runs < 1 || warmup < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--runs must be at least 1 and --warmup at least 0, got ", runs, " and ", warmup));
  }
  SetNumThreads(absl::GetFlag(FLAGS_threads));
  TC_ASSIGN_OR_RETURN(
      dist::ProcessGroup * group,
      dist::ProcessGroup::World({.bucket_bytes = absl::GetFlag(FLAGS_bucket_kb) << 10}));
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel(absl::GetFlag(FLAGS_model), 0));
  TC_RETURN_IF_ERROR(dist::BroadcastModule(*group, *spec.module));
  const int64_t batch = Flatten(spec.inputs).first[0].size(0);
  if (batch % group->size() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the example batch of ", batch, " rows does not split into ", group->size()));
  }
  const int64_t share = batch / group->size();
  const TensorTree inputs = Rows(spec.inputs, group->rank() * share, share);
  const TensorTree targets = Rows(spec.targets, group->rank() * share, share);
  const std::vector<Tensor> leaves = Flatten(inputs).first;

  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline, CompilerPipeline::Create(*spec.module, inputs));
  TC_RETURN_IF_ERROR(pipeline.generate_ir_for_training());
  TC_ASSIGN_OR_RETURN(const JointGraph* joint, pipeline.joint_graph());
  TC_ASSIGN_OR_RETURN(partition::PartitionResult part,
                      pipeline.partition(partition::MinCutPartition, *joint));
  // One rank trains as a plain process does: no buckets to pack.
  std::optional<dist::BackwardAllReduce> reduce;
  const bool after = absl::GetFlag(FLAGS_after_backward) && group->size() > 1;
  const auto average = dist::AverageGradients(*group);
  std::vector<Tensor> grads;
  if (group->size() > 1 && !after) {
    TC_ASSIGN_OR_RETURN(reduce, dist::BackwardAllReduce::Insert(*group, *joint, part));
  }
  std::vector<Tensor> buckets;  // one of each bucket's type, for the all-reduce alone
  for (const Node* node : part.backward.nodes()) {
    if (node->op() != OpKind::kAllReduceStart || !absl::StartsWith(node->source(), "bucket")) {
      continue;  // a synchronised BatchNorm's, not a bucket
    }
    const TensorType& t = node->result(0)->type();
    buckets.push_back(zeros(t.shape, t.dtype));
  }
  TC_ASSIGN_OR_RETURN(CompiledForward fw, pipeline.fw_compile(codegen::fusing(), part));
  TC_ASSIGN_OR_RETURN(CompiledBackward bw, pipeline.bw_compile(codegen::fusing(), part, fw));
  if (reduce) bw.run = reduce->Bind(std::move(bw.run));
  TC_ASSIGN_OR_RETURN(Function train_step, pipeline.make_autograd_function(fw, bw, part));
  nn::SGD sgd(spec.module->named_parameters(), 1e-3);

  std::vector<double> step_ms, wait_ms;
  int64_t bytes = 0;
  for (int i = 0; i < warmup + runs; ++i) {
    group->ResetStats();
    const Clock::time_point start = Clock::now();
    if (reduce) TC_RETURN_IF_ERROR(reduce->SetShare(share, batch));
    TC_ASSIGN_OR_RETURN(TensorTree out, train_step(inputs));
    sgd.zero_grad();
    spec.loss(out, targets).backward();
    double averaged_ms = 0;  // after the backward: all of it exposed
    if (after) {
      grads.clear();
      for (const Tensor& p : spec.module->parameters()) {
        if (p.grad().defined()) grads.push_back(p.grad());
      }
      const Clock::time_point average_start = Clock::now();
      TC_RETURN_IF_ERROR(average(grads, leaves));
      averaged_ms = Ms(Clock::now() - average_start);
    }
    sgd.step();
    if (i < warmup) continue;
    step_ms.push_back(Ms(Clock::now() - start));
    wait_ms.push_back(after ? averaged_ms : absl::ToDoubleMilliseconds(group->stats().waited));
    bytes = group->stats().bytes;
    for (const Tensor& g : grads) bytes += g.bytes();
  }
  // The same buckets' sums alone, started and waited for back to back.
  std::vector<double> all_reduce_ms;
  for (int i = 0; i < warmup + runs; ++i) {
    const Clock::time_point start = Clock::now();
    for (const Tensor& b : buckets) TC_RETURN_IF_ERROR(group->StartAllReduce(b));
    for (const Tensor& b : buckets) TC_RETURN_IF_ERROR(group->WaitAllReduce(b));
    if (i >= warmup) all_reduce_ms.push_back(Ms(Clock::now() - start));
  }
  const double step = Median(step_ms), wait = Median(wait_ms), alone = Median(all_reduce_ms);
  const double hidden = group->size() > 1 && alone > 0 ? std::max(0.0, 1 - wait / alone) : 0;
  if (group->rank() == 0) {
    std::printf(
        "{\"model\": \"%s\", \"ranks\": %d, \"threads\": %d, \"after_backward\": %s, "
        "\"batch\": %lld, \"step_ms\": %.3f, "
        "\"examples_per_s\": %.1f, \"buckets\": %d, \"bytes_per_step\": %lld, \"wait_ms\": %.3f, "
        "\"all_reduce_ms\": %.3f, \"hidden\": %.3f}\n",
        spec.name.c_str(), group->size(), NumThreads(), after ? "true" : "false",
        static_cast<long long>(batch), step, batch / step * 1e3, reduce ? reduce->buckets() : 0,
        static_cast<long long>(bytes), wait, alone, hidden);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tc

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = tc::Run();
  if (!s.ok()) {
    std::fprintf(stderr, "data_parallel_bench: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
