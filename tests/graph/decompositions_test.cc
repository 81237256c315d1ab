// Decompositions: each default rule computes what the op computes (f64, at
// 1e-12), on single-op graphs and on the traced models; user tables; and the
// errors of broken rules.
#include "graph/decompositions.h"

#include <cmath>

#include "catch2/catch.hpp"
#include "codegen/interpreter.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "runtime/ops.h"
#include "runtime/trace.h"
#include "tests/graph/models.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using T = Tree<Tensor>;
constexpr double kTol = 1e-12;

// Decomposes `g` with `table` and checks that the result computes what `g`
// computes on random f64 arguments, and that no op of `gone` is left.
Graph CheckDecomposition(const Graph& g, const DecompositionTable& table,
                         std::vector<OpKind> gone) {
  Graph d = g.Clone();
  absl::StatusOr<bool> changed = RunPasses(d, {Decompose(table)});
  INFO(changed.status().ToString());
  REQUIRE(changed.ok());
  INFO(ToString(d));
  for (const Node* n : d.nodes()) {
    CHECK(std::find(gone.begin(), gone.end(), n->op()) == gone.end());
  }
  std::vector<Tensor> args;
  uint64_t seed = 100;
  for (const Value* p : g.placeholders()) {
    args.push_back(testing::Random(p->type().shape, p->type().dtype, seed++));
  }
  std::vector<Tensor> want = testing::RunGraph(g, args), got = testing::RunGraph(d, args);
  REQUIRE(want.size() == got.size());
  for (size_t i = 0; i < want.size(); ++i) REQUIRE_TENSORS_CLOSE(got[i], want[i], kTol, kTol);
  return d;
}

Graph MustParse(const std::string& text) {
  absl::StatusOr<Graph> g = Parse(text);
  INFO(g.status().ToString());
  REQUIRE(g.ok());
  return *std::move(g);
}

const std::vector<OpKind> kDecomposed = {
    OpKind::kLinear,    OpKind::kSoftmax, OpKind::kLogSoftmax, OpKind::kLayerNorm,
    OpKind::kBatchNorm, OpKind::kVar,     OpKind::kMean};

TEST_CASE("each default rule on its own") {
  const char* graphs[] = {
      "graph(%x: f64[5,3], %w: f64[4,3], %b: f64[4]) {\n"
      "  %0: f64[5,4] = linear(%x, %w, %b)\n  return (%0)\n}\n",
      "graph(%x: f64[3], %w: f64[4,3], %b: f64[4]) {\n"
      "  %0: f64[4] = linear(%x, %w, %b)\n  return (%0)\n}\n",
      "graph(%x: f64[2,5,3], %w: f64[4,3], %b: f64[4]) {\n"
      "  %0: f64[2,5,4] = linear(%x, %w, %b)\n  return (%0)\n}\n",
      "graph(%x: f64[3,5]) {\n  %0: f64[3,5] = softmax(%x) {dim=-1}\n  return (%0)\n}\n",
      "graph(%x: f64[3,5]) {\n  %0: f64[3,5] = softmax(%x) {dim=0}\n  return (%0)\n}\n",
      "graph(%x: f64[3,5]) {\n  %0: f64[3,5] = log_softmax(%x) {dim=1}\n  return (%0)\n}\n",
      "graph(%x: f64[2,3,4]) {\n"
      "  %0: f64[2,1,4] = mean(%x) {dims=[-2], keepdim=true}\n"
      "  %1: f64[] = mean(%x) {dims=[], keepdim=false}\n"
      "  %2: f64[3] = mean(%x) {dims=[2,0], keepdim=false}\n"
      "  return (%0, %1, %2)\n}\n",
      "graph(%x: f64[2,3,4]) {\n"
      "  %0: f64[2,4] = var(%x) {correction=1, dims=[1], keepdim=false}\n"
      "  %1: f64[1,1,1] = var(%x) {correction=0, dims=[], keepdim=true}\n"
      "  %2: f64[2,3] = var(%x) {correction=5, dims=[2], keepdim=false}\n"
      "  return (%0, %1, %2)\n}\n",
      "graph(%x: f64[2,3,4], %w: f64[3,4], %b: f64[3,4]) {\n"
      "  %0: f64[2,3,4], %1: f64[2], %2: f64[2] = layer_norm(%x, %w, %b) {axis=1, eps=1e-05}\n"
      "  return (%0, %1, %2)\n}\n",
      "graph(%x: f64[2,3,4], %w: f64[4], %b: f64[4]) {\n"
      "  %0: f64[2,3,4], %1: f64[2,3], %2: f64[2,3] = layer_norm(%x, %w, %b) {axis=-1, "
      "eps=0.001}\n"
      "  return (%0, %1, %2)\n}\n",
      "graph(%x: f64[4,3,5,2], %w: f64[3], %b: f64[3]) {\n"
      "  %0: f64[4,3,5,2], %1: f64[3], %2: f64[3] = batch_norm(%x, %w, %b) {eps=1e-05}\n"
      "  return (%0, %1, %2)\n}\n",
      "graph(%x: f64[6,3], %w: f64[3], %b: f64[3]) {\n"
      "  %0: f64[6,3], %1: f64[3], %2: f64[3] = batch_norm(%x, %w, %b) {eps=0.1}\n"
      "  return (%0, %1, %2)\n}\n",
      "graph(%x: f32[6,3], %w: f32[4,3], %b: f32[4]) {\n"
      "  %0: f32[6,4] = linear(%x, %w, %b)\n  return (%0)\n}\n",
  };
  for (const char* text : graphs) {
    INFO(text);
    CheckDecomposition(MustParse(text), DefaultDecompositions(), kDecomposed);
  }
}

TEST_CASE("the reference table writes sdpa out, and the default table keeps it") {
  const char* graphs[] = {
      "graph(%q: f64[2,5,3], %k: f64[2,7,3], %v: f64[2,7,4]) {\n"
      "  %0: f64[2,5,4], %1: f64[2,5] = sdpa(%q, %k, %v) {causal=false, scale=0.5}\n"
      "  return (%0, %1)\n}\n",
      "graph(%q: f64[2,2,6,3], %k: f64[2,2,6,3], %v: f64[2,2,6,2], %m: f64[2,1,1,6]) {\n"
      "  %0: f64[2,2,6,2], %1: f64[2,2,6] = sdpa(%q, %k, %v, %m) {causal=true, scale=0.3}\n"
      "  return (%0, %1)\n}\n",
      "graph(%q: f64[1,4,3], %k: f64[1,6,3], %v: f64[1,6,3], %m: bool[4,6]) {\n"
      "  %0: f64[1,4,3], %1: f64[1,4] = sdpa(%q, %k, %v, %m) {causal=true, scale=1}\n"
      "  return (%0, %1)\n}\n",
      "graph(%g: f64[2,5,4], %q: f64[2,5,3], %k: f64[2,7,3], %v: f64[2,7,4], %o: f64[2,5,4], "
      "%lse: f64[2,5], %m: f64[5,7]) {\n"
      "  %0: f64[2,5,3], %1: f64[2,7,3], %2: f64[2,7,4] = sdpa_backward(%g, %q, %k, %v, %o, "
      "%lse, %m) {causal=true, scale=0.4}\n"
      "  return (%0, %1, %2)\n}\n",
  };
  for (const char* text : graphs) {
    INFO(text);
    const Graph g = MustParse(text);
    CheckDecomposition(g, ReferenceDecompositions(),
                       {OpKind::kSdpa, OpKind::kSdpaBackward, OpKind::kSoftmax});
    Graph kept = g.Clone();
    absl::StatusOr<bool> changed = RunPasses(kept, {Decompose(DefaultDecompositions())});
    REQUIRE(changed.ok());
    CHECK_FALSE(*changed);
  }
}

TEST_CASE("gelu: the tanh form decomposes, the erf form stays") {
  Graph g = MustParse(
      "graph(%x: f64[7]) {\n"
      "  %0: f64[7] = gelu(%x) {approximate=\"tanh\"}\n"
      "  %1: f64[7] = gelu(%x) {approximate=\"none\"}\n"
      "  return (%0, %1)\n}\n");
  Graph d = CheckDecomposition(g, DefaultDecompositions(), {});
  int gelus = 0;
  for (const Node* n : d.nodes()) gelus += n->op() == OpKind::kGelu;
  CHECK(gelus == 1);
}

TEST_CASE("softmax over an empty dim is left alone") {
  Graph g =
      MustParse("graph(%x: f64[3,0]) {\n  %0: f64[3,0] = softmax(%x) {dim=1}\n  return (%0)\n}\n");
  Graph d = g.Clone();
  absl::StatusOr<bool> changed = RunPasses(d, {Decompose(DefaultDecompositions())});
  REQUIRE(changed.ok());
  CHECK_FALSE(*changed);
  CHECK(ToString(d) == ToString(g));
}

TEST_CASE("decomposing the traced models keeps their values, sources and placeholders") {
  for (const testing::Model& m : testing::AllModels()) {
    INFO(m.name);
    absl::StatusOr<TracedProgram> p = Trace(m.fn, m.inputs, m.params, m.buffers);
    REQUIRE(p.ok());
    Graph d = CheckDecomposition(p->graph, DefaultDecompositions(), kDecomposed);
    REQUIRE(d.placeholders().size() == p->graph.placeholders().size());
    for (size_t i = 0; i < d.placeholders().size(); ++i) {
      CHECK(d.placeholders()[i]->name() == p->graph.placeholders()[i]->name());
    }
    const std::string text = ToString(d);
    absl::StatusOr<Graph> back = Parse(text);
    REQUIRE(back.ok());
    CHECK(ToString(*back) == text);
  }
}

TEST_CASE("a decomposed MLP, as text") {
  const testing::Model m = testing::Mlp();
  absl::StatusOr<TracedProgram> p = Trace(m.fn, m.inputs, m.params);
  REQUIRE(p.ok());
  Graph d = CheckDecomposition(p->graph, DefaultDecompositions(), kDecomposed);
  CHECK(ToString(d) ==
        "graph(%p_fc1_weight: f64[8,3], %p_fc1_bias: f64[8], %p_fc2_weight: f64[2,8], "
        "%p_fc2_bias: f64[2], %arg0: f64[4,3]) {\n"
        "  %0: f64[3,8] = permute(%p_fc1_weight) {dims=[1,0]}  # mlp.fc1\n"
        "  %1: f64[4,8] = matmul(%arg0, %0)  # mlp.fc1\n"
        "  %2: f64[4,8] = add(%1, %p_fc1_bias)  # mlp.fc1\n"
        "  %3: f64[4,8] = relu(%2)  # mlp\n"
        "  %4: f64[8,2] = permute(%p_fc2_weight) {dims=[1,0]}  # mlp.fc2\n"
        "  %5: f64[4,2] = matmul(%3, %4)  # mlp.fc2\n"
        "  %6: f64[4,2] = add(%5, %p_fc2_bias)  # mlp.fc2\n"
        "  %7: f64[4,1] = max(%6) {dims=[1], keepdim=true}  # mlp.fc2\n"
        "  %8: f64[4,2] = sub(%6, %7)  # mlp.fc2\n"
        "  %9: f64[4,2] = exp(%8)  # mlp.fc2\n"
        "  %10: f64[4,1] = sum(%9) {dims=[1], keepdim=true}  # mlp.fc2\n"
        "  %11: f64[4,1] = log(%10)  # mlp.fc2\n"
        "  %12: f64[4,2] = sub(%8, %11)  # mlp.fc2\n"
        "  return (%12)\n"
        "}\n");
}

TEST_CASE("a table of one's own, and an empty one") {
  Graph g = MustParse("graph(%x: f64[5]) {\n  %y: f64[5] = sigmoid(%x)  # act\n  return (%y)\n}\n");
  DecompositionTable mine;
  mine[OpKind::kSigmoid] = [](Graph& graph, const Node&,
                              absl::Span<Value* const> in) -> absl::StatusOr<std::vector<Value*>> {
    // 1 / (1 + exp(-x))
    Value* one = (*graph.AddNode(
        OpKind::kFull, {},
        {{"shape", std::vector<int64_t>{}}, {"value", 1.0}, {"dtype", DType::kF64}}))[0];
    Value* e = (*graph.AddNode(OpKind::kExp, {(*graph.AddNode(OpKind::kNeg, {in[0]}))[0]}))[0];
    return graph.AddNode(OpKind::kDiv, {one, (*graph.AddNode(OpKind::kAdd, {one, e}))[0]});
  };
  Graph d = CheckDecomposition(g, mine, {OpKind::kSigmoid});
  CHECK(ToString(d) ==
        "graph(%x: f64[5]) {\n"
        "  %0: f64[] = full() {dtype=f64, shape=[], value=1.0}  # act\n"
        "  %1: f64[5] = neg(%x)  # act\n"
        "  %2: f64[5] = exp(%1)  # act\n"
        "  %3: f64[5] = add(%0, %2)  # act\n"
        "  %4: f64[5] = div(%0, %3)  # act\n"
        "  return (%4)\n"
        "}\n");

  Graph same = g.Clone();
  absl::StatusOr<bool> changed = RunPasses(same, {Decompose({})});
  REQUIRE(changed.ok());
  CHECK_FALSE(*changed);
  CHECK(ToString(same) == ToString(g));
}

TEST_CASE("broken rules are reported with the node") {
  Graph g = MustParse("graph(%x: f64[5]) {\n  %0: f64[5] = relu(%x)\n  return (%0)\n}\n");
  auto run = [&](DecompositionFn rule) {
    Graph d = g.Clone();
    DecompositionTable table;
    table[OpKind::kRelu] = std::move(rule);
    return RunPasses(d, {Decompose(std::move(table))}).status();
  };
  CHECK(run([](Graph& graph, const Node&, absl::Span<Value* const> in) {
          return graph.AddNode(OpKind::kSum, {in[0]},
                               {{"dims", std::vector<int64_t>{}}, {"keepdim", false}});
        }).message() ==
        "pass 'decompose': decomposing `%0: f64[5] = relu(%x)`: result 0 should be f64[5], the "
        "rule gave f64[]");
  CHECK(
      run([](Graph&, const Node&, absl::Span<Value* const>) -> absl::StatusOr<std::vector<Value*>> {
        return absl::InternalError("no");
      }).message() == "pass 'decompose': decomposing `%0: f64[5] = relu(%x)`: no");
  // A rule re-emitting its own op never finishes.
  CHECK(run([](Graph& graph, const Node&, absl::Span<Value* const> in) {
          return graph.AddNode(OpKind::kRelu, {in[0]});
        }).message() ==
        "pass 'decompose': decompositions still apply after 32 rounds: the table's rules keep "
        "emitting ops that have rules");
}

}  // namespace
}  // namespace tc
