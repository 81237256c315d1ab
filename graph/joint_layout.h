// JointLayout: how a joint forward/backward graph's inputs and outputs are
// laid out. autodiff/ fills it when it builds a joint graph; partitioners read
// it. It lives in graph/ so that neither of those depends on the other.
#ifndef TENSORCUT_GRAPH_JOINT_LAYOUT_H_
#define TENSORCUT_GRAPH_JOINT_LAYOUT_H_

#include <vector>

namespace tc {

// How a joint graph's inputs and outputs split. Placeholders are the primals
// (the forward's inputs) followed by the tangents (one per differentiable
// forward output); outputs are the forward outputs followed by the gradients.
struct JointLayout {
  int num_primals = 0;
  int num_tangents = 0;
  int num_forward_outputs = 0;
  // For each gradient output, the index of the primal placeholder it is the
  // gradient of.
  std::vector<int> grad_primal_indices;

  int num_gradients() const { return static_cast<int>(grad_primal_indices.size()); }
};

}  // namespace tc

#endif  // TENSORCUT_GRAPH_JOINT_LAYOUT_H_
