// The op table: one OpDef per op in ops.def, read by every stage (dispatch,
// tracer, printer and parser, verifier, autodiff, partitioner cost model,
// compilers). Kernels (runtime/) and VJP rules (autodiff/) are bound in their
// own tables, keyed by the same OpKind, so that graph/ depends on nothing.
//
//   absl::StatusOr<std::vector<TensorType>> out =
//       InferTypes(OpKind::kMatmul, {a_type, b_type}, Attrs{});
//   // error: "matmul: inner dims differ: [4,3] x [2,5]"
#ifndef TENSORCUT_GRAPH_OP_DEF_H_
#define TENSORCUT_GRAPH_OP_DEF_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/attrs.h"
#include "graph/shape.h"

namespace tc {

enum class OpKind : uint16_t {
#define TC_OP(enum_name, text, family) enum_name,
#include "graph/ops.def"
#undef TC_OP
};

inline constexpr int kNumOps = 0
#define TC_OP(enum_name, text, family) +1
#include "graph/ops.def"
#undef TC_OP
    ;

enum class OpFamily : uint8_t {
  kElementwise,
  kCreation,
  kReduction,
  kLayout,
  kNn,
  kLowered,
  kCollective,
};

// What later stages may assume about an op. A bitmask.
enum OpTrait : uint32_t {
  kTraitNone = 0,
  kTraitElementwise = 1 << 0,        // output[i] depends on input[i] only (after broadcasting)
  kTraitView = 1 << 1,               // eager result may share storage with input 0
  kTraitReduction = 1 << 2,          // reduces dims of its input
  kTraitCreation = 1 << 3,           // no inputs; a constant made from attributes
  kTraitRandom = 1 << 4,             // draws random numbers (from its seed and offset operands)
  kTraitExpensive = 1 << 5,          // matmul/conv class: never worth recomputing
  kTraitNonDifferentiable = 1 << 6,  // outputs carry no gradient (bool/int results, stop_gradient)
  kTraitBackward = 1 << 7,           // only appears in backward graphs
  kTraitFusible = 1 << 8,            // may sit in a fused region: the fused kernel evaluates it
  kTraitRegion = 1 << 9,             // holds a body graph (Node::body); results are its outputs
  kTraitChannelsLastResult = 1 << 10,  // its out-variant writes result 0 channels-last when asked
  kTraitCommutative = 1 << 11,         // a binary op whose operands may be swapped
  // Talks to the other processes of a group: runs exactly once per call and
  // is never merged, folded into a constant or recomputed.
  kTraitCollective = 1 << 12,
};

// Static cost of one call, from the op table's cost functions.
struct OpCost {
  double flops = 0;
  double bytes = 0;  // bytes read + written
};

// kEnum: a string, one of AttrSpec::choices (read back through its typed
// decoder, graph/op_attrs.h).
enum class AttrKind : uint8_t { kInt, kFloat, kBool, kInts, kDType, kString, kEnum };

struct AttrSpec {
  absl::string_view name;
  AttrKind kind;
  absl::Span<const absl::string_view> choices = {};  // kEnum's values
  bool optional = false;                             // may be absent
};

// What an op's out-variant kernel can apply to its first result before it
// writes it, its epilogue (oneDNN's post-ops after matmul and linear, a relu
// inside batch norm): a chain of elementwise `ops` (each binary one reading
// one more operand), at most `max_length` long (-1: any), on a result of one
// of `dtypes`. A lowered graph holds such a chain in a `fused` region led by
// the kernel (codegen/fold_post_ops.h); the verifier checks it against this.
struct EpilogueSpec {
  std::vector<OpKind> ops;  // empty: the op takes no epilogue
  std::vector<DType> dtypes;
  int max_length = -1;
};

using InferFn = absl::StatusOr<std::vector<TensorType>> (*)(absl::Span<const TensorType> inputs,
                                                            const Attrs& attrs);
using CostFn = OpCost (*)(absl::Span<const TensorType> inputs, absl::Span<const TensorType> outputs,
                          const Attrs& attrs);

struct OpDef {
  OpKind kind;
  absl::string_view name;
  OpFamily family;
  int min_inputs = 0;
  int max_inputs = 0;           // -1: variadic
  std::vector<AttrSpec> attrs;  // required unless marked optional
  uint32_t traits = kTraitNone;
  InferFn infer = nullptr;
  CostFn cost = nullptr;  // nullptr: one flop per output element, bytes of all operands
  EpilogueSpec epilogue = {};

  bool Has(OpTrait t) const { return (traits & t) != 0; }
  // Whether the op declares an attribute `name` (optional ones included).
  bool DeclaresAttr(absl::string_view name) const;
  // Whether the op's kernel applies `chain`, in order, to a first result of
  // `dtype` (an empty chain is always taken).
  bool TakesEpilogue(DType dtype, absl::Span<const OpKind> chain) const;
};

const OpDef& GetOpDef(OpKind kind);
absl::string_view OpName(OpKind kind);
absl::StatusOr<OpKind> OpKindFromName(absl::string_view name);
// All ops, in ops.def order.
absl::Span<const OpKind> AllOps();

// Checks arity and attributes against the op's declaration, then runs its shape
// inference. Errors start with the op name: "matmul: inner dims differ: ...".
absl::StatusOr<std::vector<TensorType>> InferTypes(OpKind kind, absl::Span<const TensorType> inputs,
                                                   const Attrs& attrs);
OpCost EstimateCost(OpKind kind, absl::Span<const TensorType> inputs,
                    absl::Span<const TensorType> outputs, const Attrs& attrs);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_OP_DEF_H_
