// Step profiles (codegen/step_profile.h): what a program run under one
// records, by step name and group, and nothing outside one.
#include "codegen/step_profile.h"

#include "catch2/catch.hpp"
#include "codegen/program.h"
#include "graph/parser.h"
#include "runtime/ops.h"

namespace tc::codegen {
namespace {

// A linear whose relu and gelu become its epilogue, a softmax, a sum and a view.
constexpr char kGraph[] =
    "graph(%x: f32[4,8], %w: f32[6,8], %b: f32[6]) {\n"
    "  %0: f32[4,6] = linear(%x, %w, %b)\n"
    "  %1: f32[4,6] = relu(%0)\n"
    "  %2: f32[4,6] = gelu(%1) {approximate=\"none\"}\n"
    "  %3: f32[4,6] = softmax(%2) {dim=1}\n"
    "  %4: f32[6,4] = permute(%3) {dims=[1,0]}\n"
    "  %5: f32[4] = sum(%2) {dims=[1], keepdim=false}\n"
    "  return (%4, %5)\n"
    "}\n";

TEST_CASE("a profile counts every step of the programs run under it, by name and group") {
  const Graph g = Parse(kGraph).value();
  std::shared_ptr<Program> program = Program::Compile(g).value();
  const std::vector<Tensor> args = {randn({4, 8}), randn({6, 8}), randn({6})};
  REQUIRE(program->Run(args).ok());
  StepProfile profile;
  {
    ScopedStepProfile on(profile);
    for (int i = 0; i < 3; ++i) REQUIRE(program->Run(args).ok());
    StepProfile inner;
    {
      ScopedStepProfile nested(inner);
      REQUIRE(program->Run(args).ok());
    }
    CHECK(inner.entries().at("linear+relu+gelu").calls == 1);
    CHECK(ActiveStepProfile() == &profile);
  }
  CHECK(ActiveStepProfile() == nullptr);
  REQUIRE(program->Run(args).ok());  // not counted
  const auto& e = profile.entries();
  REQUIRE(e.count("linear+relu+gelu") == 1);
  CHECK(e.at("linear+relu+gelu").group == StepGroup::kProducts);
  CHECK(e.at("linear+relu+gelu").calls == 3);
  REQUIRE(e.count("softmax") == 1);
  CHECK(e.at("softmax").group == StepGroup::kReductions);
  CHECK(e.at("softmax").calls == 3);
  int64_t steps = 0;
  for (const auto& [name, entry] : e) {
    INFO(name);
    CHECK(entry.calls % 3 == 0);
    CHECK(entry.seconds >= 0);
    steps += entry.calls;
  }
  CHECK(steps == 3 * 4);  // the product with its epilogue, softmax, sum, the view
  double sum = 0;
  for (int g = 0; g < kNumStepGroups; ++g) sum += profile.seconds(static_cast<StepGroup>(g));
  CHECK(sum == Approx(profile.total_seconds()));
}

TEST_CASE("step names and groups of lowered nodes") {
  const Graph g = Parse(kGraph).value();
  for (const Node* node : g.nodes()) {
    INFO(OpName(node->op()));
    CHECK(StepName(*node) == std::string(OpName(node->op())));
  }
  const std::vector<Node*> nodes = g.nodes();
  CHECK(StepGroupOf(*nodes[0]) == StepGroup::kProducts);
  CHECK(StepGroupOf(*nodes[2]) == StepGroup::kElementwise);
  CHECK(StepGroupOf(*nodes[4]) == StepGroup::kCopies);
  CHECK(StepGroupName(StepGroup::kAttention) == "attention");
}

}  // namespace
}  // namespace tc::codegen
