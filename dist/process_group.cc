#include "dist/process_group.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <limits>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "runtime/kernels/strided.h"

namespace tc::dist {
namespace {

// Whether a launcher (mpirun, or Slurm's srun with PMIx) started this
// process as one rank of a job. Outside one, MPI is not initialised at all.
bool LaunchedAsRank() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

absl::Status MpiError(absl::string_view what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return absl::InternalError(absl::StrCat(what, ": MPI error: ", absl::string_view(text, length)));
}

absl::StatusOr<MPI_Datatype> MpiType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return MPI_FLOAT;
    case DType::kF64:
      return MPI_DOUBLE;
    case DType::kI64:
      return MPI_INT64_T;
    case DType::kI32:
      return MPI_INT32_T;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("collectives take f32, f64, i64 or i32 tensors, got ", DTypeName(dtype)));
  }
}

// Set when a collective timed out: its request may never complete, and
// MPI_Finalize would wait for it.
std::atomic<bool> any_group_broken{false};

// At exit: MPI_Finalize, or with a collective left pending, MPI_Abort, which
// ends the job's other ranks too rather than leaving them waiting.
void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (any_group_broken) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
}

}  // namespace

// Tensors packed into dense per-dtype buckets of about bucket_bytes, each
// reduced or broadcast by one non-blocking collective. The buffers are kept:
// the same tensors every step reuse them.
class ProcessGroup::Buckets {
 public:
  struct Bucket {
    DType dtype;
    size_t first = 0, end = 0;  // the tensors it holds
    int64_t elements = 0;
    Tensor buffer;  // dense, [elements]
  };

  // Cuts `tensors` into buckets (a tensor is never split), keeping the
  // previous call's buffers when the cut is the same.
  std::vector<Bucket>& Layout(absl::Span<const Tensor> tensors, int64_t bucket_bytes) {
    std::vector<Bucket> cut;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      const int64_t item = ItemSize(t.dtype());
      if (cut.empty() || cut.back().dtype != t.dtype() ||
          (cut.back().elements + t.numel()) * item > bucket_bytes) {
        cut.push_back({t.dtype(), i, i, 0, Tensor()});
      }
      cut.back().end = i + 1;
      cut.back().elements += t.numel();
    }
    if (!SameCut(cut)) {
      for (Bucket& b : cut) b.buffer = Tensor::Uninitialized({b.elements}, b.dtype);
      buckets_ = std::move(cut);
    }
    return buckets_;
  }

  // Copies `tensors[bucket.first, bucket.end)` into the bucket's buffer, or
  // back out of it (`out`), through their strides.
  static void Pack(absl::Span<const Tensor> tensors, const Bucket& bucket, bool out) {
    int64_t offset = 0;
    for (size_t i = bucket.first; i < bucket.end; ++i) {
      const Tensor& t = tensors[i];
      const Tensor flat = bucket.buffer.slice(0, offset, offset + t.numel()).reshape(t.shape());
      out ? kernels::CopyStrided(flat, t) : kernels::CopyStrided(t, flat);
      offset += t.numel();
    }
  }

 private:
  bool SameCut(const std::vector<Bucket>& cut) const {
    if (cut.size() != buckets_.size()) return false;
    for (size_t b = 0; b < cut.size(); ++b) {
      const Bucket &x = cut[b], &y = buckets_[b];
      if (x.dtype != y.dtype || x.first != y.first || x.end != y.end || x.elements != y.elements) {
        return false;
      }
    }
    return true;
  }

  std::vector<Bucket> buckets_;
};

// The compiled all-reduces started and not yet waited for, by their
// bucket's memory (the bucket kept, so that MPI never writes into memory
// freed meanwhile), and the bucket types every rank agreed on.
class ProcessGroup::InFlight {
 public:
  struct Started {
    MPI_Request request;
    Tensor bucket;
  };
  absl::flat_hash_map<const void*, Started> started;
  absl::flat_hash_set<std::pair<DType, int64_t>> agreed;  // dtype and elements
};

namespace {

// dense *= weight, in its dtype.
void Scale(const Tensor& dense, double weight) {
  const auto scale = [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    for (int64_t i = 0; i < dense.numel(); ++i) p[i] = static_cast<T>(p[i] * weight);
  };
  switch (dense.dtype()) {
    case DType::kF32:
      return scale(dense.data<float>());
    case DType::kF64:
      return scale(dense.data<double>());
    case DType::kI32:
      return scale(dense.data<int32_t>());
    default:
      return scale(dense.data<int64_t>());
  }
}

// After a collective timed out: which other ranks are still there. Each
// rank that times out sends every other a message and listens for theirs
// for a while (ranks waiting in the same collective time out within about
// a step of each other); the ranks not heard from are returned ("rank 1",
// "ranks 1, 3"), or "" when every rank answered. A rank that answers
// nothing was stopped, killed, or is still computing.
std::string SilentRanks(const ProcessGroup& group) {
  constexpr int kRollCallTag = 7411;
  const absl::Duration listen =
      std::clamp(group.options().timeout / 10, absl::Seconds(1), absl::Seconds(10));
  const int me = group.rank();
  // Static: a send to a rank that is gone may outlive this call.
  static const int kHere = 1;
  std::vector<MPI_Request> sends;
  for (int r = 0; r < group.size(); ++r) {
    if (r == me) continue;
    MPI_Request request;
    if (MPI_Isend(&kHere, 1, MPI_INT, r, kRollCallTag, MPI_COMM_WORLD, &request) == MPI_SUCCESS) {
      sends.push_back(request);
    }
  }
  std::vector<bool> heard(group.size(), false);
  heard[me] = true;
  const absl::Time until = absl::Now() + listen;
  while (absl::Now() < until &&
         !std::all_of(heard.begin(), heard.end(), [](bool h) { return h; })) {
    int arrived = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kRollCallTag, MPI_COMM_WORLD, &arrived, &status) !=
        MPI_SUCCESS) {
      break;
    }
    if (!arrived) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    int here = 0;
    MPI_Recv(&here, 1, MPI_INT, status.MPI_SOURCE, kRollCallTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    heard[status.MPI_SOURCE] = true;
  }
  // A send to a rank that is gone may never complete; the job ends anyway.
  for (MPI_Request& request : sends) MPI_Request_free(&request);
  std::vector<int> silent;
  for (int r = 0; r < group.size(); ++r) {
    if (!heard[r]) silent.push_back(r);
  }
  if (silent.empty()) return "";
  return absl::StrCat(silent.size() == 1 ? "rank " : "ranks ", absl::StrJoin(silent, ", "));
}

// Waits for `requests`, polling, until they complete or `timeout` passes.
absl::Status WaitAll(std::vector<MPI_Request>& requests, absl::string_view collective,
                     const ProcessGroup& group) {
  const absl::Time deadline = absl::Now() + group.options().timeout;
  for (int polls = 0;; ++polls) {
    int done = 0;
    const int code =
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS) return MpiError(collective, code);
    if (done) return absl::OkStatus();
    if (absl::Now() > deadline) {
      const std::string silent = group.size() > 1 ? SilentRanks(group) : "";
      return absl::DeadlineExceededError(absl::StrCat(
          collective, ": ", group.Describe(), " waited ",
          absl::FormatDuration(group.options().timeout), " for the other ranks: ",
          silent.empty()
              ? "every rank answered, so some wait in another collective"
              : absl::StrCat(silent, " did not answer (stopped, failed, or still computing)")));
    }
    // Spin for the first polls (a collective of two ranks on one machine
    // takes microseconds), then let the core go.
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

ProcessGroup::ProcessGroup(int rank, int size, ProcessGroupOptions options)
    : rank_(rank),
      size_(size),
      options_(options),
      buckets_(std::make_unique<Buckets>()),
      in_flight_(std::make_unique<InFlight>()) {}

ProcessGroup::~ProcessGroup() = default;

absl::StatusOr<ProcessGroup*> ProcessGroup::World(const ProcessGroupOptions& options) {
  static absl::StatusOr<ProcessGroup*>* const world = [&]() -> absl::StatusOr<ProcessGroup*>* {
    const auto registered = [](ProcessGroup* group) {
      RegisterCollectiveGroup(kName, group);
      return new absl::StatusOr<ProcessGroup*>(group);
    };
    if (!LaunchedAsRank()) return registered(new ProcessGroup(0, 1, options));
    // Buckets are megabytes: OpenMPI's non-blocking all-reduce then runs
    // 2-2.5x faster as a ring (reduce-scatter, then all-gather; measured
    // on two ranks of one machine) than with the algorithm it picks by
    // default. A setting in the environment stays.
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
    int provided = 0;
    if (const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        code != MPI_SUCCESS) {
      return new absl::StatusOr<ProcessGroup*>(MpiError("process group", code));
    }
    std::atexit(FinalizeAtExit);
    // Errors come back as codes, which become statuses, rather than
    // ending the job from inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return registered(new ProcessGroup(rank, size, options));
  }();
  return *world;
}

absl::Status ProcessGroup::Break(absl::Status status) {
  broken_ = status;
  any_group_broken = true;
  return status;
}

void ProcessGroup::Leave() {
  if (size_ > 1) any_group_broken = true;
}

std::string ProcessGroup::Describe() const { return absl::StrCat("rank ", rank_, " of ", size_); }

absl::Status ProcessGroup::CheckAgreement(absl::string_view collective,
                                          const std::string& signature) {
  // The minimum over ranks of (h, ~h) is (min h, ~max h): one all-reduce
  // tells every rank whether all hashes are equal. std::hash of a string is
  // the same in every process of one binary.
  const int64_t h = static_cast<int64_t>(std::hash<std::string>{}(signature));
  int64_t pair[2] = {h, ~h};
  std::vector<MPI_Request> request(1);
  if (const int code =
          MPI_Iallreduce(MPI_IN_PLACE, pair, 2, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD, &request[0]);
      code != MPI_SUCCESS) {
    return MpiError(collective, code);
  }
  if (absl::Status s = WaitAll(request, collective, *this); !s.ok()) return Break(s);
  if (pair[0] != ~pair[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat(collective, ": the ranks passed different tensors; ", Describe(), " passed ",
                     signature.empty() ? "none" : signature));
  }
  return absl::OkStatus();
}

absl::Status ProcessGroup::Broadcast(absl::Span<const Tensor> tensors, int root) {
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast: root ", root, " is not a rank of ", size_));
  }
  return Collective("broadcast", tensors, 1.0, root);
}

absl::Status ProcessGroup::AllReduceSum(absl::Span<const Tensor> tensors, double weight) {
  return Collective("all-reduce", tensors, weight, -1);
}

absl::Status ProcessGroup::Collective(absl::string_view name, absl::Span<const Tensor> tensors,
                                      double weight, int root) {
  std::string signature;
  for (const Tensor& t : tensors) {
    if (!t.defined())
      return absl::InvalidArgumentError(absl::StrCat(name, ": an undefined tensor"));
    TC_RETURN_IF_ERROR(MpiType(t.dtype()).status());
    absl::StrAppend(&signature, signature.empty() ? "" : ", ", t.type().ToString());
  }
  if (size_ == 1) {
    if (weight == 1.0) return absl::OkStatus();
    for (const Tensor& t : tensors) {
      const Tensor dense = t.contiguous().clone();
      Scale(dense, weight);
      kernels::CopyStrided(dense, t);
    }
    return absl::OkStatus();
  }
  TC_RETURN_IF_ERROR(broken_);
  TC_RETURN_IF_ERROR(CheckAgreement(name, signature));
  std::vector<Buckets::Bucket>& buckets = buckets_->Layout(tensors, options_.bucket_bytes);
  // Reused: a step of the same tensors allocates nothing here.
  thread_local std::vector<MPI_Request> requests;
  requests.clear();
  for (Buckets::Bucket& bucket : buckets) {
    if (bucket.elements > std::numeric_limits<int>::max()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": a tensor of ", bucket.elements,
                                                     " elements; at most 2^31 - 1 per collective"));
    }
    if (root < 0 || rank_ == root) Buckets::Pack(tensors, bucket, /*out=*/false);
    if (weight != 1.0) Scale(bucket.buffer, weight);
    const MPI_Datatype type = *MpiType(bucket.dtype);
    const int count = static_cast<int>(bucket.elements);
    MPI_Request request;
    const int code = root < 0 ? MPI_Iallreduce(MPI_IN_PLACE, bucket.buffer.raw_data(), count, type,
                                               MPI_SUM, MPI_COMM_WORLD, &request)
                              : MPI_Ibcast(bucket.buffer.raw_data(), count, type, root,
                                           MPI_COMM_WORLD, &request);
    if (code != MPI_SUCCESS) return MpiError(name, code);
    requests.push_back(request);
  }
  if (absl::Status s = WaitAll(requests, name, *this); !s.ok()) return Break(s);
  for (const Buckets::Bucket& bucket : buckets) Buckets::Pack(tensors, bucket, /*out=*/true);
  return absl::OkStatus();
}

absl::Status ProcessGroup::StartAllReduce(const Tensor& bucket) {
  ++stats_.all_reduces;
  stats_.bytes += bucket.bytes();
  if (size_ == 1) return absl::OkStatus();
  TC_RETURN_IF_ERROR(broken_);
  TC_ASSIGN_OR_RETURN(const MPI_Datatype type, MpiType(bucket.dtype()));
  if (bucket.numel() > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a bucket of ", bucket.numel(), " elements; at most 2^31 - 1 per collective"));
  }
  if (in_flight_->started.contains(bucket.raw_data())) {
    // A run failed between this bucket's start and its wait: the sum may
    // still be writing into memory this run uses.
    return Break(absl::FailedPreconditionError(
        "an all-reduce was started on this bucket and never waited for (a run failed between "
        "them); the group can no longer be used"));
  }
  // Checked the first time a bucket of this type is seen, not every step.
  const std::pair<DType, int64_t> type_key{bucket.dtype(), bucket.numel()};
  if (!in_flight_->agreed.contains(type_key)) {
    TC_RETURN_IF_ERROR(CheckAgreement("all-reduce", bucket.type().ToString()));
    in_flight_->agreed.insert(type_key);
  }
  MPI_Request request;
  if (const int code =
          MPI_Iallreduce(MPI_IN_PLACE, bucket.raw_data(), static_cast<int>(bucket.numel()), type,
                         MPI_SUM, MPI_COMM_WORLD, &request);
      code != MPI_SUCCESS) {
    return MpiError("all-reduce", code);
  }
  // OpenMPI moves a non-blocking collective on inside MPI calls only: a
  // test here lets the buckets started earlier make progress (a request
  // that completes becomes MPI_REQUEST_NULL, which a wait then passes).
  int done = 0;
  const int code = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  in_flight_->started[bucket.raw_data()] = {request, bucket};
  if (code != MPI_SUCCESS) return MpiError("all-reduce", code);
  return absl::OkStatus();
}

absl::Status ProcessGroup::WaitAllReduce(const Tensor& bucket) {
  if (size_ == 1) return absl::OkStatus();
  auto it = in_flight_->started.find(bucket.raw_data());
  if (it == in_flight_->started.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no all-reduce was started on this bucket (", bucket.type().ToString(), ")"));
  }
  thread_local std::vector<MPI_Request> request(1);
  request[0] = it->second.request;
  const absl::Time start = absl::Now();
  const absl::Status s = WaitAll(request, "all-reduce", *this);
  stats_.waited += absl::Now() - start;
  if (!s.ok()) return Break(s);  // still pending, maybe: the bucket stays held
  in_flight_->started.erase(it);
  return absl::OkStatus();
}

}  // namespace tc::dist
