#include "codegen/fold_conv_bias.h"

#include <vector>

#include "base/status_macros.h"

namespace tc::codegen {
namespace {

// Whether `v` is laid out densely in a program: an argument, a computed
// value, or a reshape of one (a reshape is a view or a dense copy). The
// convolution reads its bias as C values in a row; any other layout it would
// copy on every call.
bool Dense(const Value* v) {
  auto computed = [](const Value* x) {
    return x->producer() == nullptr || !x->producer()->def().Has(kTraitView);
  };
  return computed(v) ||
         (v->producer()->op() == OpKind::kReshape && computed(v->producer()->input(0)));
}

// The convolution `add` adds a bias to, with the bias, or nullptr: a conv2d
// without a bias whose result only `add` reads, once, and a dense operand of
// its dtype shaped [1, C, 1, 1].
struct Match {
  Node* conv = nullptr;
  Value* bias = nullptr;
};

Match MatchBiasAdd(const Node& add) {
  if (add.op() != OpKind::kAdd) return {};
  for (int k = 0; k < 2; ++k) {
    Value* y = add.input(k);
    Value* bias = add.input(1 - k);
    Node* conv = y->producer();
    if (conv == nullptr || conv->op() != OpKind::kConv2d || conv->num_inputs() != 2 ||
        y->uses().size() != 1 || y->is_output()) {
      continue;
    }
    const TensorType& t = y->type();
    if (add.result(0)->type() != t || bias->type().dtype != t.dtype ||
        bias->type().shape != Shape{1, t.shape[1], 1, 1} || !Dense(bias)) {
      continue;
    }
    return {conv, bias};
  }
  return {};
}

absl::StatusOr<bool> Run(Graph& graph) {
  bool changed = false;
  for (Node* add : graph.nodes()) {
    const Match m = MatchBiasAdd(*add);
    if (m.conv == nullptr) continue;
    TC_RETURN_IF_ERROR(graph
                           .ReplaceNode(add, OpKind::kConv2d,
                                        {m.conv->input(0), m.conv->input(1), m.bias},
                                        m.conv->attrs())
                           .status());
    TC_RETURN_IF_ERROR(graph.RemoveNode(m.conv));
    changed = true;
  }
  return changed;
}

}  // namespace

Pass FoldConvolutionBias() { return {"fold-conv-bias", &Run}; }

}  // namespace tc::codegen
