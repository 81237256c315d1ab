// The groups of processes that a compiled graph's collectives run over
// (all_reduce_start and all_reduce_wait, graph/ops/collective.cc), found by
// the name in the ops' `group` attribute. runtime/ knows no transport:
// dist/process_group.h registers "world", the processes of an MPI job;
// "self", this process alone, is always there, and its sums are the
// operands themselves (a one-process run of a data-parallel graph).
//
//   class MyGroup : public CollectiveGroup { ... };
//   RegisterCollectiveGroup("mine", &my_group);  // all_reduce_start(...){group="mine"}
//
// A start hands its bucket to StartAllReduce and the wait on that bucket to
// WaitAllReduce, from the thread running the graph.
#ifndef TENSORCUT_RUNTIME_COLLECTIVES_H_
#define TENSORCUT_RUNTIME_COLLECTIVES_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/tensor.h"

namespace tc {

class CollectiveGroup {
 public:
  virtual ~CollectiveGroup() = default;
  // Starts replacing `bucket` (dense, rank 1) by its elementwise sum over
  // the group's processes. The bucket stays untouched until the matching
  // WaitAllReduce returns.
  virtual absl::Status StartAllReduce(const Tensor& bucket) = 0;
  // Returns once the sum started on `bucket` (the same memory) is complete;
  // an error when none was started on it.
  virtual absl::Status WaitAllReduce(const Tensor& bucket) = 0;
};

// Makes `group` the one named `name`, replacing any before; `group` must
// outlive every graph that runs collectives over it.
void RegisterCollectiveGroup(absl::string_view name, CollectiveGroup* group);
// The group named `name`, or a NotFoundError saying which groups there are.
absl::StatusOr<CollectiveGroup*> FindCollectiveGroup(absl::string_view name);

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_COLLECTIVES_H_
