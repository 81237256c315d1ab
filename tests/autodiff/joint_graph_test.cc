#include "autodiff/joint_graph.h"

#include "absl/strings/match.h"
#include "autodiff/engine.h"
#include "catch2/catch.hpp"
#include "codegen/interpreter.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "partition/partition.h"
#include "runtime/ops.h"
#include "runtime/trace.h"
#include "tests/graph/models.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using T = Tree<Tensor>;
using testing::Model;

std::vector<Tensor> UserInputs(const Model& m) {
  std::vector<Tensor> leaves;
  m.inputs.ForEachLeaf([&](const Tensor& t) { leaves.push_back(t); });
  return leaves;
}

// The joint graph's arguments: the forward's, then ones for every tangent.
std::vector<Tensor> JointArguments(const TracedProgram& program, const JointGraph& joint,
                                   const Model& m) {
  absl::StatusOr<std::vector<Tensor>> args = GraphArguments(program, m.inputs, m.params, m.buffers);
  REQUIRE(args.ok());
  const std::vector<Value*>& placeholders = joint.graph.placeholders();
  for (size_t i = joint.layout.num_primals; i < placeholders.size(); ++i) {
    args->push_back(ones(placeholders[i]->type().shape, placeholders[i]->type().dtype));
  }
  return *args;
}

// Eager reference: the outputs and the gradients of sum(<output, ones>) with
// respect to the parameters, then the user inputs.
std::pair<std::vector<Tensor>, std::vector<Tensor>> Eager(const Model& m) {
  TensorList wrt;
  for (const auto& [name, p] : m.params) wrt.push_back(p);
  for (const Tensor& x : UserInputs(m)) wrt.push_back(x);
  for (const Tensor& t : wrt) t.requires_grad_();
  TensorList outputs = Flatten(m.fn(m.inputs)).first;
  TensorList seeds;
  for (const Tensor& o : outputs) seeds.push_back(ones(o.shape(), o.dtype()));
  absl::StatusOr<TensorList> grads = tc::grad(outputs, wrt, seeds);
  INFO(grads.status().message());
  REQUIRE(grads.ok());
  for (const Tensor& t : wrt) t.requires_grad_(false);
  for (Tensor& o : outputs) o = o.detach();
  return {outputs, *grads};
}

TEST_CASE("joint graph and default partition match eager autograd on every model") {
  for (const Model& m : testing::AllModels()) {
    SECTION(m.name) {
      absl::StatusOr<TracedProgram> program = Trace(m.fn, m.inputs, m.params, m.buffers);
      REQUIRE(program.ok());
      JointOptions options;
      options.user_inputs_require_grad.assign(UserInputs(m).size(), true);
      absl::StatusOr<JointGraph> joint = BuildJointGraph(*program, options);
      INFO(joint.status().message());
      REQUIRE(joint.ok());
      INFO(ToString(*joint));
      CHECK(Verify(joint->graph).ok());

      const std::vector<Tensor> args = JointArguments(*program, *joint, m);
      const std::vector<Tensor> joint_out = testing::RunGraph(joint->graph, args);
      auto [eager_out, eager_grads] = Eager(m);
      const int nf = joint->layout.num_forward_outputs;
      REQUIRE(nf == static_cast<int>(eager_out.size()));
      REQUIRE(joint_out.size() == eager_out.size() + eager_grads.size());
      for (int i = 0; i < nf; ++i) REQUIRE_TENSORS_CLOSE(joint_out[i], eager_out[i], 1e-10, 1e-10);
      for (size_t i = 0; i < eager_grads.size(); ++i) {
        INFO(joint->outputs[nf + i].ToString());
        REQUIRE_TENSORS_CLOSE(joint_out[nf + i], eager_grads[i], 1e-10, 1e-10);
      }

      absl::StatusOr<partition::PartitionResult> part =
          partition::DefaultPartition(joint->graph, joint->layout);
      INFO(part.status().message());
      REQUIRE(part.ok());
      CHECK(Verify(part->forward).ok());
      CHECK(Verify(part->backward).ok());
      const int np = joint->layout.num_primals;
      const std::vector<Tensor> fw_out =
          testing::RunGraph(part->forward, std::vector<Tensor>(args.begin(), args.begin() + np));
      REQUIRE(static_cast<int>(fw_out.size()) == nf + part->num_fw_outs_saved_for_bw);
      std::vector<Tensor> bw_args(fw_out.begin() + nf, fw_out.end());
      bw_args.insert(bw_args.end(), args.begin() + np, args.end());
      const std::vector<Tensor> bw_out = testing::RunGraph(part->backward, bw_args);
      REQUIRE(bw_out.size() == eager_grads.size());
      for (int i = 0; i < nf; ++i) REQUIRE_TENSORS_CLOSE(fw_out[i], joint_out[i], 0, 0);
      for (size_t i = 0; i < bw_out.size(); ++i) {
        REQUIRE_TENSORS_CLOSE(bw_out[i], joint_out[nf + i], 0, 0);
      }
    }
  }
}

// x f64[4,3] -> linear(x, w[2,3], b[2]) under the scope "linear".
TracedProgram LinearProgram() {
  Tensor w = testing::Random({2, 3}, DType::kF64, 1), b = testing::Random({2}, DType::kF64, 2);
  absl::StatusOr<TracedProgram> program = Trace(
      [&](const T& in) {
        ScopedTraceScope scope("linear");
        return T::MakeLeaf(linear(in[0].leaf(), w, b));
      },
      T::Tuple({T::MakeLeaf(testing::Random({4, 3}, DType::kF64, 3))}),
      {{"linear.weight", w}, {"linear.bias", b}});
  REQUIRE(program.ok());
  return *std::move(program);
}

TEST_CASE("joint graph options: gradients asked for and their checks") {
  JointOptions options;  // parameters only
  absl::StatusOr<JointGraph> joint = BuildJointGraph(LinearProgram(), options);
  REQUIRE(joint.ok());
  REQUIRE(joint->outputs.size() == 3);
  CHECK(joint->outputs[2].ToString() == "ParamGrad{linear.bias}");
  CHECK(joint->layout.grad_primal_indices == std::vector<int>{0, 1});

  // Nothing requires grad: each gradient output is absent, the forward stays.
  options.params_require_grad = false;
  joint = BuildJointGraph(LinearProgram(), options);
  REQUIRE(joint.ok());
  CHECK(joint->outputs.size() == 1);
  CHECK(joint->graph.num_nodes() == 1);

  options.user_inputs_require_grad = {true, false};
  CHECK(BuildJointGraph(LinearProgram(), options).status().message() ==
        "user_inputs_require_grad has 2 flags for 1 user inputs");
}

TEST_CASE("an input no gradient reaches gets zeros and is detached") {
  Tensor w = testing::Random({3}, DType::kF64, 1);
  Tensor unused = testing::Random({2}, DType::kF64, 2);
  absl::StatusOr<TracedProgram> program =
      Trace([&](const T& in) { return T::MakeLeaf(in[0].leaf() * w); },
            T::Tuple({T::MakeLeaf(testing::Random({3}, DType::kF64, 3))}),
            {{"w", w}, {"unused", unused}});
  REQUIRE(program.ok());
  absl::StatusOr<JointGraph> joint = BuildJointGraph(*program, {});
  REQUIRE(joint.ok());
  REQUIRE(joint->outputs.size() == 3);
  CHECK(joint->outputs[2].ToString() == "ParamGrad{unused}");
  absl::StatusOr<partition::PartitionResult> part =
      partition::DefaultPartition(joint->graph, joint->layout);
  REQUIRE(part.ok());
  CHECK(part->indices_of_inputs_to_detach == std::vector<int>{1});
  const std::vector<Tensor> out = testing::RunGraph(
      joint->graph, {w, unused, testing::Random({3}, DType::kF64, 3), ones({3}, DType::kF64)});
  REQUIRE_TENSORS_CLOSE(out[2], zeros({2}, DType::kF64), 0, 0);
}

TEST_CASE("detach inside the traced code cuts the joint graph's gradient there") {
  Tensor w = testing::Random({3}, DType::kF64, 1);
  const Tensor x = testing::Random({3}, DType::kF64, 2);
  // d/dw of x * stop(w) + w * stop(w) is stop(w); were the gradient to flow
  // through the cuts, it would be 2 w + x.
  absl::StatusOr<TracedProgram> program =
      Trace([&](const T& in) { return T::MakeLeaf(in[0].leaf() * w.detach() + w * w.detach()); },
            T::Tuple({T::MakeLeaf(x)}), {{"w", w}});
  REQUIRE(program.ok());
  CHECK(absl::StrContains(ToString(program->graph), "stop_gradient(%p_w)"));
  absl::StatusOr<JointGraph> joint = BuildJointGraph(*program, {});
  REQUIRE(joint.ok());
  REQUIRE(joint->outputs.size() == 2);
  const std::vector<Tensor> out = testing::RunGraph(joint->graph, {w, x, ones({3}, DType::kF64)});
  REQUIRE_TENSORS_CLOSE(out[0], x * w + w * w, 0, 0);
  REQUIRE_TENSORS_CLOSE(out[1], w, 0, 0);
}

TEST_CASE("joint graph text of a linear layer, with its descriptors") {
  JointOptions options;
  options.user_inputs_require_grad = {true};
  absl::StatusOr<JointGraph> joint = BuildJointGraph(LinearProgram(), options);
  REQUIRE(joint.ok());
  // d x = t W, d W = t^T x, d b = sum_rows(t).
  CHECK(ToString(*joint) ==
        "graph(%p_linear_weight: f64[2,3], %p_linear_bias: f64[2], %arg0: f64[4,3], "
        "%tangent_0: f64[4,2]) {\n"
        "  %0: f64[4,2] = linear(%arg0, %p_linear_weight, %p_linear_bias)  # linear\n"
        "  %1: f64[4,3] = matmul(%tangent_0, %p_linear_weight)  # linear (backward)\n"
        "  %2: f64[2,4] = permute(%tangent_0) {dims=[1,0]}  # linear (backward)\n"
        "  %3: f64[2,3] = matmul(%2, %arg0)  # linear (backward)\n"
        "  %4: f64[2] = sum(%tangent_0) {dims=[0], keepdim=false}  # linear (backward)\n"
        "  return (%0, %3, %4, %1)\n"
        "}\n"
        "inputs:\n"
        "  %p_linear_weight: ParamInput{linear.weight}\n"
        "  %p_linear_bias: ParamInput{linear.bias}\n"
        "  %arg0: UserInput{inputs[0]}\n"
        "  %tangent_0: Tangent{0}\n"
        "outputs:\n"
        "  %0: UserOutput{0}\n"
        "  %3: ParamGrad{linear.weight}\n"
        "  %4: ParamGrad{linear.bias}\n"
        "  %1: InputGrad{inputs[0]}\n");
}

TEST_CASE("default partition of a linear layer saves what the backward reads") {
  JointOptions options;
  options.user_inputs_require_grad = {true};
  absl::StatusOr<JointGraph> joint = BuildJointGraph(LinearProgram(), options);
  REQUIRE(joint.ok());
  absl::StatusOr<partition::PartitionResult> part =
      partition::DefaultPartition(joint->graph, joint->layout);
  REQUIRE(part.ok());
  std::vector<std::string> names;
  for (const partition::SavedValue& s : part->saved) names.push_back(s.name);
  // The bias gradient needs only the tangent; W and x are read by the matmuls.
  CHECK(names == std::vector<std::string>{"p_linear_weight", "arg0"});
  CHECK(part->num_fw_outs_saved_for_bw == 2);
  CHECK(part->saved[1].bytes == 4 * 3 * 8);
  CHECK(part->indices_of_inputs_to_detach.empty());
  CHECK(ToString(part->forward) ==
        "graph(%p_linear_weight: f64[2,3], %p_linear_bias: f64[2], %arg0: f64[4,3]) {\n"
        "  %0: f64[4,2] = linear(%arg0, %p_linear_weight, %p_linear_bias)  # linear\n"
        "  return (%0, %p_linear_weight, %arg0)\n"
        "}\n");
  const std::vector<Value*>& bw_inputs = part->backward.placeholders();
  REQUIRE(bw_inputs.size() == 3);
  CHECK(bw_inputs[0]->name() == "p_linear_weight");
  CHECK(bw_inputs[1]->name() == "arg0");
  CHECK(bw_inputs[2]->name() == "tangent_0");
  CHECK(part->backward.num_nodes() == 4);
}

}  // namespace
}  // namespace tc
