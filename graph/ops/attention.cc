// Scaled dot-product attention and its backward (family nn):
//
//   sdpa(q [..., S, D], k [..., T, D], v [..., T, Dv][, mask]){scale, causal}
//     -> out [..., S, Dv], lse [..., S]
//   out = softmax(q k^T * scale + M) v, lse = log(sum(exp(q k^T * scale + M)))
//   per row, where M is the mask (bool: true keys take part, false ones get
//   -inf; floating, of q's dtype: added), broadcast to [..., S, T], plus -inf
//   above the diagonal (key j > query i) when causal.
//   sdpa_backward(grad, q, k, v, out, lse[, mask]){scale, causal} -> dq, dk, dv
//
// The batch dims [...] of q, k and v are equal. lse is what the backward
// needs besides the operands and out: the probabilities are recomputed from
// it block by block, never stored (runtime/kernels/attention.cc).
#include "base/status_macros.h"
#include "graph/ops/families.h"
#include "graph/ops/infer_util.h"

namespace tc::ops_internal {
namespace {

// The checks both ops share: q, k, v and the mask; returns the scores' shape
// [..., S, T].
absl::StatusOr<Shape> AttentionScores(const TensorType& q, const TensorType& k, const TensorType& v,
                                      const TensorType* mask) {
  TC_RETURN_IF_ERROR(RequireSameDType({q, k, v}));
  TC_RETURN_IF_ERROR(RequireFloating(q, "query"));
  const size_t rank = q.shape.size();
  if (rank < 2 || k.shape.size() != rank || v.shape.size() != rank) {
    return Invalid(
        "expected query [..., S, D], key [..., T, D] and value [..., T, Dv] of one rank "
        "(at least 2), got ",
        ShapeToString(q.shape), ", ", ShapeToString(k.shape), ", ", ShapeToString(v.shape));
  }
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (q.shape[d] != k.shape[d] || q.shape[d] != v.shape[d]) {
      return Invalid("query, key and value differ in batch dim ", d, ": ", ShapeToString(q.shape),
                     ", ", ShapeToString(k.shape), ", ", ShapeToString(v.shape));
    }
  }
  if (q.shape[rank - 1] != k.shape[rank - 1] || k.shape[rank - 2] != v.shape[rank - 2]) {
    return Invalid(
        "query [..., S, D] and key [..., T, D] must share D, key and value [..., T, Dv] T: ",
        ShapeToString(q.shape), ", ", ShapeToString(k.shape), ", ", ShapeToString(v.shape));
  }
  Shape scores = q.shape;
  scores[rank - 1] = k.shape[rank - 2];
  if (mask != nullptr) {
    if (mask->dtype != DType::kBool && mask->dtype != q.dtype) {
      return Invalid("the mask must be bool or ", DTypeName(q.dtype), ", got ",
                     DTypeName(mask->dtype));
    }
    absl::StatusOr<Shape> b = BroadcastShapes(mask->shape, scores);
    if (!b.ok() || *b != scores) {
      return Invalid("mask ", ShapeToString(mask->shape), " does not broadcast to the scores ",
                     ShapeToString(scores));
    }
  }
  return scores;
}

// q, k, v[, mask] -> out, lse (lse in f64 for f64 operands, else f32).
absl::StatusOr<std::vector<TensorType>> InferSdpa(absl::Span<const TensorType> in, const Attrs&) {
  TC_ASSIGN_OR_RETURN(Shape scores,
                      AttentionScores(in[0], in[1], in[2], in.size() == 4 ? &in[3] : nullptr));
  Shape out = in[0].shape, lse = in[0].shape;
  out.back() = in[2].shape.back();
  lse.pop_back();
  const DType stats = in[0].dtype == DType::kF64 ? DType::kF64 : DType::kF32;
  return std::vector<TensorType>{{in[0].dtype, out}, {stats, lse}};
}

// grad, q, k, v, out, lse[, mask] -> dq, dk, dv.
absl::StatusOr<std::vector<TensorType>> InferSdpaBackward(absl::Span<const TensorType> in,
                                                          const Attrs& attrs) {
  std::vector<TensorType> operands(in.begin() + 1, in.begin() + 4);
  if (in.size() == 7) operands.push_back(in[6]);
  TC_ASSIGN_OR_RETURN(std::vector<TensorType> forward, InferSdpa(operands, attrs));
  for (int i : {0, 4, 5}) {
    const TensorType& expected = forward[i == 5 ? 1 : 0];
    if (in[i] != expected) {
      return Invalid(i == 0   ? "grad"
                     : i == 4 ? "out"
                              : "lse",
                     " should be ", expected.ToString(), ", got ", in[i].ToString());
    }
  }
  return std::vector<TensorType>{in[1], in[2], in[3]};
}

// The forward's two products of S x T x D multiply-adds (taking Dv as D);
// the backward's five (the scores again, then dv, dp, dq and dk).
OpCost AttentionCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out,
                     const Attrs&, double products) {
  const bool backward = in.size() >= 6;
  const TensorType& q = in[backward ? 1 : 0];
  const TensorType& k = in[backward ? 2 : 1];
  const double keys = static_cast<double>(k.shape[k.shape.size() - 2]);
  double bytes = 0;
  for (const TensorType& x : in) bytes += x.bytes();
  for (const TensorType& x : out) bytes += x.bytes();
  return {products * 2.0 * static_cast<double>(q.numel()) * keys, bytes};
}

OpCost SdpaCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out,
                const Attrs& attrs) {
  return AttentionCost(in, out, attrs, 2);
}
OpCost SdpaBackwardCost(absl::Span<const TensorType> in, absl::Span<const TensorType> out,
                        const Attrs& attrs) {
  return AttentionCost(in, out, attrs, 5);
}

}  // namespace

std::vector<OpDef> AttentionOpDefs() {
  const std::vector<AttrSpec> attrs = {{"causal", AttrKind::kBool}, {"scale", AttrKind::kFloat}};
  return {
      {OpKind::kSdpa, "", OpFamily::kNn, 3, 4, attrs, kTraitExpensive, &InferSdpa, &SdpaCost},
      {OpKind::kSdpaBackward, "", OpFamily::kNn, 6, 7, attrs, kTraitExpensive | kTraitBackward,
       &InferSdpaBackward, &SdpaBackwardCost},
  };
}

}  // namespace tc::ops_internal
