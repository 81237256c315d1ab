// Building graphs: naming, uses, checked construction, rewrites and clones.
#include "catch2/catch.hpp"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "tests/graph/graphs.h"

namespace tc {
namespace {

using testing::Add;
using testing::F32;

TEST_CASE("results are numbered in creation order; hints are made unique and valid") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  CHECK(g.AddPlaceholder("x", F32({3}))->name() == "x_1");
  CHECK(g.AddPlaceholder("fc1.weight", F32({3}))->name() == "fc1.weight");
  CHECK(g.AddPlaceholder("a b%c", F32({3}))->name() == "a_b_c");
  CHECK(g.AddPlaceholder("", F32({3}))->name() == "0");
  CHECK(Add(g, OpKind::kRelu, {x})[0]->name() == "1");
  absl::StatusOr<std::vector<Value*>> named =
      g.AddNode(OpKind::kExp, {x}, {}, "", std::vector<std::string>{"x"});
  REQUIRE(named.ok());
  CHECK((*named)[0]->name() == "x_2");
  std::vector<Value*> bn =
      Add(g, OpKind::kBatchNorm, {g.AddPlaceholder("img", F32({2, 3, 4})), x, x}, {{"eps", 0.1}});
  CHECK(bn[0]->name() == "2");
  CHECK(bn[2]->name() == "4");
  CHECK(bn[1]->producer() == bn[0]->producer());
  CHECK(bn[1]->index() == 1);
  CHECK(g.FindValue("x_2") == (*named)[0]);
  CHECK(g.FindValue("nope") == nullptr);
  // A numeric name moves the numbering past it; the largest int64 (the
  // fuzzer's, which overflowed the count) is a name like any other.
  CHECK(g.AddPlaceholder("7", F32({3}))->name() == "7");
  CHECK(Add(g, OpKind::kRelu, {x})[0]->name() == "8");
  CHECK(g.AddPlaceholder("9223372036854775807", F32({3}))->name() == "9223372036854775807");
  CHECK(Add(g, OpKind::kRelu, {x})[0]->name() == "9");
}

TEST_CASE("uses, users and outputs are queryable") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* sq = Add(g, OpKind::kMul, {x, x})[0];
  Value* e = Add(g, OpKind::kExp, {x})[0];
  REQUIRE(g.SetOutputs({sq, sq}).ok());
  CHECK(x->uses().size() == 3);
  CHECK(x->users() == std::vector<Node*>{sq->producer(), e->producer()});
  CHECK(x->is_placeholder());
  CHECK(!x->is_output());
  CHECK(sq->is_output());
  CHECK(sq->output_count() == 2);
  CHECK(sq->users().empty());
  CHECK(sq->has_uses());
  CHECK(!e->has_uses());
  REQUIRE(g.SetOutputs({e}).ok());
  CHECK(!sq->is_output());
  CHECK(e->is_output());
}

TEST_CASE("AddNode reports the op table's errors with the node's source") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({4, 3}));
  CHECK(g.AddNode(OpKind::kMatmul, {x, x}, {}, "encoder.fc").status().message() ==
        "matmul: inner dims differ: [4,3] x [4,3] (at encoder.fc)");
  CHECK(g.AddNode(OpKind::kSoftmax, {x}).status().message() == "softmax: missing attribute 'dim'");
  CHECK(g.AddNode(OpKind::kRelu, {x}, {}, "two\nlines").status().message() ==
        "relu: source must be a single line, got \"two\nlines\"");
  CHECK(g.AddNode(OpKind::kRelu, {x}, {}, "", std::vector<std::string>{"a", "b"})
            .status()
            .message() == "relu: 2 result names given for 1 results");
  CHECK(g.num_nodes() == 0);
}

TEST_CASE("a removed node's results cannot be used by new nodes") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* e = Add(g, OpKind::kExp, {x})[0];
  REQUIRE(g.RemoveNode(e->producer()).ok());
  CHECK(e->producer()->removed());
  CHECK(x->uses().empty());
  CHECK(g.AddNode(OpKind::kRelu, {e}).status().message() ==
        "relu: operand 0 (%0) was removed from the graph");
}

TEST_CASE("RemoveNode keeps nodes whose results are used") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* e = Add(g, OpKind::kExp, {x})[0];
  Value* r = Add(g, OpKind::kRelu, {e})[0];
  CHECK(g.RemoveNode(e->producer()).message() == "RemoveNode: %0 still has uses");
  REQUIRE(g.SetOutputs({r}).ok());
  CHECK(g.RemoveNode(r->producer()).message() == "RemoveNode: %1 still has uses");
  CHECK(g.num_nodes() == 2);
}

TEST_CASE("ReplaceAllUsesWith moves operands and outputs, and checks types") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* y = g.AddPlaceholder("y", F32({3}));
  Value* z = g.AddPlaceholder("z", F32({2}));
  Value* r = Add(g, OpKind::kAdd, {x, x})[0];
  REQUIRE(g.SetOutputs({x, r}).ok());
  CHECK(g.ReplaceAllUsesWith(x, z).message() == "ReplaceAllUsesWith: %x: f32[3] by %z: f32[2]");
  REQUIRE(g.ReplaceAllUsesWith(x, y).ok());
  CHECK(x->uses().empty());
  CHECK(!x->is_output());
  CHECK(y->uses().size() == 2);
  CHECK(ToString(g) ==
        "graph(%x: f32[3], %y: f32[3], %z: f32[2]) {\n"
        "  %0: f32[3] = add(%y, %y)\n"
        "  return (%y, %0)\n"
        "}\n");
  CHECK(Verify(g).ok());
}

TEST_CASE("RemoveDeadNodes removes transitively unused nodes in one call") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* a = Add(g, OpKind::kExp, {x})[0];
  Value* b = Add(g, OpKind::kRelu, {a})[0];
  Add(g, OpKind::kNeg, {b});
  Value* kept = Add(g, OpKind::kAbs, {x})[0];
  REQUIRE(g.SetOutputs({kept}).ok());
  CHECK(g.RemoveDeadNodes() == 3);
  CHECK(g.RemoveDeadNodes() == 0);
  CHECK(x->users() == std::vector<Node*>{kept->producer()});
  CHECK(Verify(g).ok());
}

TEST_CASE("Clone is a deep copy that prints identically and changes independently") {
  const Graph g = testing::ConvNet();
  Graph copy = g.Clone();
  CHECK(ToString(copy) == ToString(g));
  CHECK(Verify(copy).ok());
  for (const Value* p : copy.placeholders()) {
    CHECK(copy.Owns(p));
    CHECK(!g.Owns(p));
  }
  CHECK(copy.outputs()[1]->is_output());
  CHECK(copy.placeholders()[0]->users() == std::vector<Node*>{copy.nodes()[0]});
  const std::string before = ToString(g);
  Add(copy, OpKind::kExp, {copy.outputs()[0]});
  REQUIRE(copy.SetOutputs({}).ok());
  CHECK(copy.RemoveDeadNodes() == 5);
  CHECK(ToString(g) == before);
  // Numbering continues from the original's.
  CHECK(Add(copy, OpKind::kRelu, {copy.placeholders()[0]})[0]->name() == "7");
}

TEST_CASE("a moved graph keeps its values; the moved-from graph does not own them") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Graph moved = std::move(g);
  CHECK(moved.Owns(x));
  CHECK(!g.Owns(x));  // NOLINT(bugprone-use-after-move): checking the moved-from state
  CHECK(moved.AddNode(OpKind::kRelu, {x}).ok());
}

TEST_CASE("AddCopyOf copies a node into another graph, a region node with its body") {
  Graph body;
  Value* p = body.AddPlaceholder("p", F32({3}));
  REQUIRE(body.SetOutputs({Add(body, OpKind::kExp, {p})[0]}).ok());
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* fused = g.AddRegionNode(OpKind::kFused, {x}, std::move(body), "blk").value()[0];
  Value* relu = Add(g, OpKind::kRelu, {fused})[0];
  Graph copy;
  Value* y = copy.AddPlaceholder("y", F32({3}));
  Value* copied = copy.AddCopyOf(*fused->producer(), {y}, {"f"}).value()[0];
  Add(copy, OpKind::kRelu, {copied});
  CHECK(copied->producer()->body() == fused->producer()->body());  // shared, immutable
  CHECK(copied->producer()->source() == "blk");
  CHECK(copied->name() == "f");
  CHECK(copy.AddCopyOf(*relu->producer(), {y}).value()[0]->type() == F32({3}));
  Value* z = copy.AddPlaceholder("z", F32({2}));
  CHECK(copy.AddCopyOf(*fused->producer(), {z}).status().message() ==
        "fused: operand 0 is f32[2], its body's placeholder %p f32[3]");
}

TEST_CASE("ReplaceNode puts a new node in the old one's place, with its uses and names") {
  Graph g;
  Value* x = g.AddPlaceholder("x", F32({3}));
  Value* e = Add(g, OpKind::kExp, {x})[0];
  Value* r = Add(g, OpKind::kRelu, {e}, {}, "act")[0];
  REQUIRE(g.SetOutputs({Add(g, OpKind::kNeg, {r})[0], r}).ok());
  REQUIRE(g.ReplaceNode(r->producer(), OpKind::kSigmoid, {e}, {}).ok());
  CHECK(ToString(g) ==
        "graph(%x: f32[3]) {\n"
        "  %0: f32[3] = exp(%x)\n"
        "  %1: f32[3] = sigmoid(%0)  # act\n"
        "  %2: f32[3] = neg(%1)\n"
        "  return (%2, %1)\n"
        "}\n");
  CHECK(Verify(g).ok());
  Graph h;
  Value* y = h.AddPlaceholder("y", F32({2, 3}));
  Value* w = h.AddPlaceholder("w", F32({3}));
  Node* bn = Add(h, OpKind::kBatchNorm, {y, w, w}, {{"eps", 0.1}})[0]->producer();
  CHECK(h.ReplaceNode(bn, OpKind::kRelu, {y}, {}).status().message() ==
        "ReplaceNode: batch_norm has 3 results, relu 1");
  CHECK(h.num_nodes() == 1);  // unchanged
}

}  // namespace
}  // namespace tc
