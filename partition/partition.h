// Partitioning: splitting a joint forward/backward graph into a forward graph
// and a backward graph, and the values the first hands to the second.
//
//   JointLayout layout = joint.layout;           // filled by autodiff/joint_graph.h
//   absl::StatusOr<PartitionResult> part = DefaultPartition(joint.graph, layout);
//   // part->forward:  primals -> forward outputs, then the saved values
//   // part->backward: saved values, then tangents -> gradients
//
// A partitioner is any PartitionFn; all of them return the same PartitionResult,
// so the compile and run stages do not care which one made it.
#ifndef TENSORCUT_PARTITION_PARTITION_H_
#define TENSORCUT_PARTITION_PARTITION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/ir.h"
#include "graph/joint_layout.h"

namespace tc::partition {

using ::tc::JointLayout;

// A value the forward graph computes and the backward graph reads.
struct SavedValue {
  std::string name;  // its name in the joint graph, and the backward placeholder's
  TensorType type;
  int64_t bytes = 0;
};

struct PartitionResult {
  // Placeholders: the primals. Outputs: the forward outputs, then the saved
  // values (the last num_fw_outs_saved_for_bw outputs).
  Graph forward;
  // Placeholders: the saved values (named as in `saved`), then the tangents.
  // Outputs: the gradients, in the joint graph's order.
  Graph backward;
  std::vector<SavedValue> saved;
  int num_fw_outs_saved_for_bw = 0;
  // The symbols (graph/symbolic.h) the backward's dims mention, ascending.
  // It reads their sizes from the dims of what it takes (where PyTorch's
  // partitioner hands such sizes over as values, num_symints_saved_for_bw):
  // a size no saved value carries travels in one more saved value that has
  // it as a dim (a user input: no bytes of its own).
  std::vector<int64_t> symbols_for_bw;
  // Primal indices whose gradient does not depend on any tangent (no gradient
  // reaches them): the runtime need not connect them to autograd.
  std::vector<int> indices_of_inputs_to_detach;
};

using PartitionFn =
    std::function<absl::StatusOr<PartitionResult>(const Graph& joint, const JointLayout& layout)>;

// A new graph computing `outputs` from `inputs` (values of `graph`): one
// placeholder per input (same name and type, in order), then copies of the
// nodes the outputs need, in `graph`'s order, with the same names, attributes
// and sources. An InvalidArgumentError names an output that needs a
// placeholder of `graph` not among `inputs`.
absl::StatusOr<Graph> ExtractSubgraph(const Graph& graph, absl::Span<Value* const> inputs,
                                      absl::Span<Value* const> outputs);

// InvalidArgumentError unless `layout` fits `joint`'s placeholders and outputs
// and names only its primals.
absl::Status CheckJointLayout(const Graph& joint, const JointLayout& layout);

// A joint graph's placeholders and outputs split by its layout.
struct JointParts {
  std::vector<Value*> primals, tangents;      // placeholders
  std::vector<Value*> fw_outputs, gradients;  // outputs
};
JointParts SplitJoint(const Graph& joint, const JointLayout& layout);

// The partition that hands `saved_values` (primals or node results of `joint`)
// from the forward to the backward: forward = ExtractSubgraph(primals ->
// forward outputs + saved), backward = ExtractSubgraph(saved + tangents ->
// gradients), which recomputes every other value the gradients need from the
// saved ones, each just before its first use (graph/passes/recompute_late.h),
// and saves one more value for each symbol the backward needs
// but would not see (PartitionResult::symbols_for_bw). Every partitioner
// chooses the saved values and ends here. An InvalidArgumentError when the
// saved values do not suffice.
absl::StatusOr<PartitionResult> AssemblePartition(const Graph& joint, const JointLayout& layout,
                                                  absl::Span<Value* const> saved_values);

// The default partition (AOTAutograd's default_partition): the forward graph
// holds exactly the nodes the forward outputs need; every other node the
// gradients need runs in the backward graph. The saved values are the
// primals and forward-node results the backward reads, in the joint graph's
// definition order.
absl::StatusOr<PartitionResult> DefaultPartition(const Graph& joint, const JointLayout& layout);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_PARTITION_H_
