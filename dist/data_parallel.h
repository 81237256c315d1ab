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
// of the mean loss over the whole batch. BatchNorm normalises by each
// rank's batch, and its running statistics stay per rank, unless it is
// synchronised (nn::ConvertSyncBatchNorm), which needs equal shares.
//
// AverageGradients averages after the backward (TrainStepOptions::
// reduce_gradients). BackwardAllReduce puts the average into the compiled
// backward instead (TrainStepOptions::backward_rewriter, or the staged
// pipeline as below), as DDP's reducer overlaps it:
// the insert-all-reduce pass (codegen/insert_all_reduce.h) sums the
// parameters' gradients in buckets, each started as soon as its last
// gradient is written, while the rest of the backward runs.
//
//   partition::PartitionResult part = pipeline.partition(fn, joint).value();
//   dist::BackwardAllReduce reduce =
//       dist::BackwardAllReduce::Insert(*group, joint, part).value();
//   CompiledForward fw = pipeline.fw_compile(codegen::fusing(), part).value();
//   CompiledBackward bw = pipeline.bw_compile(codegen::fusing(), part, fw).value();
//   bw.run = reduce.Bind(bw.run);
//   Function step = pipeline.make_autograd_function(fw, bw, part).value();
//   // each step: reduce.SetBatch(batch) (or SetShare), then step(inputs) and
//   // the loss's backward()
#ifndef TENSORCUT_DIST_DATA_PARALLEL_H_
#define TENSORCUT_DIST_DATA_PARALLEL_H_

#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "autodiff/joint_graph.h"
#include "codegen/executable.h"
#include "dist/process_group.h"
#include "nn/module.h"
#include "partition/partition.h"
#include "pipeline/train_step.h"
#include "runtime/tensor.h"

namespace tc::dist {

// Every rank's parameters and buffers take `root`'s values.
absl::Status BroadcastModule(ProcessGroup& group, nn::Module& module, int root = 0);

// A TrainStepOptions::reduce_gradients: the gradients' average over the
// group's ranks, weighted by the rows of each rank's batch (dim 0 of its
// first tensor). `group` must outlive it.
std::function<absl::Status(absl::Span<const Tensor> gradients, absl::Span<const Tensor> batch)>
AverageGradients(ProcessGroup& group);

// For a TrainStep: TrainStepOptions::backward_rewriter =
// std::make_shared<dist::BackwardAllReduce>(*group).
class BackwardAllReduce : public BackwardRewriter {
 public:
  explicit BackwardAllReduce(ProcessGroup& group);
  // A BackwardAllReduce that rewrote `part` (Rewrite).
  static absl::StatusOr<BackwardAllReduce> Insert(ProcessGroup& group, const JointGraph& joint,
                                                  partition::PartitionResult& part);
  // Runs the insert-all-reduce pass over `part.backward`'s gradients of
  // `joint`'s parameters, in the group's bucket sizes. The backward then
  // takes one more argument, last: the gradients' weight, which Bind binds
  // (the same tensor for every backward rewritten).
  absl::Status Rewrite(const JointGraph& joint, partition::PartitionResult& part) override;
  // The backward compiled from the part, taking the arguments it took
  // before the pass: the weight is bound.
  codegen::Executable Bind(codegen::Executable backward) const override;
  // SetBatch.
  absl::Status Prepare(absl::Span<const Tensor> batch) override { return SetBatch(batch); }
  // Before each backward: the weight becomes this rank's share of the
  // global batch, its rows (dim 0 of batch[0]) over every rank's (one small
  // all-reduce).
  absl::Status SetBatch(absl::Span<const Tensor> batch);
  // The same from what the caller knows: this rank's `rows` of a global
  // batch of `total_rows` (a DataLoader's share of it), with no all-reduce.
  // With a synchronised BatchNorm in the model, every rank's share must be
  // the same (a FailedPreconditionError otherwise): the gradient through the
  // statistics summed over the ranks weighs each rank's loss alike.
  absl::Status SetShare(int64_t rows, int64_t total_rows);
  // How many buckets of gradients the backward sums (SyncBatchNorm's
  // all-reduces not counted).
  int buckets() const { return buckets_; }

 private:
  ProcessGroup* group_;
  Tensor weight_;  // f64[]
  Tensor rows_;    // i64[1], summed over the ranks
  int buckets_ = 0;
  bool binds_weight_ = false;  // the last rewrite added the weight
  bool equal_shares_ = false;  // a synchronised BatchNorm needs them
};

}  // namespace tc::dist

#endif  // TENSORCUT_DIST_DATA_PARALLEL_H_
