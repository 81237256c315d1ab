// Tracing nn modules: placeholders by FQN, module scopes as node sources,
// BatchNorm's buffer updates as extra outputs, and the module left untouched.
#include "catch2/catch.hpp"
#include "codegen/interpreter.h"
#include "graph/verifier.h"
#include "nn/models/models.h"
#include "nn/module.h"
#include "tests/test_util.h"

namespace tc {
namespace {

TEST_CASE("tracing convbn in training records buffer updates and leaves the module unchanged") {
  nn::ModelSpec spec = nn::MakeModel("convbn", 3).value();
  nn::Module& model = *spec.module;
  model.to(DType::kF64);
  const TensorTree inputs = TensorTree::MakeLeaf(testing::Random({2, 1, 4, 4}, DType::kF64, 4));
  std::vector<std::vector<double>> before;
  for (const auto& [name, t] : model.named_buffers()) before.push_back(t.to_vector<double>());

  nn::TracedModule traced = nn::TraceModule(model, inputs).value();
  const Graph& graph = traced.program.graph;
  REQUIRE(Verify(graph).ok());

  std::vector<std::string> placeholder_names;
  for (const Value* p : graph.placeholders()) placeholder_names.push_back(p->name());
  CHECK(placeholder_names == std::vector<std::string>{"p_0_weight", "p_0_bias", "p_1_weight",
                                                      "p_1_bias", "b_1_running_mean",
                                                      "b_1_running_var", "b_1_num_batches_tracked",
                                                      "arg"});
  CHECK(traced.mutated_buffers ==
        std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"});
  bool conv_source = false, bn_source = false;
  for (const Node* n : graph.nodes()) {
    conv_source |= n->op() == OpKind::kConv2d && n->source() == "0";
    bn_source |= n->op() == OpKind::kBatchNorm && n->source() == "1";
  }
  CHECK(conv_source);
  CHECK(bn_source);

  // The module's buffers are untouched by tracing.
  size_t i = 0;
  for (const auto& [name, t] : model.named_buffers()) {
    REQUIRE(t.storage() != nullptr);
    CHECK(t.to_vector<double>() == before[i++]);
  }

  // Running the graph gives eager's output and eager's buffer updates.
  std::vector<Tensor> args =
      GraphArguments(traced.program, inputs, model.named_parameters(), model.named_buffers())
          .value();
  std::vector<Tensor> got = codegen::Interpret(graph).value()(args).value();
  REQUIRE(got.size() == 4);
  Tensor eager_out = model(inputs.leaf());
  REQUIRE_TENSORS_CLOSE(got[0], eager_out, 0, 0);
  const nn::NamedTensors updated = model.named_buffers();
  for (size_t k = 0; k < 3; ++k) {
    INFO(updated[k].first);
    REQUIRE_TENSORS_CLOSE(got[1 + k], updated[k].second, 0, 0);
  }
}

TEST_CASE("a shape error inside a traced module names the module") {
  nn::ModelSpec spec = nn::MakeModel("mlp", 1).value();
  const TensorTree bad = TensorTree::MakeLeaf(zeros({2, 100}));
  absl::StatusOr<nn::TracedModule> traced = nn::TraceModule(*spec.module, bad);
  REQUIRE_FALSE(traced.ok());
  CHECK(traced.status().message().find("linear: input [2,100] does not fit weight [512,784]") !=
        std::string::npos);
  CHECK(traced.status().message().find("(at 0)") != std::string::npos);
}

}  // namespace
}  // namespace tc
