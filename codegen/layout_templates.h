// Layout templates: tensors over one scratch storage that stand for values'
// shapes, strides and offsets, so that compile-time code can ask the eager
// view kernels what a view does without any data.
//
//   LayoutTemplates t(graph);
//   Tensor x = t.Dense(value, kChannelsLast);               // NHWC strides, offset 0
//   absl::StatusOr<std::optional<TensorList>> v = t.View(*permute, {x});
//   // *v: the view's results over the same scratch; nullopt when the
//   // kernel made a copy (a reshape that cannot be a view)
//
// The layout pass (codegen/layout_plan.h) and Program's lowering both use it.
#ifndef TENSORCUT_CODEGEN_LAYOUT_TEMPLATES_H_
#define TENSORCUT_CODEGEN_LAYOUT_TEMPLATES_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/ir.h"
#include "runtime/dispatch.h"
#include "runtime/tensor.h"

namespace tc::codegen {

class LayoutTemplates {
 public:
  // Scratch large enough for the largest value of `graph`.
  explicit LayoutTemplates(const Graph& graph);

  // `v` laid out densely in `order` (empty: row-major), at offset 0.
  Tensor Dense(const Value* v, absl::Span<const int> order) const;
  // What the view node's kernel makes of `inputs` (templates): its results
  // over the scratch, or nullopt when the kernel copied instead. A kernel
  // error comes back with the node's source.
  absl::StatusOr<std::optional<TensorList>> View(const Node& node,
                                                 absl::Span<const Tensor> inputs) const;

 private:
  std::shared_ptr<Storage> scratch_;
};

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_LAYOUT_TEMPLATES_H_
