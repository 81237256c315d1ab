#include "dist/data_parallel.h"

#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
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

// This rank's rows (dim 0 of batch[0]) and every rank's together; `rows`
// is an i64[1] the all-reduce sums in.
absl::StatusOr<std::pair<int64_t, int64_t>> RowsOfBatch(ProcessGroup& group, const Tensor& rows,
                                                        absl::Span<const Tensor> batch,
                                                        absl::string_view what) {
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
  return std::pair{own, total};
}

}  // namespace

std::function<absl::Status(absl::Span<const Tensor>, absl::Span<const Tensor>)> AverageGradients(
    ProcessGroup& group) {
  // The global batch's rows, summed over the ranks: kept, so that a step
  // allocates nothing for it.
  const Tensor rows = Tensor::Uninitialized({1}, DType::kI64);
  return [&group, rows](absl::Span<const Tensor> gradients,
                        absl::Span<const Tensor> batch) -> absl::Status {
    TC_ASSIGN_OR_RETURN(const auto own_and_total,
                        RowsOfBatch(group, rows, batch, "average gradients"));
    const auto [own, total] = own_and_total;
    return group.AllReduceSum(gradients, static_cast<double>(own) / static_cast<double>(total));
  };
}

BackwardAllReduce::BackwardAllReduce(ProcessGroup& group)
    : group_(&group),
      weight_(full({}, 1.0 / group.size(), DType::kF64)),
      rows_(Tensor::Uninitialized({1}, DType::kI64)) {}

absl::StatusOr<BackwardAllReduce> BackwardAllReduce::Insert(ProcessGroup& group,
                                                            const JointGraph& joint,
                                                            partition::PartitionResult& part) {
  BackwardAllReduce reduce(group);
  TC_RETURN_IF_ERROR(reduce.Rewrite(joint, part));
  return reduce;
}

absl::Status BackwardAllReduce::Rewrite(const JointGraph& joint, partition::PartitionResult& part) {
  codegen::AllReduceOptions options{.group = std::string(ProcessGroup::kName),
                                    .bucket_bytes = group_->options().bucket_bytes,
                                    .first_bucket_bytes = group_->options().first_bucket_bytes};
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
  const auto starts = [&part] {
    return static_cast<int>(absl::c_count_if(part.backward.nodes(), [](const Node* node) {
      return node->op() == OpKind::kAllReduceStart;
    }));
  };
  // All-reduces in the backward already: a synchronised BatchNorm's.
  const int synchronised = starts();
  const size_t placeholders = part.backward.placeholders().size();
  TC_RETURN_IF_ERROR(RunPasses(part.backward, {codegen::InsertAllReduce(options)}).status());
  buckets_ = starts() - synchronised;
  equal_shares_ = synchronised > 0;
  // With no gradient to sum, the pass adds no weight to bind.
  binds_weight_ = part.backward.placeholders().size() > placeholders;
  return absl::OkStatus();
}

codegen::Executable BackwardAllReduce::Bind(codegen::Executable backward) const {
  if (!binds_weight_) return backward;
  return codegen::WithTrailingArguments(std::move(backward), {weight_});
}

absl::Status BackwardAllReduce::SetBatch(absl::Span<const Tensor> batch) {
  TC_ASSIGN_OR_RETURN(const auto own_and_total,
                      RowsOfBatch(*group_, rows_, batch, "backward all-reduce"));
  return SetShare(own_and_total.first, own_and_total.second);
}

absl::Status BackwardAllReduce::SetShare(int64_t rows, int64_t total_rows) {
  if (rows < 0 || total_rows <= 0 || rows > total_rows) {
    return absl::InvalidArgumentError(absl::StrCat("backward all-reduce: a share of ", rows,
                                                   " rows of a global batch of ", total_rows,
                                                   "; expected 0 <= rows <= total and total > 0"));
  }
  // The gradient through statistics summed over the ranks is the global
  // batch's only when every rank's loss weighs the same.
  if (equal_shares_ && rows * group_->size() != total_rows) {
    return absl::FailedPreconditionError(absl::StrCat(
        "backward all-reduce: ", group_->Describe(), " has ", rows, " of the global batch's ",
        total_rows, " rows; a BatchNorm synchronised over the ranks needs every rank to have ",
        "the same share: a batch that ", group_->size(), " divides"));
  }
  *weight_.data<double>() = static_cast<double>(rows) / static_cast<double>(total_rows);
  return absl::OkStatus();
}

}  // namespace tc::dist
