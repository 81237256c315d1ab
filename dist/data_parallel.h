// Data-parallel training over a process group (dist/process_group.h), as
// PyTorch's DistributedDataParallel: every rank starts from rank 0's
// parameters and buffers, trains on its share of each global batch
// (nn::DataLoaderOptions::rank and ranks), and averages the gradients over
// the ranks before its optimizer steps, so that every rank stays identical.
//
//   dist::ProcessGroup* group = dist::ProcessGroup::World().value();
//   TC_RETURN_IF_ERROR(dist::BroadcastModule(*group, model));
//   nn::DataLoader loader(data, {.batch_size = 128, .rank = group->rank(),
//                                .ranks = group->size()});
//   TrainStepOptions options;
//   options.reduce_gradients = dist::AverageGradients(*group);
//   auto step = TrainStep::Create(model, loss, inputs, targets, sgd, options).value();
//
// The average weights each rank's gradients by its share of the global
// batch's rows, so a partial batch split unevenly still gives the gradient
// of the mean loss over the whole batch. BatchNorm's running statistics
// stay per rank.
#ifndef TENSORCUT_DIST_DATA_PARALLEL_H_
#define TENSORCUT_DIST_DATA_PARALLEL_H_

#include <functional>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "dist/process_group.h"
#include "nn/module.h"
#include "runtime/tensor.h"

namespace tc::dist {

// Every rank's parameters and buffers take `root`'s values.
absl::Status BroadcastModule(ProcessGroup& group, nn::Module& module, int root = 0);

// A TrainStepOptions::reduce_gradients: the gradients' average over the
// group's ranks, weighted by the rows of each rank's batch (dim 0 of its
// first tensor). `group` must outlive it.
std::function<absl::Status(absl::Span<const Tensor> gradients, absl::Span<const Tensor> batch)>
AverageGradients(ProcessGroup& group);

}  // namespace tc::dist

#endif  // TENSORCUT_DIST_DATA_PARALLEL_H_
