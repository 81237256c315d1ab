// The tracer: goldens for three traced functions, text round trips, the
// placeholder order and descriptors, structured inputs and outputs, lifted
// constants, scopes as node sources, and errors coming back as statuses.
#include "runtime/trace.h"

#include <sstream>
#include <string>

#include "catch2/catch.hpp"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "runtime/ops.h"
#include "tests/graph/models.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using T = Tree<Tensor>;
using Kind = InputDescriptor::Kind;

TracedProgram MustTrace(const testing::Model& m) {
  absl::StatusOr<TracedProgram> p = Trace(m.fn, m.inputs, m.params, m.buffers);
  INFO(m.name << ": " << p.status().ToString());
  REQUIRE(p.ok());
  INFO(ToString(p->graph));
  REQUIRE(Verify(p->graph).ok());
  return *std::move(p);
}

TEST_CASE("golden: MLP") {
  TracedProgram p = MustTrace(testing::Mlp());
  CHECK(ToString(p.graph) ==
        "graph(%p_fc1_weight: f64[8,3], %p_fc1_bias: f64[8], %p_fc2_weight: f64[2,8], "
        "%p_fc2_bias: f64[2], %arg0: f64[4,3]) {\n"
        "  %0: f64[4,8] = linear(%arg0, %p_fc1_weight, %p_fc1_bias)  # mlp.fc1\n"
        "  %1: f64[4,8] = relu(%0)  # mlp\n"
        "  %2: f64[4,2] = linear(%1, %p_fc2_weight, %p_fc2_bias)  # mlp.fc2\n"
        "  %3: f64[4,2] = log_softmax(%2) {dim=1}  # mlp.fc2\n"
        "  return (%3)\n"
        "}\n");
  CHECK(ToString(p.in_spec) == "(*,)");
  CHECK(ToString(p.out_spec) == "*");
}

TEST_CASE("golden: attention") {
  TracedProgram p = MustTrace(testing::Attention());
  CHECK(ToString(p.graph) ==
        "graph(%p_proj_weight: f64[8,8], %p_proj_bias: f64[8], %arg0: f64[2,4,8], "
        "%arg1: f64[2,4,8], %arg2: f64[2,4,8]) {\n"
        "  %0: f64[2,8,4] = permute(%arg1) {dims=[0,2,1]}  # attn\n"
        "  %1: f64[2,4,4] = matmul(%arg0, %0)  # attn\n"
        "  %2: f64[] = full() {dtype=f64, shape=[], value=0.125}  # attn\n"
        "  %3: f64[2,4,4] = mul(%1, %2)  # attn\n"
        "  %4: f64[2,4,4] = softmax(%3) {dim=-1}  # attn\n"
        "  %5: f64[2,4,8] = matmul(%4, %arg2)  # attn\n"
        "  %6: f64[2,4,8] = linear(%5, %p_proj_weight, %p_proj_bias)  # attn.proj\n"
        "  return (%6)\n"
        "}\n");
}

TEST_CASE("golden: dict in, tuple out, with a lifted constant") {
  TracedProgram p = MustTrace(testing::DictToTuple());
  CHECK(ToString(p.graph) ==
        "graph(%arg0_x: f64[3], %arg0_y: f64[3], %c_0: f64[3]) {\n"
        "  %0: f64[3] = mul(%arg0_x, %arg0_y)\n"
        "  %1: f64[] = full() {dtype=f64, shape=[], value=2.0}\n"
        "  %2: f64[3] = mul(%0, %1)\n"
        "  %3: f64[3] = add(%2, %c_0)\n"
        "  %4: f64[3] = add(%arg0_x, %arg0_y)\n"
        "  return (%4, %3)\n"
        "}\n");
  CHECK(ToString(p.in_spec) == "({\"x\": *, \"y\": *}, 2.0)");
  CHECK(ToString(p.out_spec) == "(*, None, 3, [*])");
  REQUIRE(p.inputs.size() == 3);
  CHECK(p.inputs[0].kind == Kind::kUserInput);
  CHECK(p.inputs[0].name == "inputs[0][\"x\"]");
  CHECK(p.inputs[1].name == "inputs[0][\"y\"]");
  CHECK(p.inputs[2].kind == Kind::kConstant);
  CHECK(p.inputs[2].constant_index == 0);
  // The constant's value is the randn the function drew.
  REQUIRE(p.constants.size() == 1);
  Generator gen(42);
  REQUIRE_TENSORS_CLOSE(p.constants[0], randn({3}, DType::kF64, &gen), 0, 0);
}

TEST_CASE("print -> parse -> print is identical for every traced graph") {
  for (const testing::Model& m : testing::AllModels()) {
    TracedProgram p = MustTrace(m);
    const std::string text = ToString(p.graph);
    absl::StatusOr<Graph> back = Parse(text);
    INFO(m.name << ": " << back.status().ToString() << "\n" << text);
    REQUIRE(back.ok());
    CHECK(ToString(*back) == text);
  }
}

TEST_CASE("placeholders: parameters, then buffers, then inputs, then constants") {
  testing::Model m = testing::ConvNet();
  TracedProgram p = MustTrace(m);
  std::vector<std::string> names;
  for (const Value* v : p.graph.placeholders()) names.push_back(v->name());
  CHECK(names == std::vector<std::string>{"p_conv_weight", "p_bn_weight", "p_bn_bias",
                                          "b_bn_running_mean", "arg0"});
  REQUIRE(p.inputs.size() == 5);
  CHECK(p.inputs[0].kind == Kind::kParameter);
  CHECK(p.inputs[0].name == "conv.weight");
  CHECK(p.inputs[2].name == "bn.bias");
  CHECK(p.inputs[3].kind == Kind::kBuffer);
  CHECK(p.inputs[3].name == "bn.running_mean");
  CHECK(p.inputs[4].kind == Kind::kUserInput);
  CHECK(p.inputs[4].name == "inputs[0]");
  CHECK(p.graph.outputs().size() == 2);
  // Tracing marks the captured tensors only while it runs.
  for (const auto& [name, t] : m.params) CHECK(t.impl()->trace == nullptr);
  CHECK(m.buffers[0].second.impl()->trace == nullptr);
}

TEST_CASE("traced results have a type and no storage") {
  Tracer tracer;
  Tensor x = tracer.AddInput("x", {DType::kF32, {2, 3}});
  Tensor y = relu(x).transpose(0, 1);
  CHECK(tracer.IsTraced(y));
  CHECK(y.type() == TensorType{DType::kF32, {3, 2}});
  CHECK(y.strides() == std::vector<int64_t>{2, 1});
  CHECK(y.storage() == nullptr);
  CHECK_THROWS_WITH(y.item<float>(), "item() needs a one-element tensor, got f32[3,2]");
  CHECK_THROWS_WITH(y.at<float>({0, 0}),
                    "cannot read the elements of traced tensor f32[3,2]: its values are only "
                    "known when the graph runs");
  std::ostringstream os;
  os << y;
  CHECK(os.str() == "Tensor(f32[3,2], traced)");
  CHECK(tracer.graph().num_nodes() == 2);
}

TEST_CASE("creation ops are recorded; concrete-only ops run eagerly and are lifted once") {
  Tensor captured = tc::from_vector<double>({1, 2, 3}, {3});
  auto fn = [&](const T& in) {
    Tensor x = in.leaf();
    Tensor folded = captured * captured;  // `*` of two concrete tensors: eager
    Tensor z = zeros({3}, DType::kF64);   // recorded: full
    return T::Tuple({T::MakeLeaf(x + folded + z), T::MakeLeaf(x * folded), T::MakeLeaf(captured)});
  };
  absl::StatusOr<TracedProgram> p = Trace(fn, T::MakeLeaf(tc::zeros({3}, DType::kF64)));
  REQUIRE(p.ok());
  CHECK(ToString(p->graph) ==
        "graph(%arg: f64[3], %c_0: f64[3], %c_1: f64[3]) {\n"
        "  %0: f64[3] = full() {dtype=f64, shape=[3], value=0.0}\n"
        "  %1: f64[3] = add(%arg, %c_0)\n"
        "  %2: f64[3] = add(%1, %0)\n"
        "  %3: f64[3] = mul(%arg, %c_0)\n"
        "  return (%2, %3, %c_1)\n"
        "}\n");
  REQUIRE(p->constants.size() == 2);
  REQUIRE_TENSORS_CLOSE(p->constants[0], from_vector<double>({1, 4, 9}, {3}), 0, 0);
  CHECK(p->constants[1].same(captured));
}

TEST_CASE("scopes nest into the node source") {
  auto fn = [](const T& in) {
    ScopedTraceScope encoder("encoder");
    ScopedTraceScope layer("0");
    ScopedTraceScope root("");  // a root module's empty name adds nothing
    ScopedTraceScope linear("linear");
    CHECK(CurrentTraceScope() == "encoder.0.linear");
    return T::MakeLeaf(relu(in.leaf()));
  };
  absl::StatusOr<TracedProgram> p = Trace(fn, T::MakeLeaf(tc::zeros({2})));
  REQUIRE(p.ok());
  REQUIRE(p->graph.num_nodes() == 1);
  CHECK(p->graph.nodes()[0]->source() == "encoder.0.linear");
  CHECK(CurrentTraceScope().empty());
}

TEST_CASE("a shape error inside the traced function comes back as a status") {
  Tensor w = tc::zeros({5, 2});
  auto fn = [&](const T& in) {
    ScopedTraceScope block("block");
    Tensor h = relu(in.leaf());
    ScopedTraceScope fc("fc");
    return T::MakeLeaf(matmul(h, w));
  };
  absl::StatusOr<TracedProgram> p = Trace(fn, T::MakeLeaf(tc::zeros({4, 3})), {{"fc.w", w}});
  CHECK(p.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(p.status().message() == "matmul: inner dims differ: [4,3] x [5,2] (at block.fc)");
  CHECK(w.impl()->trace == nullptr);

  // Outside any scope the message is the op's own.
  absl::StatusOr<TracedProgram> q = Trace(
      [&](const T& in) { return T::MakeLeaf(matmul(in.leaf(), w)); }, T::MakeLeaf(zeros({4, 3})));
  CHECK(q.status().message() == "matmul: inner dims differ: [4,3] x [5,2]");
}

TEST_CASE("a traced tensor escaping its trace is rejected by the next one") {
  Tensor escaped;
  absl::StatusOr<TracedProgram> first = Trace(
      [&](const T& in) {
        escaped = relu(in.leaf());
        return T::MakeLeaf(escaped);
      },
      T::MakeLeaf(zeros({3})));
  REQUIRE(first.ok());
  absl::StatusOr<TracedProgram> second =
      Trace([&](const T& in) { return T::MakeLeaf(in.leaf() + escaped); }, T::MakeLeaf(zeros({3})));
  CHECK(second.status().message() ==
        "add: input 1 is a tensor f32[3] of another trace (one that has ended, or an outer one)");
}

TEST_CASE("outputs: undefined tensors are an error") {
  absl::StatusOr<TracedProgram> p =
      Trace([](const T&) { return T::Tuple({T::MakeLeaf(Tensor())}); }, T::MakeLeaf(zeros({3})));
  CHECK(p.status().message() == "output 0 of (*,) is an undefined tensor");
}

TEST_CASE("GraphArguments checks the call against the traced program") {
  testing::Model m = testing::DictToTuple();
  TracedProgram p = MustTrace(m);
  absl::StatusOr<std::vector<Tensor>> args = GraphArguments(p, m.inputs);
  REQUIRE(args.ok());
  CHECK(args->size() == 3);
  CHECK((*args)[2].same(p.constants[0]));

  T wrong_shape = T::Tuple({T::Dict({{"x", T::MakeLeaf(zeros({3}, DType::kF64))},
                                     {"y", T::MakeLeaf(zeros({4}, DType::kF64))}}),
                            T::Float(2.0)});
  CHECK(GraphArguments(p, wrong_shape).status().message() ==
        "inputs[0][\"y\"]: expected tensor f64[3], got f64[4]");
  T wrong_scalar = T::Tuple({m.inputs[0], T::Float(3.0)});
  CHECK(GraphArguments(p, wrong_scalar).status().message() ==
        "inputs[1]: expected float 2.0, got float 3.0");

  testing::Model mlp = testing::Mlp();
  TracedProgram q = MustTrace(mlp);
  CHECK(GraphArguments(q, mlp.inputs, {}).status().message() ==
        "parameter 0: expected \"fc1.weight\", got none");
}

}  // namespace
}  // namespace tc
