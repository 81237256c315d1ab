// The insert-all-reduce pass as text in, text out (buckets cut in the order
// the backward produces its gradients, each start right after its last
// gradient, the waits at the end, outputs as views of their buckets), its
// errors, and the collectives run by both compilers over a group that
// records what it is handed.
#include "codegen/insert_all_reduce.h"

#include <algorithm>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "codegen/interpreter.h"
#include "codegen/program.h"
#include "graph/printer.h"
#include "runtime/collectives.h"
#include "runtime/kernels/strided.h"
#include "runtime/ops.h"
#include "tests/graph/graphs.h"
#include "tests/test_util.h"

namespace tc::codegen {
namespace {

// Three gradients, made in the order %b, %c, %d; %a is returned as is.
constexpr char kBackward[] = R"(graph(%x: f32[4,3], %s: f32[]) {
  %a: f32[4,3] = mul(%x, %s)
  %b: f32[3] = sum(%a) {dims=[0], keepdim=false}
  %c: f32[4,3] = relu(%a)
  %d: f32[4,3] = tanh(%a)
  return (%d, %c, %b, %a)
}
)";

TEST_CASE("gradients go into buckets in the order they are made, each started after its last") {
  // The first bucket closes at 12 bytes (%b), the next at 96 (%c and %d).
  const auto [text, changed] = testing::RunOnText(
      kBackward,
      {InsertAllReduce(
          {.group = "world", .outputs = {0, 1, 2}, .bucket_bytes = 96, .first_bucket_bytes = 12})});
  CHECK(changed);
  CHECK(text == R"(graph(%x: f32[4,3], %s: f32[], %grad_weight: f64[]) {
  %a: f32[4,3] = mul(%x, %s)
  %b: f32[3] = sum(%a) {dims=[0], keepdim=false}
  %0: f32[3] = all_reduce_start(%b, %grad_weight) {group="world"}  # bucket 0
  %c: f32[4,3] = relu(%a)
  %d: f32[4,3] = tanh(%a)
  %1: f32[24] = all_reduce_start(%c, %d, %grad_weight) {group="world"}  # bucket 1
  %2: f32[3] = all_reduce_wait(%0) {group="world"}  # bucket 0
  %3: f32[24] = all_reduce_wait(%1) {group="world"}  # bucket 1
  %4: f32[12] = slice(%3) {dim=0, end=12, start=0, step=1}  # bucket 1
  %5: f32[4,3] = reshape(%4) {shape=[4,3]}  # bucket 1
  %6: f32[12] = slice(%3) {dim=0, end=24, start=12, step=1}  # bucket 1
  %7: f32[4,3] = reshape(%6) {shape=[4,3]}  # bucket 1
  return (%7, %5, %2, %a)
}
)");
}

TEST_CASE("one bucket when the gradients fit; none asked, nothing changes") {
  const auto [text, changed] =
      testing::RunOnText(kBackward, {InsertAllReduce({.group = "g", .outputs = {2, 1}})});
  CHECK(changed);
  CHECK(text == R"(graph(%x: f32[4,3], %s: f32[], %grad_weight: f64[]) {
  %a: f32[4,3] = mul(%x, %s)
  %b: f32[3] = sum(%a) {dims=[0], keepdim=false}
  %c: f32[4,3] = relu(%a)
  %0: f32[15] = all_reduce_start(%b, %c, %grad_weight) {group="g"}  # bucket 0
  %d: f32[4,3] = tanh(%a)
  %1: f32[15] = all_reduce_wait(%0) {group="g"}  # bucket 0
  %2: f32[3] = slice(%1) {dim=0, end=3, start=0, step=1}  # bucket 0
  %3: f32[12] = slice(%1) {dim=0, end=15, start=3, step=1}  # bucket 0
  %4: f32[4,3] = reshape(%3) {shape=[4,3]}  # bucket 0
  return (%d, %4, %2, %a)
}
)");
  const auto [same, unchanged] = testing::RunOnText(kBackward, {InsertAllReduce({})});
  CHECK(!unchanged);
  CHECK(same == kBackward);
}

TEST_CASE("outputs that cannot be summed in a bucket are errors that name them") {
  auto error = [](const std::string& text, std::vector<int> outputs) {
    Graph g = testing::ParseOk(text);
    return std::string(
        RunPasses(g, {InsertAllReduce({.outputs = std::move(outputs)})}).status().message());
  };
  CHECK(error(kBackward, {4}) ==
        "pass 'insert-all-reduce': insert-all-reduce: output 4 of a graph "
        "of 4");
  CHECK(error("graph(%i: i64[3]) {\n  return (%i)\n}\n", {0}) ==
        "pass 'insert-all-reduce': insert-all-reduce: output 0 (%i) is i64[3]; a bucket holds f32 "
        "or f64 tensors of static shapes");
  CHECK(error("graph(%x: f32[s0,3]) {\n  return (%x)\n}\n", {0}) ==
        "pass 'insert-all-reduce': insert-all-reduce: output 0 (%x) is f32[s0,3]; a bucket holds "
        "f32 or f64 tensors of static shapes");
}

// A group of two processes seen from one of them: the other rank's
// contribution is taken to equal this one's, so a sum doubles the bucket.
// It records the calls and checks that no bucket is waited on twice.
class DoublingGroup : public CollectiveGroup {
 public:
  absl::Status StartAllReduce(const Tensor& bucket) override {
    calls.push_back("start " + bucket.type().ToString());
    pending.push_back(bucket.raw_data());
    return absl::OkStatus();
  }
  absl::Status WaitAllReduce(const Tensor& bucket) override {
    auto it = std::find(pending.begin(), pending.end(), bucket.raw_data());
    if (it == pending.end()) return absl::FailedPreconditionError("no sum was started on it");
    pending.erase(it);
    calls.push_back("wait " + bucket.type().ToString());
    kernels::CopyStrided(mul(bucket, scalar(2.0, bucket.dtype())), bucket);
    return absl::OkStatus();
  }
  std::vector<std::string> calls;
  std::vector<const void*> pending;
};

TEST_CASE("both compilers run the buckets: weighted, summed in place, read back as views") {
  static DoublingGroup group;
  RegisterCollectiveGroup("doubling", &group);
  Graph g = testing::ParseOk(kBackward);
  const std::vector<Tensor> args = {testing::Random({4, 3}, DType::kF32, 1), scalar(1.5f)};
  const std::vector<Tensor> plain = Interpret(g).value()(args).value();
  REQUIRE(RunPasses(g, {InsertAllReduce({.group = "doubling",
                                         .outputs = {0, 1, 2},
                                         .bucket_bytes = 96,
                                         .first_bucket_bytes = 12})})
              .ok());
  const std::vector<Tensor> weighted = {args[0], args[1], scalar(0.25, DType::kF64)};
  for (const char* compiler : {"interpreter", "fusing"}) {
    INFO(compiler);
    group.calls.clear();
    const Executable exe =
        (std::string(compiler) == "fusing" ? CompileProgram(g) : Interpret(g)).value();
    const std::vector<Tensor> out = exe(weighted).value();
    CHECK(group.calls ==
          std::vector<std::string>{"start f32[3]", "start f32[24]", "wait f32[3]", "wait f32[24]"});
    CHECK(group.pending.empty());
    for (int i = 0; i < 3; ++i) REQUIRE_TENSORS_CLOSE(out[i], mul(plain[i], scalar(0.5f)), 0, 0);
    REQUIRE_TENSORS_CLOSE(out[3], plain[3], 0, 0);
    // %c and %d come out of one bucket's memory: no copy after the wait.
    if (std::string(compiler) == "fusing") CHECK(out[0].storage() == out[1].storage());
  }
}

TEST_CASE("a collective over a group nobody registered fails with the group's name") {
  Graph g = testing::ParseOk(kBackward);
  REQUIRE(RunPasses(g, {InsertAllReduce({.group = "nowhere", .outputs = {2}})}).ok());
  const std::vector<Tensor> args = {testing::Random({4, 3}, DType::kF32, 1), scalar(1.5f),
                                    scalar(1.0, DType::kF64)};
  for (const Executable& exe : {Interpret(g).value(), CompileProgram(g).value()}) {
    const absl::Status s = exe(args).status();
    CHECK(s.code() == absl::StatusCode::kNotFound);
    CHECK_THAT(std::string(s.message()),
               Catch::Contains("all_reduce_start: no process group named 'nowhere' (there are: ") &&
                   Catch::Contains("self"));
  }
}

TEST_CASE("a wait on anything but a start's own bucket runs apart, with a copy") {
  Graph g = testing::ParseOk(R"(graph(%x: f32[6], %w: f64[]) {
  %b: f32[6] = all_reduce_start(%x, %w) {group="self"}
  %s: f32[3] = slice(%b) {dim=0, end=6, start=3, step=1}
  %r: f32[3] = all_reduce_wait(%s) {group="self"}
  return (%r)
}
)");
  const Tensor x = testing::Random({6}, DType::kF32, 3);
  const std::vector<Tensor> out = CompileProgram(g).value()({x, scalar(2.0, DType::kF64)}).value();
  REQUIRE_TENSORS_CLOSE(out[0], mul(x.slice(0, 3, 6), scalar(2.0f)), 0, 0);
}

TEST_CASE("the self group's sum is the weighted bucket") {
  Graph g = testing::ParseOk(kBackward);
  const std::vector<Tensor> args = {testing::Random({4, 3}, DType::kF32, 2), scalar(-0.5f)};
  const std::vector<Tensor> plain = Interpret(g).value()(args).value();
  REQUIRE(RunPasses(g, {InsertAllReduce({.group = "self", .outputs = {0, 1, 2, 3}})}).ok());
  const std::vector<Tensor> out =
      CompileProgram(g).value()({args[0], args[1], scalar(2.0, DType::kF64)}).value();
  for (int i = 0; i < 4; ++i) REQUIRE_TENSORS_CLOSE(out[i], mul(plain[i], scalar(2.0f)), 0, 0);
}

TEST_CASE("lowering keeps a start where the pass put it, ahead of the work it overlaps") {
  Graph g = testing::ParseOk(R"(graph(%x: f32[8,4], %w: f32[4,4], %t: f32[8,4]) {
  %a: f32[4,4] = matmul(%w, %w)
  %b: f32[8,4] = relu(%t)
  %c: f32[8,4] = mul(%b, %x)
  %d: f32[8,4] = tanh(%c)
  return (%a, %d)
}
)");
  REQUIRE(
      RunPasses(g, {InsertAllReduce({.group = "self", .outputs = {0, 1}, .first_bucket_bytes = 1})})
          .ok());
  const std::string lowered = ToString(Program::Compile(g).value()->graph());
  INFO(lowered);
  const size_t start = lowered.find("all_reduce_start(%a");
  REQUIRE(start != std::string::npos);
  CHECK(start < lowered.find("fused"));
  CHECK(lowered.find("fused") < lowered.find("all_reduce_start(%d"));
}

}  // namespace
}  // namespace tc::codegen
