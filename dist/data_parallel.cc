#include "dist/data_parallel.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/insert_all_reduce.h"
#include "graph/pass.h"
#include "runtime/ops.h"

namespace tc::dist {

absl::Status BroadcastModule(ProcessGroup& group, nn::Module& module, int root) {
  std::vector<Tensor> state;
  for (const auto& [name, t] : module.named_parameters()) state.push_back(t);
  for (const auto& [name, t] : module.named_buffers()) state.push_back(t);
  return group.Broadcast(state, root);
}

namespace {

// This rank's rows (dim 0 of batch[0]) over every rank's; `rows` is an
// i64[1] the all-reduce sums in.
absl::StatusOr<double> ShareOfBatch(ProcessGroup& group, const Tensor& rows,
                                    absl::Span<const Tensor> batch, absl::string_view what) {
  if (batch.empty() || !batch[0].defined()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": a batch without tensors"));
  }
  const int64_t own = batch[0].dim() == 0 ? 1 : batch[0].size(0);
  *rows.data<int64_t>() = own;
  TC_RETURN_IF_ERROR(group.AllReduceSum({rows}));
  const int64_t total = *rows.data<int64_t>();
  if (total == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": every rank's batch has 0 rows"));
  }
  return static_cast<double>(own) / static_cast<double>(total);
}

}  // namespace

std::function<absl::Status(absl::Span<const Tensor>, absl::Span<const Tensor>)> AverageGradients(
    ProcessGroup& group) {
  // The global batch's rows, summed over the ranks: kept, so that a step
  // allocates nothing for it.
  const Tensor rows = Tensor::Uninitialized({1}, DType::kI64);
  return [&group, rows](absl::Span<const Tensor> gradients,
                        absl::Span<const Tensor> batch) -> absl::Status {
    TC_ASSIGN_OR_RETURN(const double share, ShareOfBatch(group, rows, batch, "average gradients"));
    return group.AllReduceSum(gradients, share);
  };
}

absl::StatusOr<BackwardAllReduce> BackwardAllReduce::Insert(ProcessGroup& group,
                                                            const JointGraph& joint,
                                                            partition::PartitionResult& part) {
  codegen::AllReduceOptions options{.group = std::string(ProcessGroup::kName),
                                    .bucket_bytes = group.options().bucket_bytes,
                                    .first_bucket_bytes = group.options().first_bucket_bytes};
  const int num_forward_outputs = joint.layout.num_forward_outputs;
  for (int i = num_forward_outputs; i < static_cast<int>(joint.outputs.size()); ++i) {
    if (joint.outputs[i].kind == JointDescriptor::Kind::kParamGrad) {
      options.outputs.push_back(i - num_forward_outputs);
    }
  }
  if (part.backward.outputs().size() != joint.outputs.size() - num_forward_outputs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "backward all-reduce: the partition's backward returns ", part.backward.outputs().size(),
        " gradients, the joint graph ", joint.outputs.size() - num_forward_outputs));
  }
  const size_t placeholders = part.backward.placeholders().size();
  TC_RETURN_IF_ERROR(RunPasses(part.backward, {codegen::InsertAllReduce(options)}).status());
  BackwardAllReduce reduce;
  reduce.group_ = &group;
  reduce.weight_ = full({}, 1.0 / group.size(), DType::kF64);
  reduce.rows_ = Tensor::Uninitialized({1}, DType::kI64);
  for (const Node* node : part.backward.nodes()) {
    reduce.buckets_ += node->op() == OpKind::kAllReduceStart;
  }
  // With no gradient to sum, the pass adds no weight to bind.
  if (part.backward.placeholders().size() == placeholders) reduce.weight_ = Tensor();
  return reduce;
}

codegen::Executable BackwardAllReduce::Bind(codegen::Executable backward) const {
  if (!weight_.defined()) return backward;
  return codegen::WithTrailingArguments(std::move(backward), {weight_});
}

absl::Status BackwardAllReduce::SetBatch(absl::Span<const Tensor> batch) {
  TC_ASSIGN_OR_RETURN(const double share,
                      ShareOfBatch(*group_, rows_, batch, "backward all-reduce"));
  if (weight_.defined()) *weight_.data<double>() = share;
  return absl::OkStatus();
}

}  // namespace tc::dist
