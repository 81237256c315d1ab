// What MinCutPartition saves on the reference models (f32, MakeModel(name,
// 0), captured and differentiated with the default decompositions), as
// goldens a reader can check against the printed joint graph, and the
// issue's byte targets on saved activation bytes.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "graph/decompositions.h"
#include "nn/models/models.h"
#include "partition/accounting.h"
#include "partition/min_cut.h"
#include "partition/report.h"
#include "pipeline/compiler_pipeline.h"

namespace tc {
namespace {

// A reference model's joint graph. The pipeline refers to the model, which
// `spec` keeps alive.
struct Traced {
  nn::ModelSpec spec;
  std::optional<CompilerPipeline> pipeline;

  const JointGraph& joint() const { return *pipeline->joint_graph().value(); }
};

Traced TraceForTraining(const std::string& name) {
  Traced t{nn::MakeModel(name, 0).value(), std::nullopt};
  t.pipeline.emplace(CompilerPipeline::Create(*t.spec.module, t.spec.inputs).value());
  REQUIRE(t.pipeline->generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
  return t;
}

partition::PartitionResult Partition(const Traced& t, const partition::PartitionFn& fn) {
  absl::StatusOr<partition::PartitionResult> part = fn(t.joint().graph, t.joint().layout);
  INFO(part.status().message());
  REQUIRE(part.ok());
  return *std::move(part);
}

// "%name: type = op", as the graph printer writes a value.
std::vector<std::string> SavedLines(const Traced& t, const partition::PartitionResult& part) {
  std::vector<std::string> lines;
  for (const partition::SavedValueReport& s :
       partition::MakeReport(t.joint().graph, t.joint().layout, part).saved) {
    lines.push_back(absl::StrCat("%", s.name, ": ", s.type.ToString(), " = ", s.op));
  }
  return lines;
}

TEST_CASE("mlp: min-cut saves two weights, the input and the ReLU outputs") {
  const Traced t = TraceForTraining("mlp");
  // Layer i is permute(W_i) -> matmul -> add bias (source "i"), ReLUs are 1
  // and 3. The input does not require grad, so layer 0 needs no input
  // gradient and its weight is not saved.
  CHECK(SavedLines(t, Partition(t, partition::MinCutPartition)) ==
        std::vector<std::string>{
            // The input gradients of layers 2 and 4 multiply by the weight;
            // saving it is saving its transpose %4 / %8 (a view) for free,
            // and a cut of equal bytes prefers the weight to the view.
            "%p_2_weight: f32[512,512] = input",
            "%p_4_weight: f32[10,512] = input",
            // Layer 0's weight gradient reads its input.
            "%arg: f32[128,784] = input",
            // The ReLU outputs: the next layer's weight gradient reads them,
            // and so does ReLU's backward (their sign). Saving the layer
            // outputs before the ReLU (%2, %6) costs the same bytes; of equal
            // cuts the one closest to the backward is taken, so nothing is
            // recomputed.
            "%3: f32[128,512] = relu",
            "%7: f32[128,512] = relu",
        });
}

TEST_CASE("cnn: min-cut saves convolution outputs, BatchNorm sums and the pooling output") {
  const Traced t = TraceForTraining("cnn");
  const partition::PartitionResult part = Partition(t, partition::MinCutPartition);
  // Conv 0 -> BatchNorm 1 -> ReLU 2 -> conv 3 -> BatchNorm 4 -> ReLU 5 ->
  // max-pool 6 -> flatten 7 -> linear 8. BatchNorm decomposes into mean =
  // sum / n, var = sum((x - mean')^2) / n with its own mean' (a second
  // sum: nothing merges the two), then (x - mean) * rsqrt(var + eps) *
  // weight + bias.
  CHECK(SavedLines(t, part) ==
        std::vector<std::string>{
            // The BatchNorm weights and biases: the backward recomputes the
            // normalisation (x - mean) * rsqrt(var + eps) * weight + bias,
            // whose sign ReLU's backward reads.
            "%p_1_weight: f32[32] = input",
            "%p_1_bias: f32[32] = input",
            // Conv 3's input gradient (conv2d_backward_data) reads its weight.
            "%p_3_weight: f32[32,32,3,3] = input",
            "%p_4_weight: f32[32] = input",
            "%p_4_bias: f32[32] = input",
            // The linear layer's input gradient reads its weight.
            "%p_8_weight: f32[10,8192] = input",
            // Conv 0's weight gradient reads the image (which needs no
            // gradient, so conv 0's weight is not saved).
            "%arg: f32[32,3,32,32] = input",
            // Conv 0's output plus bias: convolutions are never recomputed.
            "%2: f32[32,32,32,32] = add",
            // BatchNorm 1's statistics: its sums each shrink their input
            // 32768 times, past kMaxRecomputedReductionRatio, so they are not
            // recomputed; of the equal cuts after them, the one closest to
            // the backward saves the mean (%5), the variance's own mean (%8)
            // and the variance plus eps (%15), 128 B each.
            "%5: f32[1,32,1,1] = div",
            "%8: f32[1,32,1,1] = div",
            "%15: f32[1,32,1,1] = add",
            // The same for conv 3 and BatchNorm 4.
            "%40: f32[32,32,32,32] = add",
            "%43: f32[1,32,1,1] = div",
            "%46: f32[1,32,1,1] = div",
            "%53: f32[1,32,1,1] = add",
            // Pooling is never recomputed; the linear layer's weight gradient
            // reads its output (through the flatten, a view).
            "%76: f32[32,32,16,16] = max_pool2d",
        });
  // The normalisations and ReLUs run again in the backward.
  std::vector<std::string> recomputed;
  for (const Node* n : partition::RecomputedNodes(part)) {
    recomputed.push_back(absl::StrCat("%", n->result(0)->name()));
  }
  for (const char* name : {"%18", "%22", "%37", "%56", "%60", "%75"}) {
    CHECK_THAT(recomputed, Catch::Matchers::VectorContains(std::string(name)));
  }
}

TEST_CASE("min-cut saves no more activation bytes than the default partition") {
  for (const std::string& name : nn::ModelNames()) {
    INFO(name);
    const Traced t = TraceForTraining(name);
    const int64_t min_cut =
        partition::SavedActivationBytes(t.joint().graph, Partition(t, partition::MinCutPartition));
    const int64_t by_default =
        partition::SavedActivationBytes(t.joint().graph, Partition(t, partition::DefaultPartition));
    CHECK(min_cut <= by_default);
    // The targets (the default saves 42.99 MB on cnn, 25.21 MB on
    // transformer).
    if (name == "cnn") CHECK(min_cut <= 10'500'000);
    if (name == "transformer") CHECK(min_cut < 18'900'000);
  }
}

}  // namespace
}  // namespace tc
