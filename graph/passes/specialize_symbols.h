// Symbol specialization: a graph over symbolic dims (graph/symbolic.h) made
// into the graph for one size. Every symbolic dim, in value types, in integer
// attributes (reshape's shape, slice's end, ...) and in region bodies, takes
// its value; a size_scalar of a number becomes the constant (full) it now
// is. What this gives is an ordinary static graph, which the compilers plan
// as they plan any other; a symbolic graph is specialized once per size.
//
//   graph(%x: f32[s0,784], ...) { %0: f32[s0,10] = linear(...) ... }
//   RunPasses(g, {SpecializeSymbols({{0, 96}})})
//   graph(%x: f32[96,784], ...) { %0: f32[96,10] = linear(...) ... }
#ifndef TENSORCUT_GRAPH_PASSES_SPECIALIZE_SYMBOLS_H_
#define TENSORCUT_GRAPH_PASSES_SPECIALIZE_SYMBOLS_H_

#include <cstdint>
#include <vector>

#include "graph/pass.h"
#include "graph/symbolic.h"

namespace tc {

// Fails, naming the symbol, when a dim mentions one without a value, and
// with shape inference's error when a value makes the graph invalid.
Pass SpecializeSymbols(SymbolValues values);

// The symbols the dims of `graph`'s values and attributes mention (bodies
// included), ascending; empty for a static graph.
std::vector<int64_t> GraphSymbols(const Graph& graph);
// Whether any of those dims is symbolic: GraphSymbols non-empty, found
// without reading the table.
bool HasSymbolicDims(const Graph& graph);

// `graph` with every symbolic dim at its value (what SpecializeSymbols runs),
// for a caller that keeps the symbolic graph.
absl::StatusOr<Graph> Specialized(const Graph& graph, const SymbolValues& values);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_PASSES_SPECIALIZE_SYMBOLS_H_
