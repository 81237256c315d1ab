// The joint graph: the forward traced program and its backward pass in one
// Graph, built by symbolic reverse-mode autodiff. The backward half comes from
// the same VJP rules as eager autograd (autodiff/vjp.h), run under a Tracer so
// they record nodes instead of computing.
//
//   absl::StatusOr<TracedProgram> fw = Trace(fn, inputs, params);
//   JointOptions options;
//   options.user_inputs_require_grad = {true};
//   absl::StatusOr<JointGraph> joint = BuildJointGraph(*fw, options);
//   // ToString(*joint), for x -> linear(x, w, b) under the scope "linear":
//   //   graph(%p_linear_weight: f64[2,3], %p_linear_bias: f64[2], %arg0: f64[4,3],
//   //         %tangent_0: f64[4,2]) {
//   //     %0: f64[4,2] = linear(%arg0, %p_linear_weight, %p_linear_bias)  # linear
//   //     %1: f64[4,2] = reshape(%tangent_0) {shape=[4,2]}  # linear (backward)
//   //     ...
//   //     return (%0, %6, %7, %4)
//   //   }
//   //   inputs:
//   //     %p_linear_weight: ParamInput{linear.weight}
//   //     ...
//   //     %tangent_0: Tangent{0}
//   //   outputs:
//   //     %0: UserOutput{0}
//   //     %6: ParamGrad{linear.weight}
//   //     ...
//
// Placeholders: the forward's own (parameters, buffers, user inputs, lifted
// constants; same names and order), then one tangent per floating forward
// output ("tangent_0", ...). Outputs: the forward outputs, then one gradient
// per forward input that requires grad, in placeholder order (zeros where no
// gradient reaches it). Backward nodes carry the forward node's source plus
// " (backward)".
#ifndef TENSORCUT_AUTODIFF_JOINT_GRAPH_H_
#define TENSORCUT_AUTODIFF_JOINT_GRAPH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/ir.h"
#include "graph/joint_layout.h"
#include "runtime/trace.h"

namespace tc {

// What one input or output of a joint graph stands for.
struct JointDescriptor {
  enum class Kind {
    kParamInput,     // name: the parameter FQN
    kBufferInput,    // name: the buffer FQN
    kUserInput,      // name: the path in the input tree, "inputs[0]"
    kConstantInput,  // index: the constant's index in TracedProgram::constants
    kRandomSeed,     // the default generator's seed at each call
    kRandomOffset,   // its offset at each call, advanced by what the call draws
    kTangent,        // index: the forward output it is the gradient of
    kUserOutput,     // index: the forward output
    kMutatedBuffer,  // name: the buffer FQN (reserved: buffer updates are not yet outputs)
    kParamGrad,      // name: the parameter FQN
    kInputGrad,      // name: the user input's path
  };
  Kind kind;
  std::string name;
  int index = -1;

  // "ParamInput{linear.weight}", "Tangent{0}".
  std::string ToString() const;
};

// The descriptor of a captured forward's input, as joint and inference graphs
// describe their primals.
JointDescriptor DescribeInput(const InputDescriptor& in);

struct JointOptions {
  // Whether gradients of the parameters are computed.
  bool params_require_grad = true;
  // One flag per flattened user input; empty means none requires grad. Only
  // floating inputs may require grad. Buffers and constants never do.
  std::vector<bool> user_inputs_require_grad;
  // The last this many forward outputs are buffer updates (BatchNorm's running
  // statistics): state, not results, so no gradient flows back from them, as
  // in eager mode, where they are computed from detached statistics. Their
  // tangents stay placeholders that nothing reads.
  int num_buffer_update_outputs = 0;
};

struct JointGraph {
  Graph graph;
  std::vector<JointDescriptor> inputs;   // one per placeholder
  std::vector<JointDescriptor> outputs;  // one per output
  JointLayout layout;                    // primals/tangents, forward outputs/gradients
};

// Builds the joint graph of `forward` (see the file comment). An
// InvalidArgumentError for options that do not fit `forward`; an InternalError
// if a VJP rule misbehaves (wrong gradient shape, a concrete tensor captured).
absl::StatusOr<JointGraph> BuildJointGraph(const TracedProgram& forward,
                                           const JointOptions& options = {});

// The graph text, then one line per input and output: "%name: Descriptor".
std::string ToString(const JointGraph& joint);

}  // namespace tc

#endif  // TENSORCUT_AUTODIFF_JOINT_GRAPH_H_
