// Lowered forms: ops that codegen's lowering passes make, never a model. A
// region op's result types are its body's outputs (Graph::AddRegionNode), so
// shape inference alone cannot build one.
#include "graph/ops/families.h"
#include "graph/ops/infer_util.h"

namespace tc::ops_internal {
namespace {

absl::StatusOr<std::vector<TensorType>> InferFromBody(absl::Span<const TensorType>, const Attrs&) {
  return Invalid("its result types are its body's: build it with Graph::AddRegionNode");
}

}  // namespace

std::vector<OpDef> LoweredOpDefs() {
  return {
      {OpKind::kFused, "", OpFamily::kLowered, 1, -1, {}, kTraitRegion, &InferFromBody},
  };
}

}  // namespace tc::ops_internal
