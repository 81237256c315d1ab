// Attention fusion: finds attention written out as ops and makes it one
// sdpa node (graph/ops/attention.cc), whose kernel never stores the [S, T]
// scores and whose backward saves only each row's log-sum-exp. The pattern,
// over q [..., S, D], k [..., T, D], v [..., T, Dv] with equal batch dims:
//
//   %s = matmul(%q, permute(%k){last two dims swapped})   (or any %kt [..., D, T])
//   %s2 = mul(%s, full{value=c}) | div(%s, full{value=c})  (optional, either side)
//   %s3 = add(%s2, %m1) ... add(..., %mn)                  (optional masks, either side)
//   %p = softmax(%s3){dim=-1}
//   %o = matmul(%p, %v)
//     ->
//   %o, %lse = sdpa(%q, %k, %v, %m1 + ... + %mn){scale=c (or 1/c), causal=false}
//
// Every intermediate must be read only by the next step (a score matrix
// that anything else reads stays as it is), f32 or f64. Runs on the captured
// forward graph, before autodiff.
#ifndef TENSORCUT_GRAPH_PASSES_FUSE_ATTENTION_H_
#define TENSORCUT_GRAPH_PASSES_FUSE_ATTENTION_H_

#include "graph/pass.h"

namespace tc {

Pass FuseAttention();

}  // namespace tc

#endif  // TENSORCUT_GRAPH_PASSES_FUSE_ATTENTION_H_
