// Plans per size (codegen/per_size.h): a symbolic graph planned once per
// size, kept least recently used first in a bounded cache whose hits,
// misses and evictions it reports; results equal the static graph's; a
// call that fits no size, and a graph whose sizes cannot be read from its
// arguments, are errors.
#include "codegen/per_size.h"

#include <string>

#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "codegen/interpreter.h"
#include "graph/parser.h"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc::codegen {
namespace {

// relu(x) @ w summed over rows, for any number of rows s0.
constexpr char kRows[] =
    "graph(%x: f32[s0,3], %w: f32[3,2]) {\n"
    "  %0: f32[s0,3] = relu(%x)\n"
    "  %1: f32[s0,2] = matmul(%0, %w)\n"
    "  %2: f32[2] = sum(%1) {dims=[0], keepdim=false}\n"
    "  %3: f32[] = size_scalar() {dtype=f32, size=s0}\n"
    "  %4: f32[2] = div(%2, %3)\n"
    "  return (%1, %4)\n"
    "}\n";

TEST_CASE("each size is planned once, kept least recently used first, and runs as eager does") {
  const Graph g = Parse(kRows).value();
  for (const Compiler& inner : {fusing(), interpreter()}) {
    Executable exe = PerSize(inner, {.capacity = 2})(g).value();
    // Planned at compile time: the symbol's hint (a parsed symbol's is 1).
    CHECK(exe.plan_cache().plans == 1);
    const Tensor w = testing::Random({3, 2}, DType::kF32, 1);
    for (int64_t rows : {4, 7, 4, 9, 1, 7}) {
      INFO(rows);
      const Tensor x = testing::Random({rows, 3}, DType::kF32, rows);
      const std::vector<Tensor> out = exe({x, w}).value();
      const Tensor want = matmul(relu(x), w);
      REQUIRE(testing::CompareTensors(out[0], want, 1e-6, 1e-6).empty());
      REQUIRE(testing::CompareTensors(out[1], mean(want, {0}), 1e-6, 1e-6).empty());
    }
    const PlanCacheStats stats = exe.plan_cache();
    // 4 misses; 7 misses, evicting the hint's plan (1); 4 hits; 9 misses,
    // evicting 7; 1 misses, evicting 4; 7 misses, evicting 9.
    CHECK(stats.hits == 1);
    CHECK(stats.misses == 5);
    CHECK(stats.evictions == 4);
    CHECK(stats.plans == 2);
    CHECK(stats.plan_seconds > 0);
  }
}

TEST_CASE("the plan dropped is the least recently used, not the first made") {
  Executable exe = PerSize(fusing(), {.capacity = 2})(Parse(kRows).value()).value();
  const Tensor w = testing::Random({3, 2}, DType::kF32, 1);
  for (int64_t rows : {4, 7, 4, 9, 4}) REQUIRE(exe({zeros({rows, 3}), w}).ok());
  // [4, hint]; 7 evicts the hint's: [7, 4]; 4 hits: [4, 7]; 9 evicts 7,
  // the least recently used: [9, 4]; 4 hits. First-made-first-dropped would
  // have evicted 4 for 9 and missed the last 4.
  CHECK(exe.plan_cache().hits == 2);
  CHECK(exe.plan_cache().misses == 3);
  CHECK(exe.plan_cache().evictions == 2);
}

TEST_CASE("a call that fits no size names the argument and dim") {
  Executable exe = PerSize(fusing())(Parse(kRows).value()).value();
  const absl::StatusOr<std::vector<Tensor>> out = exe({zeros({4, 3}), zeros({4, 2})});
  REQUIRE_FALSE(out.ok());
  CHECK(std::string(out.status().message()) == "argument 1 (%w) dim 0 is 4, expected 3");
  CHECK(exe.plan_cache().misses == 0);
}

TEST_CASE("a symbol no placeholder has as a whole dim cannot be planned") {
  const Graph g = Parse(
                      "graph(%x: f32[2*s0]) {\n"
                      "  %0: f32[2*s0] = relu(%x)\n"
                      "  return (%0)\n"
                      "}\n")
                      .value();
  absl::StatusOr<Executable> exe = PerSize(fusing())(g);
  REQUIRE_FALSE(exe.ok());
  CHECK(std::string(exe.status().message()) ==
        "the graph's dims mention s0, but no placeholder has it as a whole dim: its size cannot "
        "be read from the arguments");
}

TEST_CASE("a static graph goes to the inner compiler as it is") {
  const Graph g = Parse(
                      "graph(%x: f32[4]) {\n"
                      "  %0: f32[4] = relu(%x)\n"
                      "  return (%0)\n"
                      "}\n")
                      .value();
  Executable exe = PerSize(fusing())(g).value();
  CHECK(exe.plan_cache().plans == 0);
  CHECK(exe({from_vector<float>({-1, 2, -3, 4}, {4})}).value()[0].to_vector<float>() ==
        std::vector<float>{0, 2, 0, 4});
}

}  // namespace
}  // namespace tc::codegen
