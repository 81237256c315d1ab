// The min-cut partitioner: the f64 test models and the reference models
// through the pipeline against eager, saved activation bytes against the
// default partition, and a hand case with its byte arithmetic.
#include "partition/min_cut.h"

#include <string>
#include <vector>

#include "autodiff/engine.h"
#include "autodiff/joint_graph.h"
#include "catch2/catch.hpp"
#include "codegen/interpreter.h"
#include "graph/decompositions.h"
#include "graph/verifier.h"
#include "nn/models/models.h"
#include "partition/accounting.h"
#include "pipeline/compiler_pipeline.h"
#include "runtime/ops.h"
#include "runtime/trace.h"
#include "tests/graph/models.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using T = Tree<Tensor>;

// Bytes of the saved values that are not joint-graph placeholders.
int64_t ActivationBytes(const partition::PartitionResult& part, const Graph& joint) {
  int64_t bytes = 0;
  for (const partition::SavedValue& s : part.saved) {
    if (!joint.FindValue(s.name)->is_placeholder()) bytes += s.bytes;
  }
  return bytes;
}

TEST_CASE("min-cut partition of the f64 test models computes the joint graph's outputs") {
  for (const testing::Model& m : testing::AllModels()) {
    SECTION(m.name) {
      absl::StatusOr<TracedProgram> program = Trace(m.fn, m.inputs, m.params, m.buffers);
      REQUIRE(program.ok());
      std::vector<Tensor> user_inputs;
      m.inputs.ForEachLeaf([&](const Tensor& t) { user_inputs.push_back(t); });
      JointOptions options;
      options.user_inputs_require_grad.assign(user_inputs.size(), true);
      absl::StatusOr<JointGraph> joint = BuildJointGraph(*program, options);
      REQUIRE(joint.ok());
      absl::StatusOr<std::vector<Tensor>> args =
          GraphArguments(*program, m.inputs, m.params, m.buffers);
      REQUIRE(args.ok());
      const std::vector<Value*>& placeholders = joint->graph.placeholders();
      for (size_t i = joint->layout.num_primals; i < placeholders.size(); ++i) {
        args->push_back(testing::Random(placeholders[i]->type().shape,
                                        placeholders[i]->type().dtype, static_cast<int>(i)));
      }
      const std::vector<Tensor> expected = testing::RunGraph(joint->graph, *args);

      absl::StatusOr<partition::PartitionResult> part =
          partition::MinCutPartition(joint->graph, joint->layout);
      INFO(part.status().message());
      REQUIRE(part.ok());
      CHECK(Verify(part->forward).ok());
      CHECK(Verify(part->backward).ok());
      const int np = joint->layout.num_primals, nf = joint->layout.num_forward_outputs;
      const std::vector<Tensor> fw_out =
          testing::RunGraph(part->forward, std::vector<Tensor>(args->begin(), args->begin() + np));
      REQUIRE(static_cast<int>(fw_out.size()) == nf + part->num_fw_outs_saved_for_bw);
      std::vector<Tensor> bw_args(fw_out.begin() + nf, fw_out.end());
      bw_args.insert(bw_args.end(), args->begin() + np, args->end());
      const std::vector<Tensor> bw_out = testing::RunGraph(part->backward, bw_args);
      for (int i = 0; i < nf; ++i) REQUIRE_TENSORS_CLOSE(fw_out[i], expected[i], 1e-12, 1e-12);
      REQUIRE(bw_out.size() == expected.size() - nf);
      for (size_t i = 0; i < bw_out.size(); ++i) {
        REQUIRE_TENSORS_CLOSE(bw_out[i], expected[nf + i], 1e-12, 1e-12);
      }
      absl::StatusOr<partition::PartitionResult> def =
          partition::DefaultPartition(joint->graph, joint->layout);
      REQUIRE(def.ok());
      CHECK(ActivationBytes(*part, joint->graph) <= ActivationBytes(*def, joint->graph));
    }
  }
}

struct Compiled {
  Function fn;
  int64_t activation_bytes = 0;
};

Compiled Compile(nn::ModelSpec& spec, const partition::PartitionFn& partition_fn) {
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
  partition::PartitionResult part;
  Function fn = testing::CompileStages(pipeline, partition_fn, &part);
  return {fn, ActivationBytes(part, pipeline.joint_graph().value()->graph)};
}

TEST_CASE("mlp, cnn and transformer through the pipeline with the min-cut partition") {
  for (const std::string name : {"mlp", "cnn", "transformer"}) {
    INFO(name);
    nn::ModelSpec compiled = nn::MakeModel(name, 11).value();
    nn::ModelSpec eager = nn::MakeModel(name, 11).value();
    nn::ModelSpec reference = nn::MakeModel(name, 11).value();
    for (nn::ModelSpec* s : {&compiled, &eager, &reference}) {
      s->module->to(DType::kF64);
      auto to_f64 = [](const Tensor& t) { return IsFloating(t.dtype()) ? t.to(DType::kF64) : t; };
      s->inputs = s->inputs.Map(to_f64);
      s->targets = s->targets.Map(to_f64);
    }
    const Compiled min_cut = Compile(compiled, partition::MinCutPartition);
    const Compiled by_default = Compile(reference, partition::DefaultPartition);
    CHECK(min_cut.activation_bytes <= by_default.activation_bytes);

    const TensorTree out_c = min_cut.fn(compiled.inputs).value();
    const TensorTree out_e = (*eager.module)(eager.inputs);
    const std::vector<Tensor> lc = Flatten(out_c).first, le = Flatten(out_e).first;
    REQUIRE(lc.size() == le.size());
    for (size_t i = 0; i < lc.size(); ++i) REQUIRE_TENSORS_CLOSE(lc[i], le[i], 1e-10, 1e-10);
    compiled.loss(out_c, compiled.targets).backward();
    eager.loss(out_e, eager.targets).backward();
    testing::RequireSameState(*compiled.module, *eager.module, 1e-10, /*grads=*/true);
  }
}

TEST_CASE("x -> matmul -> relu -> mul: the matmul result is saved, the relu recomputed") {
  Tensor a = testing::Random({8, 8}, DType::kF64, 1), w = testing::Random({8}, DType::kF64, 2);
  absl::StatusOr<TracedProgram> program =
      Trace([&](const T& in) { return T::MakeLeaf(relu(matmul(in[0].leaf(), a)) * w); },
            T::Tuple({T::MakeLeaf(testing::Random({4, 8}, DType::kF64, 3))}), {{"a", a}, {"w", w}});
  REQUIRE(program.ok());
  JointOptions options;
  options.user_inputs_require_grad = {true};
  absl::StatusOr<JointGraph> joint = BuildJointGraph(*program, options);
  REQUIRE(joint.ok());
  auto names = [](const partition::PartitionResult& part) {
    std::vector<std::string> out;
    for (const partition::SavedValue& s : part.saved) out.push_back(s.name);
    return out;
  };
  // h = x a (f64[4,8], 256 bytes), r = relu(h) (256 bytes), y = r w.
  // The backward reads w (dr = t w, 64 bytes), r (relu's backward: r > 0,
  // and dw = sum(t r)), x and a (the matmul's gradients, 256 + 512 bytes).
  // Default: a, w, x, r = 512 + 64 + 256 + 256 = 1088 bytes, of which
  // activations 256. Min cut: saving h (and recomputing r = relu(h)) costs
  // the same bytes as saving r; of equal cuts it takes the one closest to the
  // backward, r, which then recomputes nothing.
  absl::StatusOr<partition::PartitionResult> def =
      partition::DefaultPartition(joint->graph, joint->layout);
  absl::StatusOr<partition::PartitionResult> cut =
      partition::MinCutPartition(joint->graph, joint->layout);
  REQUIRE(def.ok());
  REQUIRE(cut.ok());
  CHECK(names(*def) == std::vector<std::string>{"p_a", "p_w", "arg0", "1"});
  CHECK(names(*cut) == std::vector<std::string>{"p_a", "p_w", "arg0", "1"});
  CHECK(partition::RecomputedNodes(*cut).empty());
  CHECK(ActivationBytes(*def, joint->graph) == 256);
  CHECK(ActivationBytes(*cut, joint->graph) == 256);
}

TEST_CASE("MayRecompute: cheap ops yes, matmul and large reductions no") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF64, {8, 4}});
  Value* w = g.AddPlaceholder("w", {DType::kF64, {4, 4}});
  auto node = [&](OpKind op, std::vector<Value*> in, Attrs attrs = Attrs()) {
    absl::StatusOr<std::vector<Value*>> r = g.AddNode(op, in, attrs);
    INFO(r.status().message());
    REQUIRE(r.ok());
    return (*r)[0]->producer();
  };
  CHECK(partition::MayRecompute(*node(OpKind::kRelu, {x})));
  CHECK(partition::MayRecompute(
      *node(OpKind::kPermute, {x}, {{"dims", std::vector<int64_t>{1, 0}}})));
  CHECK_FALSE(partition::MayRecompute(*node(OpKind::kMatmul, {x, w})));
  // Summing 8x4 over dim 1 shrinks it 4 times (allowed), over both dims 32 times.
  CHECK(partition::MayRecompute(
      *node(OpKind::kSum, {x}, {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}})));
  CHECK_FALSE(partition::MayRecompute(
      *node(OpKind::kSum, {x}, {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}})));
}

}  // namespace
}  // namespace tc
