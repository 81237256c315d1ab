// The processes of a data-parallel job and their collectives, over MPI
// (Debian's OpenMPI): the group every rank started under `mpirun`, as
// torch.distributed's default process group. Collectives work on tensors in
// place, whatever their strides, and fail with a status, never a hang: a
// collective that does not complete within the group's timeout is a
// DeadlineExceededError naming this rank and the collective. Such a
// collective may still be pending, so the group is then broken: every later
// collective returns the same error, and the process should end: at exit
// it then aborts the job (MPI_Abort), which ends the other ranks too.
//
//   absl::StatusOr<dist::ProcessGroup*> group = dist::ProcessGroup::World();
//   (*group)->Broadcast(parameters, /*root=*/0);  // every rank: rank 0's values
//   (*group)->AllReduceSum(gradients);             // every rank: the sum over ranks
//
// Not under mpirun, World is the group of this one process and collectives
// copy nothing. The first call to World initialises MPI (funneled: only
// the thread that called it may use the group) and MPI is finalised at exit.
//
// World is also the collective group "world" of compiled graphs
// (runtime/collectives.h): a backward's all_reduce_start starts one bucket's
// MPI_Iallreduce, and its all_reduce_wait waits for it, under the same
// timeout. OpenMPI runs the non-blocking all-reduce as a ring (bandwidth-
// optimal for buckets of megabytes) unless the environment sets
// OMPI_MCA_coll_libnbc_iallreduce_algorithm.
#ifndef TENSORCUT_DIST_PROCESS_GROUP_H_
#define TENSORCUT_DIST_PROCESS_GROUP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "runtime/collectives.h"
#include "runtime/tensor.h"

namespace tc::dist {

struct ProcessGroupOptions {
  // How long a collective may wait for the other ranks.
  absl::Duration timeout = absl::Minutes(5);
  // All-reduce packs tensors into buckets of about this many bytes (as DDP's
  // bucket_cap_mb), one non-blocking all-reduce each.
  int64_t bucket_bytes = 25 << 20;
  // A compiled backward's first bucket (codegen/insert_all_reduce.h) closes
  // sooner, so that its sum starts early (DDP's first bucket is 1 MB too).
  int64_t first_bucket_bytes = 1 << 20;
};

// What the group's compiled all-reduces did since the last ResetStats.
struct CollectiveStats {
  int64_t all_reduces = 0;  // buckets started
  int64_t bytes = 0;        // their bytes
  // Spent in their waits: the communication a backward did not hide.
  absl::Duration waited;
};

class ProcessGroup : public CollectiveGroup {
 public:
  // The name graphs' collectives give the group (ops' `group` attribute).
  static constexpr absl::string_view kName = "world";

  // The job's ranks: MPI_COMM_WORLD. The options apply from the first call;
  // later calls return the same group.
  static absl::StatusOr<ProcessGroup*> World(const ProcessGroupOptions& options = {});

  int rank() const { return rank_; }
  int size() const { return size_; }
  const ProcessGroupOptions& options() const { return options_; }
  // "rank 1 of 2": for messages.
  std::string Describe() const;

  // Every rank's tensors take `root`'s values. The tensors must agree in
  // number, dtype and shape on every rank (checked: a mismatch is an error on
  // every rank, not a wrong answer).
  absl::Status Broadcast(absl::Span<const Tensor> tensors, int root);
  // Every rank's tensors become the elementwise sum over ranks of each
  // rank's tensors times its `weight` (f32, f64 or i64), bucketed; the same
  // agreement as Broadcast.
  absl::Status AllReduceSum(absl::Span<const Tensor> tensors, double weight = 1.0);

  // The collective group of compiled graphs: one bucket's sum over the
  // ranks, started, then waited for (every rank must start the same
  // buckets, checked the first time each size is seen).
  absl::Status StartAllReduce(const Tensor& bucket) override;
  absl::Status WaitAllReduce(const Tensor& bucket) override;
  const CollectiveStats& stats() const { return stats_; }
  void ResetStats() { stats_ = {}; }

  // Says this rank will join no more collectives (it failed and is about
  // to exit): at exit the job is then aborted rather than finalized, so that
  // the other ranks end at once instead of at their timeout.
  void Leave();

  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

 private:
  class Buckets;
  class InFlight;
  ProcessGroup(int rank, int size, ProcessGroupOptions options);
  ~ProcessGroup() override;
  // Makes every later collective return `status` (a collective that may
  // still be pending), and the job abort at exit; returns it.
  absl::Status Break(absl::Status status);
  // Fails on every rank unless every rank passed the same `signature`.
  absl::Status CheckAgreement(absl::string_view collective, const std::string& signature);
  // Broadcast from `root`, or (root < 0) the weighted all-reduce.
  absl::Status Collective(absl::string_view name, absl::Span<const Tensor> tensors, double weight,
                          int root);

  int rank_ = 0, size_ = 1;
  ProcessGroupOptions options_;
  std::unique_ptr<Buckets> buckets_;     // reused from call to call
  std::unique_ptr<InFlight> in_flight_;  // the compiled all-reduces started
  absl::Status broken_;                  // a collective's timeout, returned from then on
  CollectiveStats stats_;
};

}  // namespace tc::dist

#endif  // TENSORCUT_DIST_PROCESS_GROUP_H_
