// The fuse-elementwise lowering pass as text in, text out: each fusion group
// becomes one `fused` node whose body is the group, the lowered graph prints
// and parses back, the interpreter runs it to the unfused graph's bits, and
// a program compiles a graph that already holds fused nodes.
#include "codegen/fuse_elementwise.h"

#include <string>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/fused_ops.h"
#include "codegen/interpreter.h"
#include "codegen/program.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "tests/graph/graphs.h"
#include "tests/test_util.h"

namespace tc::codegen {
namespace {

using testing::ParseOk;

// Runs the pass on `text`: the printed result and whether it changed.
std::pair<std::string, bool> Fuse(const std::string& text) {
  return testing::RunOnText(text, {FuseElementwise()});
}

const char kBiasReluSum[] =
    "graph(%x: f32[4,3], %w: f32[4,3], %b: f32[3]) {\n"
    "  %0: f32[4,3] = mul(%x, %w)  # fc\n"
    "  %1: f32[4,3] = add(%0, %b)  # fc\n"
    "  %2: f32[4,3] = relu(%1)  # act\n"
    "  %3: f32[4] = sum(%1) {dims=[1], keepdim=false}\n"
    "  %4: f32[4] = neg(%3)\n"
    "  return (%2, %4)\n"
    "}\n";

TEST_CASE("a group becomes one fused node at its last node; what is read after it is returned") {
  const auto [text, changed] = Fuse(kBiasReluSum);
  CHECK(changed);
  // The sum reads %1 after the group: %1 is an output of the region. neg is
  // fusible but alone in its shape: it stays as it is.
  CHECK(text ==
        "graph(%x: f32[4,3], %w: f32[4,3], %b: f32[3]) {\n"
        "  %1: f32[4,3], %2: f32[4,3] = fused(%x, %w, %b) {  # act\n"
        "    graph(%x: f32[4,3], %w: f32[4,3], %b: f32[3]) {\n"
        "      %0: f32[4,3] = mul(%x, %w)  # fc\n"
        "      %1: f32[4,3] = add(%0, %b)  # fc\n"
        "      %2: f32[4,3] = relu(%1)  # act\n"
        "      return (%1, %2)\n"
        "    }\n"
        "  }\n"
        "  %3: f32[4] = sum(%1) {dims=[1], keepdim=false}\n"
        "  %4: f32[4] = neg(%3)\n"
        "  return (%2, %4)\n"
        "}\n");
}

TEST_CASE("a graph without two fusible nodes of one shape is left unchanged") {
  const std::string in =
      "graph(%a: f32[2,3], %b: f32[3,4]) {\n"
      "  %0: f32[2,4] = matmul(%a, %b)\n"
      "  %1: f32[2,4] = relu(%0)\n"
      "  %2: f32[2,4] = softmax(%1) {dim=1}\n"
      "  return (%2)\n"
      "}\n";
  const auto [text, changed] = Fuse(in);
  CHECK(!changed);
  CHECK(text == in);
}

TEST_CASE("nodes between groups keep their order; each group stands where it ends") {
  // exp is read by the matmul, which the group's tanh reads: exp stays out.
  const auto [text, changed] = Fuse(
      "graph(%x: f32[2,2], %y: f32[2,2]) {\n"
      "  %0: f32[2,2] = exp(%x)\n"
      "  %1: f32[2,2] = matmul(%0, %y)\n"
      "  %2: f32[2,2] = neg(%0)\n"
      "  %3: f32[2,2] = tanh(%1)\n"
      "  %4: f32[2,2] = mul(%3, %2)\n"
      "  return (%4)\n"
      "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[2,2], %y: f32[2,2]) {\n"
        "  %0: f32[2,2] = exp(%x)\n"
        "  %1: f32[2,2] = matmul(%0, %y)\n"
        "  %4: f32[2,2] = fused(%0, %1) {\n"
        "    graph(%0: f32[2,2], %1: f32[2,2]) {\n"
        "      %2: f32[2,2] = neg(%0)\n"
        "      %3: f32[2,2] = tanh(%1)\n"
        "      %4: f32[2,2] = mul(%3, %2)\n"
        "      return (%4)\n"
        "    }\n"
        "  }\n"
        "  return (%4)\n"
        "}\n");
}

TEST_CASE("a graph that already holds a fused node keeps it and fuses what else it can") {
  const auto [text, changed] = Fuse(
      "graph(%a: f32[3,5], %b: f32[3,5], %c: f32[3,5]) {\n"
      "  %1: f32[3,5] = fused(%a, %b) {\n"
      "    graph(%a: f32[3,5], %b: f32[3,5]) {\n"
      "      %0: f32[3,5] = add(%a, %b)\n"
      "      %1: f32[3,5] = relu(%0)\n"
      "      return (%1)\n"
      "    }\n"
      "  }\n"
      "  %2: f32[3,5] = gelu(%1) {approximate=\"tanh\"}\n"
      "  %3: f32[3,5] = add(%2, %c)\n"
      "  return (%3)\n"
      "}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%a: f32[3,5], %b: f32[3,5], %c: f32[3,5]) {\n"
        "  %1: f32[3,5] = fused(%a, %b) {\n"
        "    graph(%a: f32[3,5], %b: f32[3,5]) {\n"
        "      %0: f32[3,5] = add(%a, %b)\n"
        "      %1: f32[3,5] = relu(%0)\n"
        "      return (%1)\n"
        "    }\n"
        "  }\n"
        "  %3: f32[3,5] = fused(%1, %c) {\n"
        "    graph(%1: f32[3,5], %c: f32[3,5]) {\n"
        "      %2: f32[3,5] = gelu(%1) {approximate=\"tanh\"}\n"
        "      %3: f32[3,5] = add(%2, %c)\n"
        "      return (%3)\n"
        "    }\n"
        "  }\n"
        "  return (%3)\n"
        "}\n");
}

TEST_CASE("a lowered graph prints and parses back to the same text, and verifies") {
  Graph g = ParseOk(kBiasReluSum);
  REQUIRE(RunPasses(g, {FuseElementwise()}).ok());
  const std::string printed = ToString(g);
  const Graph parsed = ParseOk(printed);
  CHECK(ToString(parsed) == printed);
  CHECK(Verify(parsed).ok());
  CHECK(ToString(parsed.Clone()) == printed);
}

TEST_CASE("the interpreter runs a fused node's body to the unfused graph's bits") {
  const Graph plain = ParseOk(kBiasReluSum);
  Graph lowered = plain.Clone();
  REQUIRE(RunPasses(lowered, {FuseElementwise()}).value());
  const std::vector<Tensor> args = {testing::Random({4, 3}, DType::kF32, 1),
                                    testing::Random({4, 3}, DType::kF32, 2),
                                    testing::Random({3}, DType::kF32, 3)};
  const std::vector<Tensor> want = Interpret(plain).value()(args).value();
  const std::vector<Tensor> got = Interpret(lowered).value()(args).value();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE_TENSORS_CLOSE(got[i], want[i], 0, 0);
  // A program takes an already lowered graph too.
  const std::vector<Tensor> compiled = Program::Compile(lowered).value()->Run(args).value();
  for (size_t i = 0; i < got.size(); ++i) REQUIRE_TENSORS_CLOSE(compiled[i], want[i], 1e-6, 1e-6);
}

TEST_CASE("a cast to bf16 joins the pass that computes its f32 value, which writes both") {
  // Mixed precision's operand casts (codegen/autocast.h): the pass writes
  // the product's bf16 operand as it writes the f32 value the rest reads.
  const char kMulCast[] =
      "graph(%x: f32[4,3], %w: f32[4,3], %h: bf16[3]) {\n"
      "  %0: f32[4,3] = mul(%x, %w)\n"
      "  %1: bf16[4,3] = cast(%0) {dtype=bf16}\n"
      "  %2: f32[3] = cast(%h) {dtype=f32}\n"
      "  %3: f32[4,3] = add(%0, %2)\n"
      "  return (%1, %3)\n"
      "}\n";
  const auto [text, changed] = Fuse(kMulCast);
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[4,3], %w: f32[4,3], %h: bf16[3]) {\n"
        "  %2: f32[3] = cast(%h) {dtype=f32}\n"
        "  %1: bf16[4,3], %3: f32[4,3] = fused(%x, %w, %2) {\n"
        "    graph(%x: f32[4,3], %w: f32[4,3], %2: f32[3]) {\n"
        "      %0: f32[4,3] = mul(%x, %w)\n"
        "      %1: bf16[4,3] = cast(%0) {dtype=bf16}\n"
        "      %3: f32[4,3] = add(%0, %2)\n"
        "      return (%1, %3)\n"
        "    }\n"
        "  }\n"
        "  return (%1, %3)\n"
        "}\n");
  CHECK(Verify(ParseOk(text)).ok());
}

TEST_CASE("one node with only its cast is no group: it may become a product's epilogue") {
  const char kReluCast[] =
      "graph(%x: f32[4,3], %w: f32[3,3]) {\n"
      "  %0: f32[4,3] = matmul(%x, %w)\n"
      "  %1: f32[4,3] = relu(%0)\n"
      "  %2: bf16[4,3] = cast(%1) {dtype=bf16}\n"
      "  return (%1, %2)\n"
      "}\n";
  const auto [text, changed] = Fuse(kReluCast);
  CHECK_FALSE(changed);
  CHECK(text == kReluCast);
}

TEST_CASE("the fused kernel evaluates exactly the ops the op table calls fusible") {
  for (OpKind op : AllOps()) {
    INFO(OpName(op));
    CHECK(HasFusedEvaluation(op) == GetOpDef(op).Has(kTraitFusible));
  }
}

}  // namespace
}  // namespace tc::codegen
