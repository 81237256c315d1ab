#include "dist/data_parallel.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace tc::dist {

absl::Status BroadcastModule(ProcessGroup& group, nn::Module& module, int root) {
  std::vector<Tensor> state;
  for (const auto& [name, t] : module.named_parameters()) state.push_back(t);
  for (const auto& [name, t] : module.named_buffers()) state.push_back(t);
  return group.Broadcast(state, root);
}

std::function<absl::Status(absl::Span<const Tensor>, absl::Span<const Tensor>)> AverageGradients(
    ProcessGroup& group) {
  // The global batch's rows, summed over the ranks: kept, so that a step
  // allocates nothing for it.
  const Tensor rows = Tensor::Uninitialized({1}, DType::kI64);
  return [&group, rows](absl::Span<const Tensor> gradients,
                        absl::Span<const Tensor> batch) -> absl::Status {
    if (batch.empty() || !batch[0].defined()) {
      return absl::InvalidArgumentError("average gradients: a batch without tensors");
    }
    const int64_t own = batch[0].dim() == 0 ? 1 : batch[0].size(0);
    *rows.data<int64_t>() = own;
    TC_RETURN_IF_ERROR(group.AllReduceSum({rows}));
    const int64_t total = *rows.data<int64_t>();
    if (total == 0) {
      return absl::InvalidArgumentError("average gradients: every rank's batch has 0 rows");
    }
    return group.AllReduceSum(gradients, static_cast<double>(own) / static_cast<double>(total));
  };
}

}  // namespace tc::dist
