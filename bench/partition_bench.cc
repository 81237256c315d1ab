// How long partitioning takes: the median of --runs calls of DefaultPartition
// and MinCutPartition on the `transformer` joint graph (f32, default
// decompositions) and on a synthetic joint graph of about 10,000 nodes.
//
//   bazel run -c opt //bench:partition_bench -- --runs 25
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "graph/decompositions.h"
#include "graph/verifier.h"
#include "nn/models/models.h"
#include "partition/min_cut.h"
#include "partition/partition.h"
#include "pipeline/compiler_pipeline.h"

ABSL_FLAG(int, runs, 25, "timed calls per partitioner; the median is reported");
ABSL_FLAG(int, layers, 1000, "layers of the synthetic graph (10 nodes each)");

namespace tc {
namespace {

// A joint graph and its layout.
struct Joint {
  Graph graph;
  JointLayout layout;
};

// The graph is fixed, so a failure to build it is a bug here.
void Check(const absl::Status& status) {
  TC_CHECK(status.ok(), "partition_bench: the synthetic graph: ", status.message());
}

// A residual ladder of `layers` layers, a_i = relu(a_{i-1} W_i) + a_{i-1},
// with its backward written out (per layer 3 forward and 7 backward nodes):
//   dh = where(h > 0, da_i, 0)
//   dW_i = a_{i-1}^T dh,  da_{i-1} = da_i + dh W_i^T
// Primals x, W_0..W_{L-1}; one tangent; outputs a_L, then dx, dW_0.. dW_{L-1}.
Joint Ladder(int layers) {
  constexpr int64_t kBatch = 8, kWidth = 16;
  Joint joint;
  Graph& g = joint.graph;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {kBatch, kWidth}});
  std::vector<Value*> weights;
  for (int i = 0; i < layers; ++i) {
    weights.push_back(g.AddPlaceholder(absl::StrCat("w", i), {DType::kF32, {kWidth, kWidth}}));
  }
  Value* tangent = g.AddPlaceholder("tangent", {DType::kF32, {kBatch, kWidth}});
  auto node = [&](OpKind op, std::vector<Value*> in, Attrs attrs = {}) {
    absl::StatusOr<std::vector<Value*>> r = g.AddNode(op, in, std::move(attrs));
    Check(r.status());
    return (*r)[0];
  };
  const Attrs transpose{{"dims", std::vector<int64_t>{1, 0}}};

  std::vector<Value*> a = {x}, h;
  for (int i = 0; i < layers; ++i) {
    h.push_back(node(OpKind::kMatmul, {a[i], weights[i]}));
    a.push_back(node(OpKind::kAdd, {node(OpKind::kRelu, {h[i]}), a[i]}));
  }
  Value* zero = node(OpKind::kFull, {},
                     {{"dtype", DType::kF32}, {"shape", std::vector<int64_t>{}}, {"value", 0.0}});
  std::vector<Value*> grads(layers + 1);
  Value* da = tangent;
  for (int i = layers - 1; i >= 0; --i) {
    Value* dh = node(OpKind::kWhere, {node(OpKind::kGt, {h[i], zero}), da, zero});
    grads[i + 1] = node(OpKind::kMatmul, {node(OpKind::kPermute, {a[i]}, transpose), dh});
    Value* back = node(OpKind::kMatmul, {dh, node(OpKind::kPermute, {weights[i]}, transpose)});
    da = node(OpKind::kAdd, {da, back});
  }
  grads[0] = da;
  std::vector<Value*> outputs = {a.back()};
  outputs.insert(outputs.end(), grads.begin(), grads.end());
  Check(g.SetOutputs(outputs));
  joint.layout.num_primals = layers + 1;
  joint.layout.num_tangents = 1;
  joint.layout.num_forward_outputs = 1;
  for (int i = 0; i <= layers; ++i) joint.layout.grad_primal_indices.push_back(i);
  Check(Verify(g));
  return joint;
}

// The median wall time of `runs` calls of `fn` on `graph`, in milliseconds;
// an error if a call fails.
absl::StatusOr<double> MedianMs(const partition::PartitionFn& fn, const Graph& graph,
                                const JointLayout& layout, int runs) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<partition::PartitionResult> part = fn(graph, layout);
    const auto end = std::chrono::steady_clock::now();
    if (!part.ok()) return part.status();
    ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

absl::Status Run(int runs, int layers) {
  if (runs < 1 || layers < 1) return absl::InvalidArgumentError("--runs and --layers must be >= 1");
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec, nn::MakeModel("transformer", 0));
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline,
                      CompilerPipeline::Create(*spec.module, spec.inputs));
  TC_RETURN_IF_ERROR(
      pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}));
  const JointGraph& transformer = **pipeline.joint_graph();
  const Joint ladder = Ladder(layers);

  struct Case {
    std::string name;
    const Graph* graph;
    const JointLayout* layout;
    const char* partitioner;
    partition::PartitionFn fn;
  };
  const std::vector<Case> cases = {
      {"transformer", &transformer.graph, &transformer.layout, "DefaultPartition",
       partition::DefaultPartition},
      {"transformer", &transformer.graph, &transformer.layout, "MinCutPartition",
       partition::MinCutPartition},
      {"synthetic ladder", &ladder.graph, &ladder.layout, "DefaultPartition",
       partition::DefaultPartition},
      {"synthetic ladder", &ladder.graph, &ladder.layout, "MinCutPartition",
       partition::MinCutPartition},
  };
  std::printf("partition time, median of %d runs\n", runs);
  for (const Case& c : cases) {
    absl::StatusOr<double> ms = MedianMs(c.fn, *c.graph, *c.layout, runs);
    if (!ms.ok()) {
      return absl::Status(ms.status().code(),
                          absl::StrCat(c.partitioner, " on ", c.name, ": ", ms.status().message()));
    }
    std::printf("  %-16s %6d nodes  %-16s %9.3f ms\n", c.name.c_str(), c.graph->num_nodes(),
                c.partitioner, *ms);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tc

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = tc::Run(absl::GetFlag(FLAGS_runs), absl::GetFlag(FLAGS_layers));
  if (status.ok()) return 0;
  std::fprintf(stderr, "partition_bench: %s\n", std::string(status.message()).c_str());
  return 1;
}
