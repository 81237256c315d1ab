#include "codegen/autocast.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/decompositions.h"
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

// A product of f32 operands, not yet mixed, of at least `min_flops`.
bool IsF32Product(const Node& node, double min_flops) {
  // The products are the ops that may be mixed: matmul, linear and the
  // convolutions (their out_dtype, graph/ops/infer_util.h).
  if (!node.def().DeclaresAttr("out_dtype") || node.attrs().Has("out_dtype")) return false;
  std::vector<TensorType> in, out;
  for (const Value* v : node.inputs()) {
    if (v->type().dtype != DType::kF32) return false;
    in.push_back(v->type());
  }
  for (const Value* v : node.results()) out.push_back(v->type());
  return EstimateCost(node.op(), in, out, node.attrs()).flops >= min_flops;
}

// Whether `v` is a permute or expand of another value: a view that is never a
// copy, which reads its base's elements in another order.
bool IsReorderingView(const Value* v) {
  const Node* p = v->producer();
  return p != nullptr && (p->op() == OpKind::kPermute || p->op() == OpKind::kExpand);
}

// Whether `v` is a view of another value whose cast can be made first and
// viewed the same way: a permute or expand, or a reshape of anything but
// those (a reshape of a permuted value copies it, and the copy of its f32
// elements is cast as well as any).
bool IsView(const Value* v) {
  if (IsReorderingView(v)) return true;
  const Node* p = v->producer();
  return p != nullptr && p->op() == OpKind::kReshape && !IsReorderingView(p->input(0));
}

// The bf16 values of the f32 values products read, each made once, just
// before the product that first needs it. A view of a value (a weight
// gradient's g^T, attention's k^T, a linear's [B*S, E] rows) is made as the
// same view of the value's cast. A cast of the dense value is one fast
// pass, where casting a transposed view transposes as it converts, at a
// third of the speed; and the cast of a value a fused pass computes joins
// that pass (codegen/fusion.h), which then writes it as it writes the value.
class Casts {
 public:
  explicit Casts(Graph& graph) : graph_(graph) {}

  absl::StatusOr<Value*> Bf16(Value* v, const Node* before) {
    if (auto it = bf16_of_.find(v); it != bf16_of_.end()) return it->second;
    Value* made;
    if (IsView(v)) {
      const Node* view = v->producer();
      TC_ASSIGN_OR_RETURN(Value * base, Bf16(view->input(0), before));
      TC_ASSIGN_OR_RETURN(made, Add(view->op(), base, view->attrs(), v, before));
    } else {
      TC_ASSIGN_OR_RETURN(made, Add(OpKind::kCast, v, {{"dtype", DType::kBF16}}, v, before));
    }
    bf16_of_[v] = made;
    return made;
  }

 private:
  // A node of `op` over `in` named after `named`, placed before `before`.
  absl::StatusOr<Value*> Add(OpKind op, Value* in, Attrs attrs, const Value* named,
                             const Node* before) {
    TC_ASSIGN_OR_RETURN(std::vector<Value*> made,
                        graph_.AddNode(op, {in}, std::move(attrs), before->source(),
                                       {absl::StrCat(named->name(), "_bf16")}));
    TC_RETURN_IF_ERROR(graph_.MoveBefore(made[0]->producer(), before));
    return made[0];
  }

  Graph& graph_;
  absl::flat_hash_map<Value*, Value*> bf16_of_;
};

// Removes `v`'s producer, and so on down its bases, while it is a view
// nothing reads any more (its bf16 twin took its place).
absl::Status RemoveUnusedViews(Graph& graph, Value* v) {
  while (IsView(v) && !v->has_uses() && !v->is_output() && !v->producer()->removed()) {
    Node* view = v->producer();
    v = view->input(0);
    TC_RETURN_IF_ERROR(graph.RemoveNode(view));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Run(Graph& graph, double min_flops) {
  // sdpa's kernels run f32 only: written out, its products run bf16 too.
  TC_ASSIGN_OR_RETURN(bool changed, Decompose(AttentionDecompositions()).run(graph));
  Casts casts(graph);
  for (Node* node : graph.nodes()) {
    if (!IsF32Product(*node, min_flops)) continue;
    std::vector<Value*> operands;
    for (Value* in : node->inputs()) {
      TC_ASSIGN_OR_RETURN(Value * cast, casts.Bf16(in, node));
      operands.push_back(cast);
    }
    Attrs attrs = node->attrs();
    attrs.Set("out_dtype", DType::kF32);
    const std::vector<Value*> f32_operands = node->inputs();
    TC_RETURN_IF_ERROR(graph.ReplaceNode(node, node->op(), operands, std::move(attrs)).status());
    for (Value* v : f32_operands) TC_RETURN_IF_ERROR(RemoveUnusedViews(graph, v));
    changed = true;
  }
  return changed;
}

}  // namespace

Pass AutocastBf16(double min_flops) {
  return {"autocast-bf16", [min_flops](Graph& graph) { return Run(graph, min_flops); }};
}

bool RunsInBf16(Precision precision) {
  if (precision == Precision::kF32) return false;
  if (CpuHasBf16()) return true;
  static absl::once_flag once;
  absl::call_once(once, [] {
    std::fprintf(stderr,
                 "tensorcut: bf16 precision: this CPU has no bf16 instructions (AVX512-BF16 or "
                 "AMX), running f32\n");
  });
  return false;
}

Compiler WithPrecision(Compiler inner, Precision precision) {
  if (!RunsInBf16(precision)) return inner;
  return [inner = std::move(inner)](const Graph& graph,
                                    const CompileOptions& options) -> absl::StatusOr<Executable> {
    Graph mixed = graph.Clone();
    TC_RETURN_IF_ERROR(RunPasses(mixed, {AutocastBf16()}).status());
    return inner(mixed, options);
  };
}

}  // namespace codegen
}  // namespace tc
