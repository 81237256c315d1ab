#include "codegen/autocast.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/bf16.h"

namespace tc {

absl::string_view PrecisionName(Precision precision) {
  return precision == Precision::kBF16 ? "bf16" : "f32";
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  if (name == "f32") return Precision::kF32;
  if (name == "bf16") return Precision::kBF16;
  return absl::InvalidArgumentError(
      absl::StrCat("precision: expected f32 or bf16, got \"", name, "\""));
}

namespace codegen {
namespace {

// The ops the pass casts: products of matrices and convolutions.
bool IsProduct(OpKind op) {
  switch (op) {
    case OpKind::kMatmul:
    case OpKind::kLinear:
    case OpKind::kConv2d:
    case OpKind::kConv2dBackwardData:
    case OpKind::kConv2dBackwardWeight:
      return true;
    default:
      return false;
  }
}

// A product of f32 operands, not yet mixed.
bool IsF32Product(const Node& node) {
  if (!IsProduct(node.op())) return false;
  if (node.attrs().Has("out_dtype")) return false;
  for (const Value* in : node.inputs()) {
    if (in->type().dtype != DType::kF32) return false;
  }
  return true;
}

absl::StatusOr<bool> Run(Graph& graph) {
  absl::flat_hash_map<Value*, Value*> bf16_of;  // an f32 operand's cast
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (!IsF32Product(*node)) continue;
    std::vector<Value*> operands;
    for (Value* in : node->inputs()) {
      Value*& cast = bf16_of[in];
      if (cast == nullptr) {
        TC_ASSIGN_OR_RETURN(std::vector<Value*> made,
                            graph.AddNode(OpKind::kCast, {in}, {{"dtype", DType::kBF16}},
                                          node->source(), {absl::StrCat(in->name(), "_bf16")}));
        TC_RETURN_IF_ERROR(graph.MoveBefore(made[0]->producer(), node));
        cast = made[0];
      }
      operands.push_back(cast);
    }
    Attrs attrs = node->attrs();
    attrs.Set("out_dtype", DType::kF32);
    TC_RETURN_IF_ERROR(graph.ReplaceNode(node, node->op(), operands, std::move(attrs)).status());
    changed = true;
  }
  return changed;
}

}  // namespace

Pass AutocastBf16() { return {"autocast-bf16", &Run}; }

Compiler WithPrecision(Compiler inner, Precision precision) {
  if (precision == Precision::kF32) return inner;
  if (!CpuHasBf16()) {
    static absl::once_flag once;
    absl::call_once(once, [] {
      std::fprintf(stderr,
                   "tensorcut: bf16 precision: this CPU has no bf16 instructions (AVX512-BF16 or "
                   "AMX), running f32\n");
    });
    return inner;
  }
  return [inner = std::move(inner)](const Graph& graph,
                                    const CompileOptions& options) -> absl::StatusOr<Executable> {
    Graph mixed = graph.Clone();
    TC_RETURN_IF_ERROR(RunPasses(mixed, {AutocastBf16()}).status());
    return inner(mixed, options);
  };
}

}  // namespace codegen
}  // namespace tc
