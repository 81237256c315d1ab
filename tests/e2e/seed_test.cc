// The five CompilerPipeline tests of the seed, in C++. Unlike the seed, the
// eager reference is an independent copy of the model (same seed, so same
// parameters): compiled and eager gradients accumulate into different
// tensors, so comparing them can fail.
#include "catch2/catch.hpp"
#include "graph/printer.h"
#include "nn/models/models.h"
#include "pipeline/compiler_pipeline.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

constexpr double kTol = 1e-5;

Tensor SumOfOutputs(const TensorTree& out) {
  Tensor total;
  out.ForEachLeaf([&](const Tensor& t) { total = total.defined() ? total + sum(t) : sum(t); });
  return total;
}

// Parameter names, order and gradients of the compiled model equal the eager copy's.
void RequireSameParamGrads(const nn::Module& eager, const CompilerPipeline& pipeline) {
  const nn::NamedTensors e = eager.named_parameters();
  const nn::NamedTensors c = pipeline.named_parameters();
  REQUIRE(e.size() == c.size());
  for (size_t i = 0; i < e.size(); ++i) {
    INFO(e[i].first);
    CHECK(e[i].first == c[i].first);
    REQUIRE(e[i].second.grad().defined());
    REQUIRE(c[i].second.grad().defined());
    CHECK_FALSE(e[i].second.same(c[i].second));
    REQUIRE_TENSORS_CLOSE(c[i].second.grad(), e[i].second.grad(), kTol, kTol);
  }
}

TensorTree CloneWithGrad(const TensorTree& tree) {
  return tree.Map([](const Tensor& t) {
    Tensor c = t.detach().clone();
    c.requires_grad_();
    return c;
  });
}

void CheckTraining(const std::string& name) {
  nn::ModelSpec compiled_spec = nn::MakeModel(name, 7).value();
  nn::ModelSpec eager_spec = nn::MakeModel(name, 7).value();
  nn::Module& model = *compiled_spec.module;
  nn::Module& eager = *eager_spec.module;
  const TensorTree inputs = CloneWithGrad(compiled_spec.inputs);

  CompilerPipeline pipeline = CompilerPipeline::Create(model, inputs).value();
  Function model_fn = testing::CompileStages(pipeline);

  // Forward: same structure and values.
  const TensorTree expected = eager(inputs);
  const TensorTree actual = model_fn(inputs).value();
  const auto [expected_leaves, expected_spec] = Flatten(expected);
  const auto [actual_leaves, actual_spec] = Flatten(actual);
  CHECK(ToString(actual_spec) == ToString(expected_spec));
  REQUIRE(actual_leaves.size() == expected_leaves.size());
  for (size_t i = 0; i < actual_leaves.size(); ++i) {
    REQUIRE_TENSORS_CLOSE(actual_leaves[i], expected_leaves[i], kTol, kTol);
  }

  // Backward on fresh inputs: input gradients and parameter gradients.
  eager.zero_grad();
  model.zero_grad();
  const TensorTree inputs_eager = CloneWithGrad(compiled_spec.inputs);
  const TensorTree inputs_compiled = CloneWithGrad(compiled_spec.inputs);
  SumOfOutputs(eager(inputs_eager)).backward();
  SumOfOutputs(model_fn(inputs_compiled).value()).backward();
  const std::vector<Tensor> ge = Flatten(inputs_eager).first;
  const std::vector<Tensor> gc = Flatten(inputs_compiled).first;
  for (size_t i = 0; i < ge.size(); ++i) {
    REQUIRE(gc[i].grad().defined());
    REQUIRE_TENSORS_CLOSE(gc[i].grad(), ge[i].grad(), kTol, kTol);
  }
  RequireSameParamGrads(eager, pipeline);

  // Buffers (BatchNorm's running statistics) were updated as eager's were.
  const nn::NamedTensors be = eager.named_buffers(), bc = model.named_buffers();
  for (size_t i = 0; i < be.size(); ++i) {
    INFO(be[i].first);
    REQUIRE_TENSORS_CLOSE(bc[i].second, be[i].second, kTol, kTol);
  }
}

TEST_CASE("simple linear, stage by stage") { CheckTraining("linear"); }

TEST_CASE("conv + batchnorm, stage by stage") { CheckTraining("convbn"); }

TEST_CASE("structured dict input and tuple output, training") {
  CheckTraining("structured");
  // The structure is the seed's: a tuple of three.
  nn::ModelSpec spec = nn::MakeModel("structured", 7).value();
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
  Function fn = testing::CompileStages(pipeline);
  const TensorTree out = fn(spec.inputs).value();
  CHECK(out.kind() == TreeKind::kTuple);
  CHECK(out.items().size() == 3);
}

TEST_CASE("structured dict input and tuple output, inference") {
  nn::ModelSpec compiled_spec = nn::MakeModel("structured", 3).value();
  nn::ModelSpec eager_spec = nn::MakeModel("structured", 3).value();
  const TensorTree inputs = compiled_spec.inputs;  // no grad wanted
  CompilerPipeline pipeline = CompilerPipeline::Create(*compiled_spec.module, inputs).value();
  REQUIRE(pipeline.generate_ir_for_inference({.decompositions = &DefaultDecompositions()}).ok());
  const InferenceGraph* graph = pipeline.inference_graph().value();
  codegen::Executable fw = pipeline.inference_compile(codegen::interpreter(), graph->graph).value();
  Function model_fn = pipeline.make_inference_function(fw).value();

  const TensorTree expected = (*eager_spec.module)(inputs);
  const TensorTree actual = model_fn(inputs).value();
  REQUIRE(actual.kind() == TreeKind::kTuple);
  REQUIRE(actual.items().size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    REQUIRE_TENSORS_CLOSE(actual.items()[i].leaf(), expected.items()[i].leaf(), kTol, kTol);
    CHECK_FALSE(actual.items()[i].leaf().requires_grad());
  }
}

TEST_CASE("identity passes between stages") {
  nn::ModelSpec compiled_spec = nn::MakeModel("linear", 5).value();
  nn::ModelSpec eager_spec = nn::MakeModel("linear", 5).value();
  const TensorTree inputs = CloneWithGrad(compiled_spec.inputs);
  CompilerPipeline pipeline = CompilerPipeline::Create(*compiled_spec.module, inputs).value();
  REQUIRE(pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());

  // The pass changes no computation; it marks every node's source, so the
  // mark shows which graphs went through it.
  int runs = 0;
  const Pass mark{"identity", [&runs](Graph& g) -> absl::StatusOr<bool> {
                    ++runs;
                    for (Node* n : g.nodes()) n->set_source(n->source() + " [identity]");
                    return true;
                  }};
  const JointGraph& captured = *pipeline.joint_graph().value();
  JointGraph joint{captured.graph.Clone(), captured.inputs, captured.outputs, captured.layout};
  REQUIRE(RunPasses(joint.graph, {mark}).ok());
  partition::PartitionResult part = pipeline.partition(partition::DefaultPartition, joint).value();
  REQUIRE(RunPasses(part.forward, {mark}).ok());
  REQUIRE(RunPasses(part.backward, {mark}).ok());
  CHECK(runs == 3);
  // Joint nodes were marked once, then again in the graph they landed in.
  CHECK(ToString(part.forward).find("[identity] [identity]") != std::string::npos);
  CHECK(ToString(part.backward).find("[identity] [identity]") != std::string::npos);
  CHECK(ToString(captured.graph).find("[identity]") == std::string::npos);

  CompiledForward fw = pipeline.fw_compile(codegen::interpreter(), part).value();
  CompiledBackward bw = pipeline.bw_compile(codegen::interpreter(), part, fw).value();
  Function model_fn = pipeline.make_autograd_function(fw, bw, part).value();
  const Tensor x = inputs.leaf();
  const Tensor out = model_fn(inputs).value().leaf();
  REQUIRE_TENSORS_CLOSE(out, (*eager_spec.module)(x), kTol, kTol);
  sum(out).backward();
  sum((*eager_spec.module)(x.detach())).backward();
  RequireSameParamGrads(*eager_spec.module, pipeline);
}

}  // namespace
}  // namespace tc
