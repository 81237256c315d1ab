#include "codegen/graph_runner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/verifier.h"

namespace tc::codegen {

namespace {

// Whether `node` reads or makes a bf16 value.
bool TouchesBf16(const Node& node) {
  auto bf16 = [](const Value* v) { return v->type().dtype == DType::kBF16; };
  return std::any_of(node.inputs().begin(), node.inputs().end(), bf16) ||
         std::any_of(node.results().begin(), node.results().end(), bf16);
}

// Whether `op` has a bf16 kernel: casts, the views (a reshape that copies
// copies any dtype), and the products of mixed precision (the ops with an
// out_dtype, codegen/autocast.h).
bool RunsOnBf16(OpKind op) {
  return op == OpKind::kCast || op == OpKind::kPermute || op == OpKind::kExpand ||
         op == OpKind::kReshape || GetOpDef(op).DeclaresAttr("out_dtype");
}

absl::Status CheckKernels(const Graph& graph, absl::string_view compiler) {
  for (const Node* node : graph.nodes()) {
    if (node->body() != nullptr) {
      TC_RETURN_IF_ERROR(CheckKernels(*node->body(), compiler));
    } else if (GetKernel(node->op()) == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat(compiler, ": ", OpName(node->op()), " has no eager kernel"));
    } else if (TouchesBf16(*node) && !RunsOnBf16(node->op())) {
      return AtSource(
          *node,
          absl::UnimplementedError(absl::StrCat(
              compiler, ": ", OpName(node->op()),
              " has no bf16 kernel (bf16 runs in cast, permute, expand, reshape, matmul, linear "
              "and convolutions)")));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCompilable(const Graph& graph, absl::string_view compiler) {
  TC_RETURN_IF_ERROR(Verify(graph));
  return CheckKernels(graph, compiler);
}

absl::Status CheckArguments(absl::Span<Value* const> placeholders, absl::Span<const Tensor> args) {
  if (args.size() != placeholders.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", placeholders.size(), " arguments, got ", args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType& want = placeholders[i]->type();
    // Compared field by field: building args[i].type() would copy its shape.
    if (!args[i].defined() || args[i].dtype() != want.dtype || args[i].shape() != want.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", i, " (%", placeholders[i]->name(), "): expected ", want.ToString(), ", got ",
          args[i].defined() ? args[i].type().ToString() : "an undefined tensor"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorList> RunNodeKernel(const Node& node, absl::Span<const Tensor> inputs,
                                         absl::Span<const TensorType> result_types) {
  absl::StatusOr<TensorList> out = RunKernel(node.op(), inputs, node.attrs(), result_types);
  if (out.ok()) return out;
  return AtSource(node, out.status());
}

absl::Status AtSource(const Node& node, const absl::Status& status) {
  if (node.source().empty()) return status;
  return absl::Status(status.code(), absl::StrCat(status.message(), " (at ", node.source(), ")"));
}

}  // namespace tc::codegen
