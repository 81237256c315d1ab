// Plain tensor functions shared by the tracer, interpreter and decomposition
// tests: each is a callable over a Tree of tensors with the parameters and
// buffers it captures, as a module's forward would be. All in f64, so that
// decomposed graphs can be compared at 1e-12.
#ifndef TENSORCUT_TESTS_GRAPH_MODELS_H_
#define TENSORCUT_TESTS_GRAPH_MODELS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "graph/tree.h"
#include "runtime/tensor.h"

namespace tc::testing {

using Named = std::vector<std::pair<std::string, Tensor>>;

struct Model {
  std::string name;
  std::function<Tree<Tensor>(const Tree<Tensor>&)> fn;
  Tree<Tensor> inputs;
  Named params;
  Named buffers;
};

// (x[4,3]) -> fc1 linear(8) -> relu -> fc2 linear(2) -> log_softmax, scopes
// "mlp.fc1", "mlp", "mlp.fc2".
Model Mlp();
// (x[2,3,6,6]) -> conv 3x3 pad 1 -> batch_norm -> relu -> max_pool2d 2x2; also
// returns the updated running mean (buffer "bn.running_mean").
Model ConvNet();
// (q, k, v [2,4,8]) -> softmax(q k^T * 0.125) v -> linear "proj".
Model Attention();
// ({"x": [3], "y": [3]}, 2.0) -> (x + y, None, 3, [x * y * 2.0 + c]) with c a
// randn drawn inside (fixed seed), which the tracer lifts to a constant.
Model DictToTuple();

std::vector<Model> AllModels();

}  // namespace tc::testing

#endif  // TENSORCUT_TESTS_GRAPH_MODELS_H_
