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

#include <memory>
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

class GradNode {
 public:
  OpKind op;
  Attrs attrs;
  TensorList inputs;   // detached; released after backward unless retained
  TensorList outputs;  // detached
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

// The status-returning form of Tensor::backward.
absl::Status Backward(const Tensor& output, const Tensor& grad_output, bool retain_graph);

}  // namespace tc

#endif  // TENSORCUT_AUTODIFF_ENGINE_H_
