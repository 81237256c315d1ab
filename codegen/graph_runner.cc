#include "codegen/graph_runner.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/verifier.h"

namespace tc::codegen {

namespace {

absl::Status CheckKernels(const Graph& graph, absl::string_view compiler) {
  for (const Node* node : graph.nodes()) {
    if (node->body() != nullptr) {
      TC_RETURN_IF_ERROR(CheckKernels(*node->body(), compiler));
    } else if (GetKernel(node->op()) == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat(compiler, ": ", OpName(node->op()), " has no eager kernel"));
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
