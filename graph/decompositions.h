// Decompositions: rewrite high-level ops into primitive ones, so later stages
// (autodiff, fusion) see fewer kinds of op. A table maps an op to a rule that
// emits, into a graph, nodes computing the op's results from its operands:
//
//   Graph g = ...;                       // with linear, softmax, layer_norm
//   absl::StatusOr<bool> changed =
//       RunPasses(g, {Decompose(DefaultDecompositions())});
//   // linear(x, w, b) is now add(matmul(x, permute(w)), b), and so on.
//
//   DecompositionTable mine;             // or a table of one's own
//   mine[OpKind::kSigmoid] = [](Graph& g, const Node& node,
//                               absl::Span<Value* const> in) { ... };
//
// Rules may emit ops that have rules of their own (var -> mean -> sum / n):
// Decompose repeats until no rule applies. It rebuilds the graph in order
// (Graph::AddNode only appends, so a replacement cannot be inserted in
// place): placeholders, outputs, sources and user-chosen value names are
// kept, automatic names (%0, %1, ...) are renumbered, and pointers into the
// old graph become invalid.
#ifndef TENSORCUT_GRAPH_DECOMPOSITIONS_H_
#define TENSORCUT_GRAPH_DECOMPOSITIONS_H_

#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/ir.h"
#include "graph/pass.h"

namespace tc {

// Emits nodes into `graph` computing `node`'s results from `inputs` (the
// node's operands, as values of `graph`), and returns one value per result,
// each of the result's type. Returning no values declines: the node is kept
// as it is (e.g. a rule that only handles floating dtypes). The emitted nodes
// take `node`'s source.
using DecompositionFn = std::function<absl::StatusOr<std::vector<Value*>>(
    Graph& graph, const Node& node, absl::Span<Value* const> inputs)>;
using DecompositionTable = absl::flat_hash_map<OpKind, DecompositionFn>;

// The standard table:
//   linear      -> matmul(x, permute(w)) + b
//   gelu        -> the tanh formula, for approximate="tanh" only (the erf form
//                  has no primitive to decompose into, so it stays gelu)
//   softmax     -> exp(x - max) / sum(exp(x - max))
//   log_softmax -> (x - max) - log(sum(exp(x - max)))
//   layer_norm, batch_norm (training) -> mean, var, rsqrt, mul, add, reshape;
//                  all three results (y, mean, biased var)
//   var         -> sum((x - mean)^2) / max(n - correction, 0)
//   mean        -> sum / n
// Rules decline on inputs they cannot express (softmax over an empty dim).
const DecompositionTable& DefaultDecompositions();

// sdpa and sdpa_backward written out as matmuls, a softmax and its
// log-sum-exp (the backward recomputing the probabilities from lse): for a
// backend with no attention kernel (bf16 products, codegen/autocast.h).
// Not in the default table, since the written-out form stores the [S, T]
// scores that sdpa's kernels never write.
const DecompositionTable& AttentionDecompositions();
// DefaultDecompositions() and AttentionDecompositions(): everything written
// out in primitives.
const DecompositionTable& ReferenceDecompositions();

// The pass applying `table` until no rule applies; an error names the node
// whose rule failed. Gives up after 32 rounds (a table whose rules keep
// re-emitting each other).
Pass Decompose(DecompositionTable table);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_DECOMPOSITIONS_H_
