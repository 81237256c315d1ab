// Hand-built graphs shared by the graph tests: an MLP, a small conv net and
// an attention block, each built through Graph::AddNode as a tracer would;
// and the text-in, text-out harness of the pass tests.
#ifndef TENSORCUT_TESTS_GRAPH_GRAPHS_H_
#define TENSORCUT_TESTS_GRAPH_GRAPHS_H_

#include <string>
#include <utility>
#include <vector>

#include "graph/ir.h"
#include "graph/pass.h"

namespace tc::testing {

// AddNode that must succeed (a failing REQUIRE otherwise).
std::vector<Value*> Add(Graph& g, OpKind op, std::vector<Value*> inputs, Attrs attrs = {},
                        std::string source = "");
TensorType F32(Shape shape);

// x[4,3] -> linear(8) -> relu -> linear(2) -> log_softmax.
Graph Mlp();
// x[2,3,8,8] -> conv2d 3x3 pad 1 -> batch_norm -> relu -> max_pool2d 2x2;
// returns the pooled value and the batch statistics.
Graph ConvNet();
// softmax(q k^T * scale) v over q, k, v [2,4,8].
Graph Attention();

// The graph `text` parses to (a failing REQUIRE otherwise).
Graph ParseOk(const std::string& text);
// Runs `passes` on the graph `text` parses to: the printed result, and
// whether a pass changed it (a failing REQUIRE on an error).
std::pair<std::string, bool> RunOnText(const std::string& text, const std::vector<Pass>& passes);

}  // namespace tc::testing

#endif  // TENSORCUT_TESTS_GRAPH_GRAPHS_H_
