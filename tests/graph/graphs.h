// Hand-built graphs shared by the graph tests: an MLP, a small conv net and
// an attention block, each built through Graph::AddNode as a tracer would.
#ifndef TENSORCUT_TESTS_GRAPH_GRAPHS_H_
#define TENSORCUT_TESTS_GRAPH_GRAPHS_H_

#include <string>
#include <vector>

#include "graph/ir.h"

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

}  // namespace tc::testing

#endif  // TENSORCUT_TESTS_GRAPH_GRAPHS_H_
