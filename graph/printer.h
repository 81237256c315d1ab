// The stable text form of a Graph, read back by graph/parser.h:
//
//   graph(%x: f32[4,3], %p_linear_weight: f32[2,3], %p_linear_bias: f32[2]) {
//     %0: f32[4,2] = linear(%x, %p_linear_weight, %p_linear_bias)  # linear
//     %1: f32[4,2] = log_softmax(%0) {dim=1}
//     return (%1)
//   }
//
// One node per line: its results with their types, the op, its operands, its
// attributes (Attrs::ToString, doubles printed to round-trip exactly) and,
// after "  # ", the source location that produced it. A value laid out
// channels-last by lowering has ":nhwc" after its type. A region op's body
// follows its line, indented, between braces:
//
//     %2: f32[4,3] = fused(%x, %b) {
//       graph(%x: f32[4,3], %b: f32[3]) {
//         %1: f32[4,3] = add(%x, %b)
//         %2: f32[4,3] = relu(%1)
//         return (%2)
//       }
//     }
#ifndef TENSORCUT_GRAPH_PRINTER_H_
#define TENSORCUT_GRAPH_PRINTER_H_

#include <string>

#include "graph/ir.h"

namespace tc {

std::string ToString(const Graph& graph);
// One node's line without indentation or newline, as ToString prints it (a
// region op's without its body).
std::string NodeToString(const Node& node);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_PRINTER_H_
