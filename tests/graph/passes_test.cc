// Dead-code and common-subexpression elimination, recompute-late, and the
// pass runner.
#include "base/status_macros.h"
#include "catch2/catch.hpp"
#include "graph/parser.h"
#include "graph/pass.h"
#include "graph/passes/cse.h"
#include "graph/passes/dce.h"
#include "graph/passes/recompute_late.h"
#include "graph/passes/strip_stop_gradients.h"
#include "graph/printer.h"
#include "tests/graph/graphs.h"

namespace tc {
namespace {

using testing::ParseOk;

std::pair<std::string, bool> Run(const std::string& text, std::vector<Pass> passes) {
  return testing::RunOnText(text, passes);
}

TEST_CASE("dce removes unused chains, keeps outputs, placeholders and their producers") {
  const auto [text, changed] =
      Run("graph(%x: f32[3], %unused: f32[3], %img: f32[2,3]) {\n"
          "  %0: f32[3] = exp(%x)\n"
          "  %1: f32[3] = relu(%0)  # dead\n"
          "  %2: f32[3] = neg(%1)  # dead\n"
          "  %3: f32[2,3], %4: f32[3], %5: f32[3] = batch_norm(%img, %x, %x) {eps=0.1}\n"
          "  return (%0, %4)\n"
          "}\n",
          {DeadCodeElimination()});
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[3], %unused: f32[3], %img: f32[2,3]) {\n"
        "  %0: f32[3] = exp(%x)\n"
        "  %3: f32[2,3], %4: f32[3], %5: f32[3] = batch_norm(%img, %x, %x) "
        "{eps=0.10000000000000001}\n"
        "  return (%0, %4)\n"
        "}\n");
}

TEST_CASE("strip_stop_gradients makes readers and outputs read the input") {
  const auto [text, changed] =
      Run("graph(%x: f32[3]) {\n"
          "  %0: f32[3] = exp(%x)\n"
          "  %1: f32[3] = stop_gradient(%0)\n"
          "  %2: f32[3] = mul(%1, %0)\n"
          "  %3: f32[3] = stop_gradient(%x)\n"
          "  return (%2, %1, %3)\n"
          "}\n",
          {StripStopGradients()});
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[3]) {\n"
        "  %0: f32[3] = exp(%x)\n"
        "  %2: f32[3] = mul(%0, %0)\n"
        "  return (%2, %0, %x)\n"
        "}\n");
  const std::string plain = ToString(testing::Mlp());
  CHECK(Run(plain, {StripStopGradients()}) == std::make_pair(plain, false));
}

TEST_CASE("recompute_late runs each recomputation just before its first reader") {
  // A backward graph: %s saved, %t the tangent. The joint order put every
  // recomputation (%0, %1, %2, %5: from %s alone) first.
  const std::string backward =
      "graph(%s: f32[3], %t: f32[3]) {\n"
      "  %0: f32[3] = exp(%s)\n"
      "  %1: f32[3] = neg(%s)\n"
      "  %2: f32[3] = relu(%1)\n"
      "  %5: f32[3] = tanh(%s)\n"
      "  %3: f32[3] = mul(%t, %0)\n"
      "  %4: f32[3] = mul(%3, %2)\n"
      "  %6: f32[3] = add(%t, %t)\n"
      "  return (%4, %5, %6)\n"
      "}\n";
  const auto [text, changed] = Run(backward, {RecomputeLate(/*first_tangent=*/1)});
  CHECK(changed);
  // %0 before %3, its reader; %1 and %2 before %4; %6 keeps its place
  // after %4; %5, read by the outputs only, last.
  CHECK(text ==
        "graph(%s: f32[3], %t: f32[3]) {\n"
        "  %0: f32[3] = exp(%s)\n"
        "  %3: f32[3] = mul(%t, %0)\n"
        "  %1: f32[3] = neg(%s)\n"
        "  %2: f32[3] = relu(%1)\n"
        "  %4: f32[3] = mul(%3, %2)\n"
        "  %6: f32[3] = add(%t, %t)\n"
        "  %5: f32[3] = tanh(%s)\n"
        "  return (%4, %5, %6)\n"
        "}\n");
  CHECK(Run(text, {RecomputeLate(1)}) == std::make_pair(text, false));
  // With no tangents nothing anchors the order: it stays.
  CHECK(Run(backward, {RecomputeLate(2)}) == std::make_pair(backward, false));
}

TEST_CASE("recompute_late names a first tangent outside the placeholders") {
  Graph g = ParseOk("graph(%s: f32[3]) {\n  return (%s)\n}\n");
  const absl::StatusOr<bool> r = RunPasses(g, {RecomputeLate(2)});
  CHECK(r.status().message() ==
        "pass 'recompute_late': first tangent 2 is not a placeholder index of a graph of 1 "
        "placeholders");
}

TEST_CASE("dce reports no change on a graph without dead code") {
  const std::string mlp = ToString(testing::Mlp());
  CHECK(Run(mlp, {DeadCodeElimination()}) == std::make_pair(mlp, false));
}

TEST_CASE("cse merges same op, operands and attributes, and follows merges downstream") {
  const auto [text, changed] =
      Run("graph(%x: f32[2,3]) {\n"
          "  %0: f32[2,3] = relu(%x)  # a\n"
          "  %1: f32[2,3] = relu(%x)  # b\n"
          "  %2: f32[2,3] = exp(%0)\n"
          "  %3: f32[2,3] = exp(%1)\n"
          "  %4: f32[2] = sum(%x) {dims=[1], keepdim=false}\n"
          "  %5: f32[2] = sum(%x) {dims=[1], keepdim=false}\n"
          "  %6: f32[3] = sum(%x) {dims=[0], keepdim=false}\n"
          "  %7: f32[2,3] = add(%2, %3)\n"
          "  return (%7, %3, %4, %5, %6)\n"
          "}\n",
          {CommonSubexpressionElimination()});
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[2,3]) {\n"
        "  %0: f32[2,3] = relu(%x)  # a\n"
        "  %2: f32[2,3] = exp(%0)\n"
        "  %4: f32[2] = sum(%x) {dims=[1], keepdim=false}\n"
        "  %6: f32[3] = sum(%x) {dims=[0], keepdim=false}\n"
        "  %7: f32[2,3] = add(%2, %2)\n"
        "  return (%7, %2, %4, %4, %6)\n"
        "}\n");
}

TEST_CASE("cse merges multi-result nodes result by result") {
  const auto [text, changed] =
      Run("graph(%x: f32[2,3], %w: f32[3]) {\n"
          "  %0: f32[2,3], %1: f32[3], %2: f32[3] = batch_norm(%x, %w, %w) {eps=0.5}\n"
          "  %3: f32[2,3], %4: f32[3], %5: f32[3] = batch_norm(%x, %w, %w) {eps=0.5}\n"
          "  return (%3, %4, %2)\n"
          "}\n",
          {CommonSubexpressionElimination()});
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[2,3], %w: f32[3]) {\n"
        "  %0: f32[2,3], %1: f32[3], %2: f32[3] = batch_norm(%x, %w, %w) {eps=0.5}\n"
        "  return (%0, %1, %2)\n"
        "}\n");
}

TEST_CASE("cse never merges random ops, nor nodes whose attributes differ") {
  const std::string text =
      "graph(%x: f32[3], %seed: i64[], %offset: i64[]) {\n"
      "  %0: f32[3] = dropout(%x, %seed, %offset) {p=0.5}\n"
      "  %1: f32[3] = dropout(%x, %seed, %offset) {p=0.5}\n"
      "  %2: f32[3] = pow(%x) {exponent=2.0}\n"
      "  %3: f32[3] = pow(%x) {exponent=2.0000000000000004}\n"
      "  %4: f32[3] = pow(%x) {exponent=2}\n"
      "  return (%0, %1, %2, %3, %4)\n"
      "}\n";
  CHECK(Run(text, {CommonSubexpressionElimination()}) == std::make_pair(text, false));
}

// A fused node %`name` over %x whose body computes `op` (its value is %y).
std::string FusedLine(const std::string& name, const std::string& op) {
  return "  %" + name +
         ": f32[3] = fused(%x) {\n    graph(%x: f32[3]) {\n      %y: f32[3] = " + op +
         "(%x)\n      return (%y)\n    }\n  }\n";
}

TEST_CASE("cse merges fused nodes whose bodies print alike, and only those") {
  const auto [text, changed] =
      Run("graph(%x: f32[3]) {\n" + FusedLine("a", "exp") + FusedLine("b", "exp") +
              FusedLine("c", "neg") + "  return (%a, %b, %c)\n}\n",
          {CommonSubexpressionElimination()});
  CHECK(changed);
  CHECK(text == "graph(%x: f32[3]) {\n" + FusedLine("a", "exp") + FusedLine("c", "neg") +
                    "  return (%a, %a, %c)\n}\n");
}

TEST_CASE("cse then dce on a model graph with a duplicated branch") {
  Graph g = testing::Mlp();
  // A second, identical head that nothing reads after CSE.
  Value* h = g.nodes()[0]->result(0);
  Value* r = testing::Add(g, OpKind::kRelu, {h}, {}, "act_copy")[0];
  Value* out = testing::Add(g, OpKind::kAdd, {g.outputs()[0], g.outputs()[0]})[0];
  testing::Add(g, OpKind::kExp, {r});
  REQUIRE(g.SetOutputs({out}).ok());
  absl::StatusOr<bool> changed =
      RunPasses(g, {CommonSubexpressionElimination(), DeadCodeElimination()});
  REQUIRE(changed.ok());
  CHECK(*changed);
  CHECK(g.num_nodes() == 5);
  CHECK(ToString(g).find("act_copy") == std::string::npos);
}

TEST_CASE("RunPasses names the pass that failed or left an invalid graph") {
  Graph g = testing::Mlp();
  const Pass failing{"fails", [](Graph&) -> absl::StatusOr<bool> {
                       return absl::FailedPreconditionError("no can do");
                     }};
  CHECK(RunPasses(g, {DeadCodeElimination(), failing}).status().message() ==
        "pass 'fails': no can do");
  const Pass breaking{"swap_relu_input", [](Graph& graph) -> absl::StatusOr<bool> {
                        Node* relu = graph.nodes()[1];
                        TC_RETURN_IF_ERROR(relu->SetInput(0, graph.placeholders()[0]));
                        return true;
                      }};
  absl::Status s = RunPasses(g, {breaking, DeadCodeElimination()}).status();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message() ==
        "pass 'swap_relu_input' left an invalid graph: node `%1: f32[4,8] = relu(%x)  # act`: "
        "declared f32[4,8], but relu infers f32[4,3]");
}

}  // namespace
}  // namespace tc
