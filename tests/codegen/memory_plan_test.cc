// The memory plan (codegen/memory_plan.h), its byte arithmetic worked by hand:
// lifetimes run through views to the last reader, buffers whose lifetimes do
// not overlap share the arena, sizes round up to 64 bytes, and graph outputs
// (and what they are views of) stay outside it.
#include "codegen/memory_plan.h"

#include "catch2/catch.hpp"
#include "codegen/program.h"
#include "graph/ir.h"

namespace tc::codegen {
namespace {

TEST_CASE("buffers live at the same time never share bytes; the others do") {
  // a: 100 bytes (128 aligned), live over steps 0-1; b: 64, over 1-2; c: 200
  // (256), over 2-3. Largest first: c at 0; a at 0 (never live with c); b is
  // live with both, so it goes past the end of c: 256. Arena 256 + 64 = 320,
  // against 128 + 64 + 256 = 448 side by side.
  const std::vector<BufferLifetime> lives = {
      {/*value=*/1, /*bytes=*/100, /*first=*/0, /*last=*/1},
      {/*value=*/2, /*bytes=*/64, /*first=*/1, /*last=*/2},
      {/*value=*/3, /*bytes=*/200, /*first=*/2, /*last=*/3},
  };
  const MemoryPlan plan = PlanMemory(lives);
  REQUIRE(plan.offsets == std::vector<int64_t>{0, 256, 0});
  REQUIRE(plan.arena_bytes == 320);
  REQUIRE(plan.unshared_bytes == 448);
  REQUIRE(plan.outside_bytes == 0);
  REQUIRE(plan.ToString(lives) ==
          "arena 320 bytes (448 unshared), outside 0 bytes\n"
          "#1 [0, 1] 128 bytes at 0\n"
          "#2 [1, 2] 64 bytes at 256\n"
          "#3 [2, 3] 256 bytes at 0\n");
}

TEST_CASE("a buffer fits the first gap between live ones that holds it") {
  // Live together at step 0: a (256) at 0, b (128) at 256, c (64) at 384.
  // d (128) starts at step 1, after b died: it takes b's gap at 256.
  const std::vector<BufferLifetime> lives = {
      {0, 256, 0, 1}, {1, 128, 0, 0}, {2, 64, 0, 1}, {3, 128, 1, 1}};
  const MemoryPlan plan = PlanMemory(lives);
  REQUIRE(plan.offsets == std::vector<int64_t>{0, 256, 384, 256});
  REQUIRE(plan.arena_bytes == 448);
}

TEST_CASE("lifetimes run through views; outputs and their bases stay outside the arena") {
  // Values: 0 an argument; step 0 writes 1 from 0; step 1 makes 2, a view of
  // 1; step 2 reads 2 and writes 3; step 3 writes 4 and 5, a view of 4, is
  // the graph's output. 1 lives until its view's last reader, step 2.
  const std::vector<int> roots = {0, 1, 1, 3, 4, 4};
  const std::vector<int64_t> bytes = {64, 96, 96, 64, 32, 32};
  const std::vector<int> r0 = {0}, w0 = {1}, r1 = {1}, w1 = {2}, r2 = {2}, w2 = {3}, r3 = {3},
                         w3 = {4, 5};
  const std::vector<StepAccess> steps = {{r0, w0}, {r1, w1}, {r2, w2}, {r3, w3}};
  const std::vector<int> planned = {1, 3, 4};
  const std::vector<BufferLifetime> lives =
      Lifetimes(steps, roots, bytes, planned, /*outputs=*/{5});
  REQUIRE(lives.size() == 3);
  CHECK(lives[0].value == 1);
  CHECK(lives[0].first == 0);
  CHECK(lives[0].last == 2);
  CHECK(!lives[0].outside_arena);
  CHECK(lives[1].value == 3);
  CHECK(lives[1].first == 2);
  CHECK(lives[1].last == 3);
  CHECK(lives[2].value == 4);
  CHECK(lives[2].outside_arena);
  // 1 (96 -> 128 bytes) and 3 (64) are live together at step 2.
  const MemoryPlan plan = PlanMemory(lives);
  REQUIRE(plan.offsets == std::vector<int64_t>{0, 128, -1});
  REQUIRE(plan.arena_bytes == 192);
  REQUIRE(plan.outside_bytes == 64);
}

TEST_CASE("a value no step writes has no buffer") {
  const std::vector<int> roots = {0, 1};
  const std::vector<int64_t> bytes = {64, 64};
  const std::vector<int> r0 = {0};
  const std::vector<StepAccess> steps = {{r0, {}}};
  REQUIRE(Lifetimes(steps, roots, bytes, /*planned=*/{1}, /*outputs=*/{}).empty());
  REQUIRE(PlanMemory({}).arena_bytes == 0);
}

TEST_CASE("a chain of matmuls reuses the buffers of its dead intermediates") {
  // x [8,8] f32: 256 bytes a value. a = x x, b = a a, c = b b, d = c c (the
  // output). a lives over steps 0-1, b over 1-2, c over 2-3: a and c share
  // offset 0, b takes 256. Arena 512 bytes, against 768 unshared; d outside.
  Graph g;
  Value* v = g.AddPlaceholder("x", {DType::kF32, {8, 8}});
  for (int i = 0; i < 4; ++i) v = g.AddNode(OpKind::kMatmul, {v, v}).value()[0];
  REQUIRE(g.SetOutputs({v}).ok());
  const std::shared_ptr<Program> program = Program::Compile(g).value();
  REQUIRE(program->arena_bytes() == 512);
  REQUIRE(program->unshared_bytes() == 768);
}

}  // namespace
}  // namespace tc::codegen
