// Collectives: ops that the insert-all-reduce pass (codegen/insert_all_reduce.h)
// puts in a data-parallel backward, and SyncBatchNorm in a forward, so that
// the graph shows where it communicates. A start packs its operands into a
// bucket and starts the bucket's sum over the processes of `group`; the wait
// on that bucket completes it. Both are kTraitCollective: no pass merges,
// folds or recomputes them. The gradient of a sum over ranks is a sum over
// ranks (autodiff/vjp/collective.cc).
#include "base/status_macros.h"
#include "graph/ops/families.h"
#include "graph/ops/infer_util.h"
#include "graph/symbolic.h"

namespace tc::ops_internal {
namespace {

// What a bucket may hold: the dtypes every MPI has a sum of.
absl::Status RequireReducible(const TensorType& t, absl::string_view what) {
  if (t.dtype != DType::kF32 && t.dtype != DType::kF64) {
    return Invalid(what, " must be f32 or f64, got ", t.ToString());
  }
  return absl::OkStatus();
}

// (x..., weight: f64[]) -> dtype[total elements of the x].
absl::StatusOr<std::vector<TensorType>> InferAllReduceStart(absl::Span<const TensorType> in,
                                                            const Attrs&) {
  const TensorType& weight = in.back();
  if (weight.dtype != DType::kF64 || weight.rank() != 0) {
    return Invalid("its last operand is the weight, an f64[]; got ", weight.ToString());
  }
  const absl::Span<const TensorType> tensors = in.first(in.size() - 1);
  TC_RETURN_IF_ERROR(RequireSameDType(tensors));
  TC_RETURN_IF_ERROR(RequireReducible(tensors[0], "the tensors"));
  int64_t elements = 0;
  for (const TensorType& t : tensors) {
    if (HasSymbolic(t.shape)) {
      return Invalid("a bucket holds tensors of static shapes; got ", t.ToString());
    }
    elements += NumElements(t.shape);
  }
  return One(tensors[0].dtype, {elements});
}

absl::StatusOr<std::vector<TensorType>> InferAllReduceWait(absl::Span<const TensorType> in,
                                                           const Attrs&) {
  TC_RETURN_IF_ERROR(RequireRank(in[0], 1, "the bucket"));
  TC_RETURN_IF_ERROR(RequireReducible(in[0], "the bucket"));
  return std::vector<TensorType>{in[0]};
}

// A bucket's bytes, read and written once (the network's share is not a
// memory cost).
OpCost BucketCost(absl::Span<const TensorType>, absl::Span<const TensorType> out, const Attrs&) {
  return {0, 2.0 * static_cast<double>(out[0].bytes())};
}

}  // namespace

std::vector<OpDef> CollectiveOpDefs() {
  const std::vector<AttrSpec> group = {{"group", AttrKind::kString}};
  const uint32_t traits = kTraitCollective;
  return {
      {OpKind::kAllReduceStart, "", OpFamily::kCollective, 2, -1, group, traits,
       &InferAllReduceStart, &BucketCost},
      {OpKind::kAllReduceWait, "", OpFamily::kCollective, 1, 1, group, traits, &InferAllReduceWait,
       &BucketCost},
  };
}

}  // namespace tc::ops_internal
