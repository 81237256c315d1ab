// insert-all-reduce: a data-parallel backward's gradients summed over a
// process group (runtime/collectives.h) as ops of the graph, in buckets, as
// PyTorch DDP's reducer sums them, so that the printout shows where the
// backward communicates.
//
//   RunPasses(backward, {InsertAllReduce({.group = "world", .outputs = {0, 1, 2}})});
//
//   graph(..., %grad_weight: f64[]) {
//     %g1: f32[64] = ...
//     %b0: f32[64] = all_reduce_start(%g1, %grad_weight) {group="world"}  # bucket 0
//     %g0: f32[64,784] = ...
//     ...
//     %s0: f32[64] = all_reduce_wait(%b0) {group="world"}  # bucket 0
//     return (reshape(slice(%s1 ...)), %s0, ...)
//   }
//
// The chosen outputs (parameters' gradients: f32 or f64 of static shapes)
// go into buckets in the order the backward produces them, each dtype apart:
// the first bucket closes at `first_bucket_bytes` (small, so the first sum
// starts early), the others at `bucket_bytes`; a tensor is never split. A
// bucket's start stands right after the node that produces its last
// gradient, so its sum runs while the rest of the backward does; every wait
// stands at the end, and each output becomes a view of its bucket. The
// pass adds one placeholder, last: %grad_weight, the f64[] every gradient
// is multiplied by as it is packed (a rank's share of the global batch).
#ifndef TENSORCUT_CODEGEN_INSERT_ALL_REDUCE_H_
#define TENSORCUT_CODEGEN_INSERT_ALL_REDUCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/pass.h"

namespace tc::codegen {

struct AllReduceOptions {
  std::string group = "world";
  std::vector<int> outputs;  // indices into the graph's outputs
  int64_t bucket_bytes = 25 << 20;
  int64_t first_bucket_bytes = 1 << 20;
};

Pass InsertAllReduce(AllReduceOptions options);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_INSERT_ALL_REDUCE_H_
