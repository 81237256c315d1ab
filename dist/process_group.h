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
#include "runtime/tensor.h"

namespace tc::dist {

struct ProcessGroupOptions {
  // How long a collective may wait for the other ranks.
  absl::Duration timeout = absl::Minutes(5);
  // All-reduce packs tensors into buckets of about this many bytes (as DDP's
  // bucket_cap_mb), one non-blocking all-reduce each.
  int64_t bucket_bytes = 25 << 20;
};

class ProcessGroup {
 public:
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

  // Says this rank will join no more collectives (it failed and is about
  // to exit): at exit the job is then aborted rather than finalized, so that
  // the other ranks end at once instead of at their timeout.
  void Leave();

  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

 private:
  class Buckets;
  ProcessGroup(int rank, int size, ProcessGroupOptions options);
  ~ProcessGroup();
  // Fails on every rank unless every rank passed the same `signature`.
  absl::Status CheckAgreement(absl::string_view collective, const std::string& signature);
  // Broadcast from `root`, or (root < 0) the weighted all-reduce.
  absl::Status Collective(absl::string_view name, absl::Span<const Tensor> tensors, double weight,
                          int root);

  int rank_ = 0, size_ = 1;
  ProcessGroupOptions options_;
  std::unique_ptr<Buckets> buckets_;  // reused from call to call
  absl::Status broken_;               // a collective's timeout, returned from then on
};

}  // namespace tc::dist

#endif  // TENSORCUT_DIST_PROCESS_GROUP_H_
