// Dispatch: how every op call runs. tc::Call checks the call against the op
// table (arity, attributes, shape inference), then hands it to the innermost
// installed hook or, with none, to the op's eager kernel.
//
// Hooks let later layers see every call without runtime/ knowing them: the
// tracer records a graph node instead of running a kernel; the eager tape runs
// the call and records how to differentiate it.
//
//   absl::StatusOr<std::vector<Tensor>> out = tc::Call(OpKind::kMatmul, {a, b}, {});
#ifndef TENSORCUT_RUNTIME_DISPATCH_H_
#define TENSORCUT_RUNTIME_DISPATCH_H_

#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/attrs.h"
#include "graph/op_attrs.h"
#include "graph/op_def.h"
#include "runtime/random.h"
#include "runtime/tensor.h"

namespace tc {

using TensorList = std::vector<Tensor>;

// An eager kernel. Inputs and attributes have passed shape inference, whose
// result is `out_types`. Returns the outputs (new tensors, or views of input 0
// for view ops); a status only for data-dependent errors (an index out of range).
using KernelFn = absl::StatusOr<TensorList> (*)(absl::Span<const Tensor> inputs, const Attrs& attrs,
                                                absl::Span<const TensorType> out_types);

// An out-variant kernel: writes every element of `outputs`, dense tensors of
// the inferred types that the caller allocated (a compiled plan reuses them
// from call to call): row-major, or channels-last where the layout pass
// (codegen/layout_plan.h) makes them so for the ops it names. Inputs may
// have any strides. Views and data-dependent shapes have none.
using IntoKernelFn = absl::Status (*)(absl::Span<const Tensor> inputs, const Attrs& attrs,
                                      absl::Span<const Tensor> outputs);

// An elementwise op that an out-variant applies to its first result before
// writing it (for matmul and linear, oneDNN's post-ops), so that a compiled
// program saves the pass over memory the op would take on its own. A binary
// op reads the result as its first operand and, as its second, the kernel's
// next input after its own (broadcast to the result's shape).
struct PostOp {
  OpKind op;
  ElementwiseAttrs attrs = {};  // gelu's form

  bool binary() const { return GetOpDef(op).min_inputs == 2; }
};

// An out-variant that applies `post_ops`, in order, to result 0.
using PostOpKernelFn = absl::Status (*)(absl::Span<const Tensor> inputs, const Attrs& attrs,
                                        absl::Span<const PostOp> post_ops,
                                        absl::Span<const Tensor> outputs);

// The kernel table, one entry per op; nullptr where no kernel is bound.
KernelFn GetKernel(OpKind kind);
// The out-variant table; nullptr for ops that have none.
IntoKernelFn GetIntoKernel(OpKind kind);
// The out-variant with post-ops of `kind`; nullptr for ops that have none.
// Which chains it takes is declared in the op table (OpDef::epilogue).
PostOpKernelFn GetPostOpKernel(OpKind kind);

// Runs one op call. Errors name the op: "matmul: inner dims differ: [4,3] x [2,5]".
absl::StatusOr<TensorList> Call(OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs);

// Runs the op's eager kernel directly, below every hook.
absl::StatusOr<TensorList> RunKernel(OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs,
                                     absl::Span<const TensorType> out_types);

// A random op's seed and offset: i64 scalars, the operands of dropout.
struct RandomState {
  Tensor seed, offset;
};

class DispatchHook {
 public:
  virtual ~DispatchHook() = default;
  // `next` continues with the outer hooks and finally the kernel.
  virtual absl::StatusOr<TensorList> Dispatch(
      OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs,
      absl::Span<const TensorType> out_types,
      absl::FunctionRef<absl::StatusOr<TensorList>()> next) = 0;
  // The state a random op drawing `n` counters from `gen` takes under this
  // hook, or nullopt to leave it to the outer hooks (the tracer answers with
  // inputs of the captured graph). `n` is a dim: symbolic when the op's
  // input is a tracer's symbolic stand-in. May throw tc::Error.
  virtual std::optional<RandomState> RandomStateFor(Generator& gen, int64_t n) {
    return std::nullopt;
  }
};

// The seed and offset with which a random op draws `n` counters from `gen`:
// what the innermost hook that answers gives, else `gen`'s seed and its
// offset, which it then advances by n.
RandomState DrawRandomState(Generator& gen, int64_t n);

// Installs a hook for the current thread while in scope; hooks nest.
class ScopedDispatchHook {
 public:
  explicit ScopedDispatchHook(DispatchHook* hook);
  ~ScopedDispatchHook();
  ScopedDispatchHook(const ScopedDispatchHook&) = delete;
  ScopedDispatchHook& operator=(const ScopedDispatchHook&) = delete;
};

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_DISPATCH_H_
