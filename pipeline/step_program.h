// A training step as the two programs that run it, apart from the model
// they came from: the partitioned forward and backward graphs and what each
// argument and output of them stands for. TrainStep (pipeline/train_step.h)
// makes one from a module and its loss; a plan file (pipeline/plan.h) stores
// one, so that the step can be compiled and run again where the model's code
// is not.
//
//   forward(parameters, buffers, batch, constants, random seed and offset)
//       -> (loss, model outputs..., updated buffers..., saved values...)
//   backward(saved values..., one tangent per floating forward output)
//       -> one gradient per `gradient_of` entry
#ifndef TENSORCUT_PIPELINE_STEP_PROGRAM_H_
#define TENSORCUT_PIPELINE_STEP_PROGRAM_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codegen/executable.h"
#include "graph/ir.h"
#include "graph/tree.h"
#include "runtime/trace.h"

namespace tc {

struct StepProgram {
  Graph forward;
  Graph backward;
  // One per forward placeholder: a parameter or buffer by its name in the
  // model, a batch leaf (kUserInput) by its path, a constant, the random
  // seed or offset.
  std::vector<InputDescriptor> inputs;
  // Per batch leaf, in placeholder order: its name in the words of the
  // step's arguments ("inputs", "targets[1]"), for errors.
  std::vector<std::string> batch_words;
  // The batch's structure, (inputs, targets), its leaves the batch leaves
  // in order; None: not recorded (a caller passes leaves).
  TreeSpec batch_spec;
  // How many of the model's outputs the forward returns after the loss
  // (detached: no gradient flows from them, so their tangents are unread),
  // for a caller that scores the batch (a classifier's accuracy).
  int num_outputs = 0;
  // Their structure, as the model returns them; None: not recorded.
  TreeSpec outputs_spec;
  // The buffers the forward updates, in the order of its outputs after the
  // model's.
  std::vector<std::string> mutated_buffers;
  int num_saved = 0;  // the forward's last outputs, the backward's first placeholders
  // Per backward output: the forward placeholder it is the gradient of.
  std::vector<int> gradient_of;
  RandomInputs random;
  DynamicDims dynamic_dims;  // the batch dims that are symbols, by placeholder name

  // The loss, the model's outputs and the updated buffers.
  int num_forward_outputs() const {
    return 1 + num_outputs + static_cast<int>(mutated_buffers.size());
  }
  // The forward output that updates mutated_buffers[k].
  int buffer_update_output(int k) const { return 1 + num_outputs + k; }
};

// Checks that the parts of `program` agree: one descriptor per forward
// placeholder, one batch word per batch leaf, specs of as many leaves as
// there are batch leaves and model outputs, the outputs the counts say, a
// scalar f32 or f64 loss, model outputs whose tangents the backward does not
// read, gradients of placeholders that exist with their
// types, the random inputs where the descriptors put them. The error names
// the part ("step program: gradient_of[3] = 9, but the forward has 8
// placeholders").
absl::Status VerifyStepProgram(const StepProgram& program);

// The two halves compiled by `compiler` (which plans per size itself when
// the graphs are symbolic: codegen/per_size.h): the forward may give its
// saved values in any layout, and the backward takes them in the layouts the
// forward gives.
absl::StatusOr<codegen::Executable> CompileForwardHalf(const codegen::Compiler& compiler,
                                                       const Graph& forward,
                                                       int num_forward_outputs);
absl::StatusOr<codegen::Executable> CompileBackwardHalf(const codegen::Compiler& compiler,
                                                        const Graph& backward,
                                                        const codegen::Executable& forward,
                                                        int num_forward_outputs, int num_saved);

}  // namespace tc

#endif  // TENSORCUT_PIPELINE_STEP_PROGRAM_H_
