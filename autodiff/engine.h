// Eager reverse-mode autodiff: the backward graph recorded as ops run, and the
// engine that walks it.
//
// Every op call on inputs that require grad (with grad mode on) records a
// GradNode holding the op, its attributes and detached copies of its inputs
// and outputs. backward() runs the nodes in reverse topological order, calling
// each op's VJP rule (autodiff/vjp.h) under NoGradGuard.
//
//   Tensor w = tc::randn({3, 2}).requires_grad_();
//   Tensor loss = tc::sum(tc::matmul(x, w));
//   loss.backward();                       // w.grad() now holds d loss / d w
//   auto g = tc::grad({loss}, {w});        // same, without touching .grad
#ifndef TENSORCUT_AUTODIFF_ENGINE_H_
#define TENSORCUT_AUTODIFF_ENGINE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/autograd_meta.h"
#include "runtime/dispatch.h"

namespace tc {

// Where an input's gradient goes: the node that produced the input (and which
// of its outputs it was), or the leaf tensor that accumulates it. Empty when
// the input does not require grad.
struct GradEdge {
  std::shared_ptr<GradNode> node;
  int output_nr = 0;
  Tensor leaf;
};

// Computes the gradients of a recorded function's inputs from the gradients of
// its outputs (undefined where none flowed).
using BackwardFn = std::function<absl::StatusOr<TensorList>(absl::Span<const Tensor> grads)>;

class GradNode {
 public:
  // An op of the table (whose VJP rule runs), or, when `function` is set, an
  // opaque function recorded by RecordFunction.
  OpKind op{};
  BackwardFn function;
  std::string function_name;
  Attrs attrs;
  TensorList inputs;   // detached; released after backward unless retained
  TensorList outputs;  // detached
  std::vector<TensorType> input_types;
  std::vector<TensorType> output_types;
  std::vector<GradEdge> edges;  // one per input
  bool released = false;
};

// Gradients of the sum of <outputs[i], grad_outputs[i]> with respect to
// `inputs` (leaves or intermediates), without touching any .grad. An undefined
// grad_output means ones (outputs must then be scalars). An input that the
// outputs do not depend on gets zeros.
absl::StatusOr<TensorList> grad(const TensorList& outputs, const TensorList& inputs,
                                const TensorList& grad_outputs = {}, bool retain_graph = false);

// Records `outputs` as computed from `inputs` by one function whose backward
// is `backward` (a compiled backward graph, for instance): after this, outputs
// require grad when an input does, and backward() through them calls
// `backward` once with the outputs' gradients. `name` appears in errors.
void RecordFunction(absl::string_view name, absl::Span<const Tensor> inputs,
                    absl::Span<const Tensor> outputs, BackwardFn backward);

// The status-returning form of Tensor::backward.
absl::Status Backward(const Tensor& output, const Tensor& grad_output, bool retain_graph);

}  // namespace tc

#endif  // TENSORCUT_AUTODIFF_ENGINE_H_
