// Normalisation layers, as torch.nn's BatchNorm1d, BatchNorm2d, LayerNorm and
// GroupNorm: the same arguments, defaults, FQNs and formulas.
//
//   nn::BatchNorm1d bn(64);            // over [N, 64] or [N, 64, L]
//   nn::GroupNorm gn(8, 64);           // 8 groups of 8 channels, [N, 64, *]
//   nn::LayerNorm ln({4, 16});         // over the trailing dims [4, 16]
#ifndef TENSORCUT_NN_NORMALIZATION_H_
#define TENSORCUT_NN_NORMALIZATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"

namespace tc::nn {

// Batch normalisation per channel (dim 1) over every other dim. With
// `affine`, parameters weight (ones) and bias (zeros); with
// `track_running_stats`, buffers running_mean (zeros), running_var (ones)
// and num_batches_tracked (i64 scalar). Training normalises by the batch
// statistics and, when tracking, updates the buffers outside autograd:
//   running_mean = (1 - momentum) running_mean + momentum mean
//   running_var  = (1 - momentum) running_var  + momentum var * n / (n - 1)
// with n the values per channel; momentum std::nullopt (PyTorch's None) is
// the cumulative average, momentum = 1 / num_batches_tracked after the
// count. Eval normalises by the running statistics (by the batch's when not
// tracking).
//
// Data-parallel training (dist/data_parallel.h) normalises each rank's batch
// by its own statistics, as PyTorch's DDP does. With a sync group
// (set_sync_group, or ConvertSyncBatchNorm over a whole model) training
// normalises by the statistics of every rank's batch together, as
// torch.nn.SyncBatchNorm: the per-channel sums and counts, then the sums of
// squared deviations from the global mean, are summed over the group
// (all_reduce_sum, in the forward graph; the backward sums their gradients
// the same way), so that ranks with equal shares of a global batch train as
// one process on all of it.
class BatchNorm : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;
  // The process group (runtime/collectives.h) whose ranks' batches training
  // normalises together: "world" for an MPI job's; "" (the default): this
  // rank's batch alone.
  void set_sync_group(std::string group) { sync_group_ = std::move(group); }
  const std::string& sync_group() const { return sync_group_; }

  const Tensor& weight() const { return weight_; }  // undefined without affine
  const Tensor& bias() const { return bias_; }
  const Tensor& running_mean() const { return running_mean_; }  // undefined when not tracking
  const Tensor& running_var() const { return running_var_; }
  const Tensor& num_batches_tracked() const { return num_batches_tracked_; }

 protected:
  BatchNorm(std::string layer, std::vector<int64_t> ranks, int64_t num_features, double eps,
            std::optional<double> momentum, bool affine, bool track_running_stats);

 private:
  Tensor Normalize4d(const Tensor& x);
  // Training with a sync group: by the group's statistics.
  Tensor SyncNormalize4d(const Tensor& x, const Tensor& w, const Tensor& b);

  std::string layer_;
  std::vector<int64_t> ranks_;  // the input ranks the layer takes
  int64_t num_features_;
  double eps_;
  std::optional<double> momentum_;
  std::string sync_group_;
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
};

// Gives every BatchNorm in `module` (itself included) the sync group
// `group`, as torch.nn.SyncBatchNorm.convert_sync_batchnorm; returns how
// many it changed.
int ConvertSyncBatchNorm(Module& module, const std::string& group);

// Over [N, C] or [N, C, L].
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm("BatchNorm1d", {2, 3}, num_features, eps, momentum, affine, track_running_stats) {
  }
};

// Over [N, C, H, W].
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm("BatchNorm2d", {4}, num_features, eps, momentum, affine, track_running_stats) {}
};

// Layer normalisation over the trailing dims `normalized_shape`; with
// `elementwise_affine`, weight (ones) and bias (zeros) of that shape.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                     bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  std::vector<int64_t> normalized_shape_;
  double eps_;
  Tensor weight_, bias_;
};

// Over [N, C, *]: the C channels split into num_groups groups, each sample's
// group normalised by its own mean and biased variance; with `affine`, a
// per-channel weight (ones) and bias (zeros).
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  int64_t num_groups_, num_channels_;
  double eps_;
  Tensor weight_, bias_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_NORMALIZATION_H_
