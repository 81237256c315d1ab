#include "codegen/layout_templates.h"

#include <algorithm>
#include <vector>

#include "base/status_macros.h"
#include "codegen/graph_runner.h"

namespace tc::codegen {

LayoutTemplates::LayoutTemplates(const Graph& graph) {
  int64_t bytes = 64;
  for (const Value* p : graph.placeholders()) bytes = std::max(bytes, p->type().bytes());
  for (const Node* node : graph.nodes()) {
    for (const Value* r : node->results()) bytes = std::max(bytes, r->type().bytes());
  }
  // Not zeroed: views only compute strides and offsets over it, and the
  // memset of a batch's largest activation cost compiles more than all
  // their layout decisions.
  scratch_ = std::make_shared<Storage>(bytes, /*zeroed=*/false);
}

Tensor LayoutTemplates::Dense(const Value* v, absl::Span<const int> order) const {
  const TensorType& t = v->type();
  return Tensor::View(scratch_, t.dtype, t.shape, DenseStrides(t.shape, order), 0);
}

absl::StatusOr<std::optional<TensorList>> LayoutTemplates::View(
    const Node& node, absl::Span<const Tensor> inputs) const {
  std::vector<TensorType> types;
  for (const Value* r : node.results()) types.push_back(r->type());
  TC_ASSIGN_OR_RETURN(TensorList out, RunNodeKernel(node, inputs, types));
  if (out[0].storage() != scratch_) return std::optional<TensorList>();
  return std::optional<TensorList>(std::move(out));
}

}  // namespace tc::codegen
