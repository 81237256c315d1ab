// GraphDot: the golden DOT of a small graph, plain and styled, and DOT string
// escaping.
#include "graph/dot.h"

#include "catch2/catch.hpp"
#include "graph/ir.h"

namespace tc {
namespace {

// x -> linear(x, w, b) -> relu, with x used twice.
Graph SmallGraph() {
  Graph g;
  Value* x = g.AddPlaceholder("x", {DType::kF32, {4, 3}});
  Value* w = g.AddPlaceholder("w", {DType::kF32, {2, 3}});
  Value* b = g.AddPlaceholder("b", {DType::kF32, {2}});
  Value* y = g.AddNode(OpKind::kLinear, {x, w, b}).value()[0];
  Value* r = g.AddNode(OpKind::kRelu, {y}).value()[0];
  REQUIRE(g.SetOutputs({r}).ok());
  return g;
}

TEST_CASE("GraphDot draws placeholders, nodes and typed edges") {
  REQUIRE(GraphDot(SmallGraph()) ==
          "digraph g {\n"
          "  node [shape=box, style=filled, fontname=Helvetica, fontsize=10];\n"
          "  edge [fontname=Helvetica, fontsize=8];\n"
          "  p0 [shape=ellipse, label=\"%x\"];\n"
          "  p1 [shape=ellipse, label=\"%w\"];\n"
          "  p2 [shape=ellipse, label=\"%b\"];\n"
          "  n0 [label=\"linear %0\"];\n"
          "  p0 -> n0 [label=\"f32[4,3]\"];\n"
          "  p1 -> n0 [label=\"f32[2,3]\"];\n"
          "  p2 -> n0 [label=\"f32[2]\"];\n"
          "  n1 [label=\"relu %1\"];\n"
          "  n0 -> n1 [label=\"f32[4,2]\"];\n"
          "}\n");
}

TEST_CASE("GraphDot applies a style's labels and attributes") {
  DotStyle style;
  style.placeholder = [](const Value& p, int index, DotItem& item) {
    if (index == 0) item.attrs = "fillcolor=palegreen";
  };
  style.node = [](const Node& node, DotItem& item) {
    if (node.result(0)->is_output()) {
      item.label += "\noutput";
      item.attrs = "penwidth=3";
    }
  };
  const std::string dot = GraphDot(SmallGraph(), style, "styled");
  REQUIRE(dot.rfind("digraph styled {\n", 0) == 0);
  REQUIRE(dot.find("  p0 [shape=ellipse, label=\"%x\", fillcolor=palegreen];\n") !=
          std::string::npos);
  REQUIRE(dot.find("  p1 [shape=ellipse, label=\"%w\"];\n") != std::string::npos);
  REQUIRE(dot.find("  n0 [label=\"linear %0\"];\n") != std::string::npos);
  REQUIRE(dot.find("  n1 [label=\"relu %1\\noutput\", penwidth=3];\n") != std::string::npos);
}

TEST_CASE("DotString escapes quotes and backslashes and keeps line breaks") {
  REQUIRE(DotString("a \"b\" \\c\nd") == "\"a \\\"b\\\" \\\\c\\nd\"");
}

}  // namespace
}  // namespace tc
