// Freezing an inference program: the split-constants pass as text in, two
// graphs out (what reads only constants moves into the prelude; random ops,
// expands and what reads an argument stay), and frozen compilers against
// unfrozen ones: the same results, f32 and bf16, weights read once when
// compiled, frozen operands packed once, and every error a caller can hit.
#include "codegen/freeze.h"

#include <algorithm>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/autocast.h"
#include "codegen/fusing_compiler.h"
#include "codegen/interpreter.h"
#include "graph/printer.h"
#include "runtime/kernels/primitive_cache.h"
#include "runtime/ops.h"
#include "tests/graph/graphs.h"
#include "tests/test_util.h"

namespace tc::codegen {
namespace {

// The split of `text` with placeholders flagged constant by `constant`,
// printed prelude then rest.
std::string Split(const std::string& text, absl::Span<const bool> constant) {
  const Graph g = testing::ParseOk(text);
  absl::StatusOr<ConstantSplit> split = SplitConstants(g, constant);
  INFO(split.status().ToString());
  REQUIRE(split.ok());
  return ToString(split->prelude) + ToString(split->rest);
}

TEST_CASE("what reads only constants moves into the prelude, read back as placeholders") {
  const std::string split = Split(
      "graph(%x: f32[2,4], %w: f32[8,4], %b: f32[8]) {\n"
      "  %wt: f32[4,8] = permute(%w) {dims=[1,0]}  # fc\n"
      "  %wb: bf16[4,8] = cast(%wt) {dtype=bf16}\n"
      "  %xb: bf16[2,4] = cast(%x) {dtype=bf16}\n"
      "  %y: f32[2,8] = matmul(%xb, %wb) {out_dtype=f32}\n"
      "  %two: f32[] = full() {dtype=f32, shape=[], value=2}\n"
      "  %b2: f32[8] = mul(%b, %two)\n"
      "  %z: f32[2,8] = add(%y, %b2)\n"
      "  return (%z)\n"
      "}\n",
      {false, true, true});
  CHECK(split ==
        "graph(%w: f32[8,4], %b: f32[8]) {\n"
        "  %wt: f32[4,8] = permute(%w) {dims=[1,0]}  # fc\n"
        "  %wb: bf16[4,8] = cast(%wt) {dtype=bf16}\n"
        "  %two: f32[] = full() {dtype=f32, shape=[], value=2}\n"
        "  %b2: f32[8] = mul(%b, %two)\n"
        "  return (%wb, %b2)\n"
        "}\n"
        "graph(%x: f32[2,4], %w: f32[8,4], %b: f32[8], %frozen: bf16[4,8], %frozen_1: f32[8]) {\n"
        "  %xb: bf16[2,4] = cast(%x) {dtype=bf16}\n"
        "  %y: f32[2,8] = matmul(%xb, %frozen) {out_dtype=f32}\n"
        "  %z: f32[2,8] = add(%y, %frozen_1)\n"
        "  return (%z)\n"
        "}\n");
}

TEST_CASE("random ops, expands and what reads an argument stay; outputs are read back") {
  const std::string split = Split(
      "graph(%x: f32[4], %w: f32[4], %seed: i64[], %offset: i64[]) {\n"
      "  %n: f32[4] = neg(%w)\n"
      "  %d: f32[4] = dropout(%w, %seed, %offset) {p=0.5}\n"
      "  %one: f32[] = full() {dtype=f32, shape=[], value=1}\n"
      "  %e: f32[4] = expand(%one) {shape=[4]}\n"
      "  %s: f32[4] = add(%x, %e)\n"
      "  %t: f32[4] = mul(%s, %n)\n"
      "  return (%t, %d, %n)\n"
      "}\n",
      {false, true, false, false});
  CHECK(split ==
        "graph(%w: f32[4]) {\n"
        "  %n: f32[4] = neg(%w)\n"
        "  return (%n)\n"
        "}\n"
        "graph(%x: f32[4], %w: f32[4], %seed: i64[], %offset: i64[], %frozen: f32[4]) {\n"
        "  %d: f32[4] = dropout(%w, %seed, %offset) {p=0.5}\n"
        "  %one: f32[] = full() {dtype=f32, shape=[], value=1}\n"
        "  %e: f32[4] = expand(%one) {shape=[4]}\n"
        "  %s: f32[4] = add(%x, %e)\n"
        "  %t: f32[4] = mul(%s, %frozen)\n"
        "  return (%t, %d, %frozen)\n"
        "}\n");
}

TEST_CASE("without constants the rest is the graph and the prelude empty") {
  const std::string in =
      "graph(%x: f32[3]) {\n"
      "  %0: f32[3] = relu(%x)\n"
      "  return (%0)\n"
      "}\n";
  CHECK(Split(in, {false}) == "graph() {\n  return ()\n}\n" + in);
}

TEST_CASE("split-constants wants one flag per placeholder") {
  const Graph g = testing::ParseOk("graph(%x: f32[3]) {\n  return (%x)\n}\n");
  const bool flags[] = {true, false};
  CHECK(SplitConstants(g, flags).status().message() ==
        "split-constants: expected 1 flags (one per placeholder), got 2");
}

// linear -> relu -> conv2d over x [2,3,6,6]: weights w1 [3,3,3,3] and b1
// [3], then a linear over the flattened maps.
Graph ConvLinear() {
  return testing::ParseOk(
      "graph(%x: f32[2,3,6,6], %w1: f32[4,3,3,3], %b1: f32[4], %w2: f32[5,144], %b2: f32[5]) {\n"
      "  %c: f32[2,4,6,6] = conv2d(%x, %w1, %b1) {dilation=[1,1], groups=1, padding=[1,1], "
      "stride=[1,1]}\n"
      "  %r: f32[2,4,6,6] = relu(%c)\n"
      "  %f: f32[2,144] = reshape(%r) {shape=[2,144]}\n"
      "  %y: f32[2,5] = linear(%f, %w2, %b2)\n"
      "  return (%y)\n"
      "}\n");
}

std::vector<Tensor> RandomArgs(const Graph& g, uint64_t seed) {
  std::vector<Tensor> args;
  for (const Value* p : g.placeholders()) {
    args.push_back(
        mul(testing::Random(p->type().shape, DType::kF32, seed++), scalar(0.3, DType::kF32)));
  }
  return args;
}

// The weights of `args`: all but the first, the input.
std::vector<Tensor> Weights(const std::vector<Tensor>& args) {
  std::vector<Tensor> constants = args;
  constants[0] = Tensor();
  return constants;
}

TEST_CASE("a frozen program gives the unfrozen one's results, f32 and bf16") {
  const Graph g = ConvLinear();
  const std::vector<Tensor> args = RandomArgs(g, 40);
  for (Precision precision : {Precision::kF32, Precision::kBF16}) {
    INFO(PrecisionName(precision));
    const Compiler plain = WithPrecision(fusing(), precision);
    const Executable unfrozen = plain(g).value();
    const Executable frozen = Frozen(plain, Weights(args))(g).value();
    const Tensor want = unfrozen(args).value()[0];
    // The weights a frozen program was given are what it reads: the
    // arguments at their places are not.
    std::vector<Tensor> only_x = {args[0], Tensor(), Tensor(), Tensor(), Tensor()};
    const Tensor got = frozen(only_x).value()[0];
    // Packed and plain weights may sum in other orders.
    REQUIRE_TENSORS_CLOSE(got, want, 1e-5, 1e-5);
    CHECK(!got.is_frozen());
  }
}

TEST_CASE("a frozen program keeps the weights it was given, and packs them once") {
  const Graph g = ConvLinear();
  std::vector<Tensor> args = RandomArgs(g, 50);
  const Tensor want = fusing()(g).value()(args).value()[0];
  const Executable frozen = Frozen(fusing(), Weights(args))(g).value();
  const int64_t packs = kernels::OneDnnPacks();
  REQUIRE_TENSORS_CLOSE(frozen(args).value()[0], want, 1e-5, 1e-5);
  const int64_t first_run = kernels::OneDnnPacks() - packs;
  CHECK(first_run <= 2);  // the conv's and the linear's weights, where oneDNN reorders them
  // Writes to the caller's weights after compiling are not seen.
  for (const Tensor& w : {args[1], args[3]}) std::fill_n(w.data<float>(), w.numel(), 0.0f);
  REQUIRE_TENSORS_CLOSE(frozen(args).value()[0], want, 1e-5, 1e-5);
  CHECK(kernels::OneDnnPacks() - packs == first_run);
}

TEST_CASE("an output that is a constant, or a view of one, is the caller's own copy") {
  const Graph g = testing::ParseOk(
      "graph(%x: f32[2], %w: f32[2,3]) {\n"
      "  %t: f32[3,2] = permute(%w) {dims=[1,0]}\n"
      "  %y: f32[2] = add(%x, %x)\n"
      "  return (%y, %w, %t)\n"
      "}\n");
  const Tensor w = testing::Random({2, 3}, DType::kF32, 7);
  const std::vector<Tensor> out = Frozen(interpreter(), {Tensor(), w})(g)
                                      .value()({from_vector<float>({1, 2}, {2}), Tensor()})
                                      .value();
  REQUIRE_TENSORS_CLOSE(out[1], w, 0, 0);
  REQUIRE_TENSORS_CLOSE(out[2], w.transpose(0, 1), 0, 0);
  for (const Tensor& t : out) CHECK(!t.is_frozen());
  CHECK(!out[1].storage()->frozen());
  CHECK(out[1].raw_data() != w.raw_data());
}

TEST_CASE("freeze errors name the placeholder, the type and the counts") {
  const Graph g = ConvLinear();
  const std::vector<Tensor> args = RandomArgs(g, 60);
  CHECK(Frozen(fusing(), {Tensor(), args[1]})(g).status().message() ==
        "freeze: expected one constant (or none) per placeholder, 5, got 2");
  std::vector<Tensor> wrong = Weights(args);
  wrong[3] = zeros({5, 143});
  CHECK(Frozen(fusing(), wrong)(g).status().message() ==
        "freeze: placeholder w2 is f32[5,144], its constant f32[5,143]");
  wrong[3] = zeros({5, 144}, DType::kF64);
  CHECK(Frozen(fusing(), wrong)(g).status().message() ==
        "freeze: placeholder w2 is f32[5,144], its constant f64[5,144]");
  // A run still checks its argument count.
  const Executable frozen = Frozen(fusing(), Weights(args))(g).value();
  CHECK(frozen({args[0]}).status().message() == "expected 5 arguments, got 1");
}

}  // namespace
}  // namespace tc::codegen
