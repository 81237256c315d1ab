// The interpreter: a traced graph run on concrete tensors gives bitwise the
// eager results (same kernels); argument mismatches and kernel errors come
// back as the documented statuses.
#include "codegen/interpreter.h"

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "graph/parser.h"
#include "runtime/ops.h"
#include "runtime/trace.h"
#include "tests/graph/models.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using T = Tree<Tensor>;

// Runs `graph` on the arguments of `m`'s example call; the outputs in m's
// output structure.
T RunTraced(const Graph& graph, const TracedProgram& p, const testing::Model& m) {
  absl::StatusOr<std::vector<Tensor>> args = GraphArguments(p, m.inputs, m.params, m.buffers);
  REQUIRE(args.ok());
  absl::StatusOr<T> tree = Unflatten(testing::RunGraph(graph, *args), p.out_spec);
  REQUIRE(tree.ok());
  return *std::move(tree);
}

void RequireSameTrees(const T& actual, const T& expected, double tol) {
  auto [a, a_spec] = Flatten(actual);
  auto [e, e_spec] = Flatten(expected);
  REQUIRE(a_spec == e_spec);
  for (size_t i = 0; i < a.size(); ++i) REQUIRE_TENSORS_CLOSE(a[i], e[i], tol, tol);
}

TEST_CASE("an interpreted traced graph equals the eager function, bitwise") {
  for (const testing::Model& m : testing::AllModels()) {
    INFO(m.name);
    absl::StatusOr<TracedProgram> p = Trace(m.fn, m.inputs, m.params, m.buffers);
    REQUIRE(p.ok());
    RequireSameTrees(RunTraced(p->graph, *p, m), m.fn(m.inputs), 0);
  }
}

Graph MustParse(const char* text) {
  absl::StatusOr<Graph> g = Parse(text);
  INFO(g.status().ToString());
  REQUIRE(g.ok());
  return *std::move(g);
}

TEST_CASE("argument mismatches name the placeholder") {
  // A rewrite left an operand used before its definition: Interpret verifies.
  Graph bad = MustParse(R"(graph(%x: f32[3]) {
  %0: f32[3] = relu(%x)
  %1: f32[3] = neg(%0)
  return (%1)
})");
  REQUIRE(bad.nodes()[0]->SetInput(0, bad.FindValue("1")).ok());
  CHECK(codegen::Interpret(bad).status().message() ==
        "node `%0: f32[3] = relu(%1)`: operand 0 (%1) is used before its definition");

  Graph g = MustParse(R"(graph(%x: f32[2,3], %w: f32[4,3]) {
  %0: f32[3,4] = permute(%w) {dims=[1,0]}
  %1: f32[2,4] = matmul(%x, %0)
  return (%1)
})");
  absl::StatusOr<codegen::Executable> exe = codegen::interpreter()(g);
  REQUIRE(exe.ok());
  Tensor x = zeros({2, 3}), w = zeros({4, 3});
  CHECK((*exe)({x}).status().message() == "expected 2 arguments, got 1");
  CHECK((*exe)({x, w, w}).status().message() == "expected 2 arguments, got 3");
  CHECK((*exe)({x, zeros({3, 4})}).status().message() ==
        "argument 1 (%w): expected f32[4,3], got f32[3,4]");
  CHECK((*exe)({zeros({2, 3}, DType::kF64), w}).status().message() ==
        "argument 0 (%x): expected f32[2,3], got f64[2,3]");
  CHECK((*exe)({Tensor(), w}).status().message() ==
        "argument 0 (%x): expected f32[2,3], got an undefined tensor");
  CHECK((*exe)({x, w}).status().code() == absl::StatusCode::kOk);
}

TEST_CASE("a compiler of one's own: an Executable from a function of the arguments") {
  Graph g = MustParse(R"(graph(%x: f32[2]) {
  %0: f32[2] = relu(%x)
  return (%0, %x)
})");
  const codegen::Executable inner = codegen::Interpret(g).value();
  int calls = 0;
  const codegen::Compiler mine = [&](const Graph&) {
    return codegen::Executable(
        [&](absl::Span<const Tensor> args) {
          ++calls;
          return inner(args);
        },
        /*num_outputs=*/2);
  };
  const codegen::Executable exe = mine(g).value();
  const Tensor x = from_vector<float>({-1, 2}, {2});
  std::vector<Tensor> out(2);
  REQUIRE(exe.Run({x}, absl::MakeSpan(out)).ok());
  CHECK(out[0].to_vector<float>() == std::vector<float>{0, 2});
  CHECK(calls == 1);
  CHECK(exe.output_order(0).empty());
  CHECK(exe.planned_memory().total_bytes() == 0);
  std::vector<Tensor> one(1);
  CHECK(exe.Run({x}, absl::MakeSpan(one)).message() == "expected room for 2 outputs, got 1");
  const codegen::Executable miscounted(inner, /*num_outputs=*/3);
  CHECK(miscounted({x}).status().message() ==
        "the compiled function returned 2 outputs, its graph has 3");
}

TEST_CASE("trailing arguments bound, also twice over, and written between calls") {
  Graph g = MustParse(R"(graph(%x: f32[2], %y: f32[2], %z: f32[2]) {
  %0: f32[2] = sub(%x, %y)
  %1: f32[2] = mul(%0, %z)
  return (%1)
})");
  const Tensor y = from_vector<float>({1, 1}, {2}), z = from_vector<float>({2, 3}, {2});
  const codegen::Executable exe = codegen::WithTrailingArguments(
      codegen::WithTrailingArguments(codegen::Interpret(g).value(), {z}), {y});
  const Tensor x = from_vector<float>({5, 7}, {2});
  CHECK(exe({x}).value()[0].to_vector<float>() == std::vector<float>{8, 18});
  *z.data<float>() = -1;  // the bound tensor, written
  CHECK(exe({x}).value()[0].to_vector<float>() == std::vector<float>{-4, 18});
  CHECK(exe.num_outputs() == 1);
}

TEST_CASE("a kernel's data-dependent error names the node's source") {
  Graph g = MustParse(R"(graph(%table: f32[4,2], %ids: i64[3]) {
  %0: f32[3,2] = embedding(%table, %ids)  # encoder.embed
  return (%0)
})");
  absl::StatusOr<codegen::Executable> exe = codegen::Interpret(g);
  REQUIRE(exe.ok());
  absl::StatusOr<std::vector<Tensor>> out =
      (*exe)({zeros({4, 2}), from_vector<int64_t>({0, 9, 1}, {3})});
  REQUIRE_FALSE(out.ok());
  const std::string message(out.status().message());
  INFO(message);
  CHECK(message.rfind("embedding: ", 0) == 0);
  CHECK(absl::EndsWith(message, " (at encoder.embed)"));
}

TEST_CASE("outputs: placeholders, repeated values and values also read later") {
  Graph g = MustParse(R"(graph(%x: f64[3]) {
  %0: f64[3] = exp(%x)
  %1: f64[3] = neg(%0)
  %2: f64[3], %3: f64[], %4: f64[] = layer_norm(%1, %x, %x) {axis=0, eps=0.5}
  return (%x, %0, %1, %0, %3)
})");
  absl::StatusOr<codegen::Executable> exe = codegen::Interpret(g);
  REQUIRE(exe.ok());
  Tensor x = from_vector<double>({0, 1, 2}, {3});
  absl::StatusOr<std::vector<Tensor>> out = (*exe)({x});
  REQUIRE(out.ok());
  REQUIRE(out->size() == 5);
  CHECK((*out)[0].same(x));
  REQUIRE_TENSORS_CLOSE((*out)[1], exp(x), 0, 0);
  REQUIRE_TENSORS_CLOSE((*out)[2], neg(exp(x)), 0, 0);
  CHECK((*out)[3].same((*out)[1]));
  REQUIRE_TENSORS_CLOSE((*out)[4], mean(neg(exp(x))), 1e-15, 1e-15);
}

}  // namespace
}  // namespace tc
