// The autograd state a tensor carries, and the switch that turns recording
// off. runtime/ only holds this state; autodiff/ defines the backward graph
// (GradNode), the VJP rules and the engine, and registers the recorder that
// tc::Call invokes after each differentiable op.
#ifndef TENSORCUT_RUNTIME_AUTOGRAD_META_H_
#define TENSORCUT_RUNTIME_AUTOGRAD_META_H_

#include <memory>

#include "absl/types/span.h"
#include "graph/attrs.h"
#include "graph/op_def.h"
#include "runtime/tensor.h"

namespace tc {

class GradNode;  // autodiff/engine.h

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                        // accumulated gradient (leaves only)
  std::shared_ptr<GradNode> grad_fn;  // how this tensor was computed (non-leaves)
  int output_nr = 0;                  // which output of grad_fn this tensor is
};

// Whether ops record a backward graph, per thread. On by default.
class GradMode {
 public:
  static bool IsEnabled();
  static void SetEnabled(bool enabled);
};

// Turns recording off while in scope (for optimizer steps, evaluation, and
// the VJP rules themselves).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::IsEnabled()) { GradMode::SetEnabled(false); }
  ~NoGradGuard() { GradMode::SetEnabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Called by tc::Call after an op ran on inputs of which at least one requires
// grad, with grad mode on. autodiff/ registers it.
using GradRecorder = void (*)(OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs,
                              absl::Span<const Tensor> outputs);
void SetGradRecorder(GradRecorder recorder);
GradRecorder GetGradRecorder();

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_AUTOGRAD_META_H_
