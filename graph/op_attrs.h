// Typed forms of the attributes op families share, and the one decoder and
// encoder of each: shape inference, kernels, VJP rules, decompositions and
// compilers read an op's attributes through these, never by name.
//
//   const Conv2dOptions o = Conv2dOptionsOf(node.attrs());   // stride, padding, ...
//   graph.AddNode(OpKind::kConv2d, {x, w}, ToAttrs(o));
//   if (GeluApproximationOf(attrs) == GeluApproximation::kTanh) ...
//
// A decoder assumes attributes that tc::InferTypes accepted (the op table
// checks kinds, enumeration choices and pair lengths); on others it is an
// internal error.
#ifndef TENSORCUT_GRAPH_OP_ATTRS_H_
#define TENSORCUT_GRAPH_OP_ATTRS_H_

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/attrs.h"
#include "graph/op_def.h"

namespace tc {

// conv2d and its backward ops: {stride, padding, dilation, groups}.
struct Conv2dOptions {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};

// max_pool2d, avg_pool2d and their backward ops: {kernel, stride, padding},
// and max pooling's optional {dilation} (taps `dilation` apart; the attribute
// is left out at its default, 1, which is all average pooling takes).
struct Pool2dOptions {
  std::array<int64_t, 2> kernel{2, 2};
  std::array<int64_t, 2> stride{2, 2};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
};

// gelu's and gelu_backward's `approximate`: the exact erf form, or PyTorch's
// tanh approximation. The attribute's text is the name at the enum's index.
enum class GeluApproximation : uint8_t { kNone, kTanh };
inline constexpr absl::string_view kGeluApproximationNames[] = {"none", "tanh"};

// What an elementwise op's formula reads from its attributes (pow's
// exponent, gelu's form), decoded once for the loops that evaluate it many
// times: a fused kernel's instructions, a kernel's post-ops.
struct ElementwiseAttrs {
  double exponent = 0;                                         // pow
  GeluApproximation approximation = GeluApproximation::kNone;  // gelu, gelu_backward
  double p = 0;                                                // dropout
};

Conv2dOptions Conv2dOptionsOf(const Attrs& attrs);
Pool2dOptions Pool2dOptionsOf(const Attrs& attrs);
GeluApproximation GeluApproximationOf(const Attrs& attrs);
// `op`'s, from its attributes; the defaults for an op without any.
ElementwiseAttrs ElementwiseAttrsOf(OpKind op, const Attrs& attrs);
// A reduction's `dims` over an input of `rank`, normalised (graph/shape.h's
// NormalizeDims: wrapped, sorted, distinct; [] is every dim).
std::vector<int> ReducedDimsOf(const Attrs& attrs, int64_t rank);

Attrs ToAttrs(const Conv2dOptions& options);
Attrs ToAttrs(const Pool2dOptions& options);
// {approximate: "none" | "tanh"}.
Attrs ToAttrs(GeluApproximation approximation);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_OP_ATTRS_H_
