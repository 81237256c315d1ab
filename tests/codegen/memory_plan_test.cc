// The memory plan (codegen/memory_plan.h), its byte arithmetic worked by hand:
// lifetimes run through views to the last reader, buffers whose lifetimes do
// not overlap share the arena, sizes round up to 64 bytes, a fused pass
// writes over an operand that dies there, graph outputs (and what they are
// views of) stay outside the arena, and the values saved for a backward
// share one region.
#include "codegen/memory_plan.h"

#include "catch2/catch.hpp"
#include "codegen/interpreter.h"
#include "codegen/program.h"
#include "graph/ir.h"
#include "runtime/ops.h"
#include "runtime/random.h"

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
          "arena 320 bytes (448 unshared), saved 0 bytes, outside 0 bytes\n"
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
  const Buffers buffers = AssignBuffers(steps, roots, bytes, planned, /*outputs=*/{5});
  CHECK(buffers.roots == roots);
  const std::vector<BufferLifetime>& lives = buffers.lifetimes;
  REQUIRE(lives.size() == 3);
  CHECK(lives[0].value == 1);
  CHECK(lives[0].first == 0);
  CHECK(lives[0].last == 2);
  CHECK(lives[0].place == BufferPlace::kArena);
  CHECK(lives[1].value == 3);
  CHECK(lives[1].first == 2);
  CHECK(lives[1].last == 3);
  CHECK(lives[2].value == 4);
  CHECK(lives[2].place == BufferPlace::kOutside);
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
  REQUIRE(AssignBuffers(steps, roots, bytes, /*planned=*/{1}, /*outputs=*/{}).lifetimes.empty());
  REQUIRE(PlanMemory({}).arena_bytes == 0);
}

TEST_CASE("a result written in place lives in its operand's buffer, which lives on") {
  // Values 1, 2, 3 of 256 bytes: step 0 writes 1; step 1 reads 1 and writes
  // 2, in place of 1; step 2 reads 2 and writes 3, the output. 1 dies at step
  // 1, so 2 takes its buffer: one buffer over steps 0-2, 256 bytes, where
  // buffers of their own would take 512 (1 over 0-1, 2 over 1-2).
  const std::vector<int> roots = {0, 1, 2, 3};
  const std::vector<int64_t> bytes = {256, 256, 256, 256};
  const std::vector<int> r0 = {0}, w0 = {1}, r1 = {1}, w1 = {2}, r2 = {2}, w2 = {3};
  const std::vector<std::pair<int, int>> over = {{1, 2}};
  const std::vector<StepAccess> steps = {{r0, w0}, {r1, w1, over}, {r2, w2}};
  const Buffers buffers = AssignBuffers(steps, roots, bytes, {1, 2, 3}, /*outputs=*/{3});
  CHECK(buffers.roots == std::vector<int>{0, 1, 1, 3});
  const MemoryPlan plan = PlanMemory(buffers.lifetimes);
  CHECK(plan.ToString(buffers.lifetimes) ==
        "arena 256 bytes (256 unshared), saved 0 bytes, outside 256 bytes\n"
        "#1 [0, 2] 256 bytes at 0\n"
        "#3 [2, 2] 256 bytes outside\n");
}

TEST_CASE("no write in place over a buffer read later, of another size, an output's, or taken") {
  const std::vector<int> r0 = {0}, w0 = {1}, r1 = {1}, w1 = {2, 3}, r2 = {1, 2, 3}, w2 = {4};
  const std::vector<std::pair<int, int>> over = {{1, 2}, {1, 3}};
  auto roots_after = [&](std::vector<int64_t> bytes, std::vector<StepAccess> steps,
                         std::vector<int> outputs) {
    bytes.resize(6, 64);
    return AssignBuffers(steps, {0, 1, 2, 3, 4, 5}, bytes, {1, 2, 3, 4}, outputs).roots;
  };
  const std::vector<int64_t> equal = {64, 64, 64, 64, 64, 64};
  const std::vector<int> unchanged = {0, 1, 2, 3, 4, 5};
  // 1 is read again at step 2.
  CHECK(roots_after(equal, {{r0, w0}, {r1, w1, over}, {r2, w2}}, {4}) == unchanged);
  const std::vector<int> r2_late = {2, 3};
  // 2 is larger than 1 (3 takes it instead).
  CHECK(roots_after({64, 64, 128, 64, 64}, {{r0, w0}, {r1, w1, over}, {r2_late, w2}}, {4}) ==
        std::vector<int>{0, 1, 2, 1, 4, 5});
  // 1 is an output.
  CHECK(roots_after(equal, {{r0, w0}, {r1, w1, over}, {r2_late, w2}}, {4, 1}) == unchanged);
  // Step 1 also reads 5, a view of 1: it reads the buffer twice.
  const std::vector<int> r1_twice = {1, 5};
  CHECK(AssignBuffers({{r0, w0}, {r1_twice, w1, over}, {r2_late, w2}}, {0, 1, 2, 3, 4, 1}, equal,
                      {1, 2, 3, 4}, {4})
            .roots == std::vector<int>{0, 1, 2, 3, 4, 1});
  // 2 takes it first: 3, of the same step, keeps its own.
  CHECK(roots_after(equal, {{r0, w0}, {r1, w1, over}, {r2_late, w2}}, {4}) ==
        std::vector<int>{0, 1, 1, 3, 4, 5});
}

TEST_CASE("values saved for a backward share one region; other outputs own their storage") {
  // Outputs 1 (100 bytes), 2 (64), 3 (200), with saved values from output 1
  // on: 1 outside; 2 and 3 in the saved region, back to back at 0 and 64
  // (sizes aligned: 64 + 256 = 320). An output both returned before
  // `saved_from` and saved, 1 again, stays outside.
  const std::vector<int> roots = {0, 1, 2, 3};
  const std::vector<int64_t> bytes = {64, 100, 64, 200};
  const std::vector<int> r0 = {0}, w0 = {1, 2, 3};
  const std::vector<StepAccess> steps = {{r0, w0}};
  const Buffers buffers =
      AssignBuffers(steps, roots, bytes, {1, 2, 3}, /*outputs=*/{1, 2, 3, 1}, /*saved_from=*/1);
  const MemoryPlan plan = PlanMemory(buffers.lifetimes);
  CHECK(plan.ToString(buffers.lifetimes) ==
        "arena 0 bytes (0 unshared), saved 320 bytes, outside 128 bytes\n"
        "#1 [0, 0] 128 bytes outside\n"
        "#2 [0, 0] 64 bytes saved at 0\n"
        "#3 [0, 0] 256 bytes saved at 64\n");
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

TEST_CASE("a fused pass writes its result over the matmul result it reads last") {
  // m = x x (256 bytes), e = -m in place of m (neg is no matmul post-op),
  // n = e e (the output): one buffer for m and e, 256 bytes, against 512.
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {8, 8}});
  Value* m = g.AddNode(OpKind::kMatmul, {x, x}).value()[0];
  Value* e = g.AddNode(OpKind::kNeg, {m}).value()[0];
  REQUIRE(g.SetOutputs({g.AddNode(OpKind::kMatmul, {e, e}).value()[0]}).ok());
  const std::shared_ptr<Program> program = Program::Compile(g).value();
  REQUIRE(program->arena_bytes() == 256);
  REQUIRE(program->unshared_bytes() == 256);
  Generator gen(3);
  const std::vector<Tensor> args = {randn({8, 8}, DType::kF32, &gen)};
  const std::vector<float> got = program->Run(args).value()[0].to_vector<float>();
  const std::vector<float> want = Interpret(g).value()(args).value()[0].to_vector<float>();
  REQUIRE(got == want);
}

TEST_CASE("no fused pass writes over an operand it also reads through a view") {
  // y = m + m^T over 32x32 (four blocks): written over m, later blocks would
  // read the transposed elements that earlier blocks overwrote.
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {32, 32}});
  Value* m = g.AddNode(OpKind::kMatmul, {x, x}).value()[0];
  Value* t = g.AddNode(OpKind::kPermute, {m}, {{"dims", std::vector<int64_t>{1, 0}}}).value()[0];
  Value* y = g.AddNode(OpKind::kSub, {m, t}).value()[0];
  REQUIRE(g.SetOutputs({g.AddNode(OpKind::kMatmul, {y, y}).value()[0]}).ok());
  const std::shared_ptr<Program> program = Program::Compile(g).value();
  REQUIRE(program->arena_bytes() == 2 * 4096);  // m and y apart
  Generator gen(9);
  const std::vector<Tensor> args = {randn({32, 32}, DType::kF32, &gen)};
  const std::vector<float> got = program->Run(args).value()[0].to_vector<float>();
  const std::vector<float> want = Interpret(g).value()(args).value()[0].to_vector<float>();
  REQUIRE(got == want);
}

TEST_CASE("a program hands out the saved values in one storage, and a new one while held") {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {4, 4}});
  Value* a = g.AddNode(OpKind::kMatmul, {x, x}).value()[0];
  Value* b = g.AddNode(OpKind::kMatmul, {a, x}).value()[0];
  Value* c = g.AddNode(OpKind::kMatmul, {b, x}).value()[0];
  REQUIRE(g.SetOutputs({c, a, b}).ok());
  const std::shared_ptr<Program> program = Program::Compile(g, {.saved_outputs_from = 1}).value();
  Generator gen(5);
  const std::vector<Tensor> args = {randn({4, 4}, DType::kF32, &gen)};
  const std::vector<Tensor> want = Interpret(g).value()(args).value();
  std::vector<Tensor> first = program->Run(args).value();
  CHECK(first[1].storage() == first[2].storage());
  CHECK(first[0].storage() != first[1].storage());
  const std::vector<Tensor> second = program->Run(args).value();  // `first` still held
  CHECK(second[1].storage() != first[1].storage());
  for (int i = 0; i < 3; ++i) {
    CHECK(first[i].to_vector<float>() == want[i].to_vector<float>());
    CHECK(second[i].to_vector<float>() == want[i].to_vector<float>());
  }
}

}  // namespace
}  // namespace tc::codegen
