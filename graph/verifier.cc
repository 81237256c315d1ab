#include "graph/verifier.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "graph/printer.h"

namespace tc {
namespace {

class Verifier {
 public:
  explicit Verifier(const Graph& graph) : graph_(graph) {}

  absl::Status Run() {
    for (const Value* p : graph_.placeholders()) {
      const std::string where =
          absl::StrCat("placeholder `%", p->name(), ": ", p->type().ToString(), "`");
      TC_RETURN_IF_ERROR(Define(p, where));
    }
    for (const Node* node : graph_.nodes()) {
      TC_RETURN_IF_ERROR(VerifyNode(*node));
    }
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      TC_RETURN_IF_ERROR(CheckRef(graph_.outputs()[i], absl::StrCat("output ", i), "return"));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status VerifyNode(const Node& node) {
    const std::string where = absl::StrCat("node `", NodeToString(node), "`");
    std::vector<TensorType> in_types;
    for (int i = 0; i < node.num_inputs(); ++i) {
      TC_RETURN_IF_ERROR(CheckRef(node.input(i), absl::StrCat("operand ", i), where));
      in_types.push_back(node.input(i)->type());
    }
    absl::StatusOr<std::vector<TensorType>> inferred =
        node.def().Has(kTraitRegion) ? VerifyRegion(node, in_types)
                                     : InferTypes(node.op(), in_types, node.attrs());
    if (!inferred.ok()) return Error(where, inferred.status().message());
    std::vector<TensorType> declared;
    for (const Value* r : node.results()) declared.push_back(r->type());
    if (declared != *inferred) {
      auto type_list = [](const std::vector<TensorType>& types) {
        return absl::StrJoin(
            types, ", ", [](std::string* out, const TensorType& t) { out->append(t.ToString()); });
      };
      return Error(where, "declared ", type_list(declared), ", but ", OpName(node.op()), " infers ",
                   type_list(*inferred));
    }
    for (const Value* r : node.results()) {
      TC_RETURN_IF_ERROR(Define(r, where));
    }
    return absl::OkStatus();
  }

  // A region op's body: a graph that verifies, takes the node's input types
  // (each broadcasting to the region's shape) and holds only fusible ops,
  // every result of one shape and in f32, f64 or bool (what the fused kernel
  // computes in), returning distinct node results.
  // Returns the types of its outputs, the node's result types.
  static absl::StatusOr<std::vector<TensorType>> VerifyRegion(
      const Node& node, const std::vector<TensorType>& in_types) {
    const Graph* body = node.body();
    if (body == nullptr) return absl::InvalidArgumentError("a region op without a body");
    if (absl::Status s = Verify(*body); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("body: ", s.message()));
    }
    std::vector<TensorType> body_inputs;
    for (const Value* p : body->placeholders()) body_inputs.push_back(p->type());
    if (body_inputs != in_types) {
      return absl::InvalidArgumentError(absl::StrCat("its operands are ", TypeList(in_types),
                                                     ", its body takes ", TypeList(body_inputs)));
    }
    if (body->outputs().empty()) return absl::InvalidArgumentError("its body returns nothing");
    const Shape& shape = body->outputs()[0]->type().shape;
    for (const Value* p : body->placeholders()) {
      TC_RETURN_IF_ERROR(CheckRegionDType(*p));
      absl::StatusOr<Shape> broadcast = BroadcastShapes(p->type().shape, shape);
      if (!broadcast.ok() || *broadcast != shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("its body's placeholder %", p->name(), " ", p->type().ToString(),
                         " does not broadcast to its region's shape ", ShapeToString(shape)));
      }
    }
    for (const Node* n : body->nodes()) {
      if (!n->def().Has(kTraitFusible)) {
        return absl::InvalidArgumentError(absl::StrCat("its body holds ", OpName(n->op()),
                                                       ", which has no fused evaluation: `",
                                                       NodeToString(*n), "`"));
      }
      for (const Value* r : n->results()) {
        TC_RETURN_IF_ERROR(CheckRegionDType(*r));
        if (r->type().shape != shape) {
          return absl::InvalidArgumentError(absl::StrCat(
              "%", r->name(), " in its body has shape ", ShapeToString(r->type().shape),
              ", its region's is ", ShapeToString(shape)));
        }
      }
    }
    std::vector<TensorType> out;
    for (const Value* v : body->outputs()) {
      if (v->is_placeholder()) {
        return absl::InvalidArgumentError(
            absl::StrCat("its body returns its placeholder %", v->name()));
      }
      if (v->output_count() > 1) {
        return absl::InvalidArgumentError(absl::StrCat("its body returns %", v->name(), " twice"));
      }
      out.push_back(v->type());
    }
    return out;
  }

  static absl::Status CheckRegionDType(const Value& v) {
    const DType d = v.type().dtype;
    if (d == DType::kF32 || d == DType::kF64 || d == DType::kBool) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("%", v.name(), " in its body is ", v.type().ToString(),
                     ": a fused region computes in f32, f64 and bool"));
  }

  static std::string TypeList(const std::vector<TensorType>& types) {
    return absl::StrCat(
        "(",
        absl::StrJoin(types, ", ",
                      [](std::string* out, const TensorType& t) { out->append(t.ToString()); }),
        ")");
  }

  absl::Status Define(const Value* v, absl::string_view where) {
    if (!names_.insert(v->name()).second) return Error(where, "%", v->name(), " is defined twice");
    if (!v->layout().empty() && (v->layout() != kChannelsLast || v->type().rank() != 4)) {
      return Error(where, "%", v->name(), " ", v->type().ToString(),
                   " has a layout; only a rank-4 value may be channels-last");
    }
    defined_.insert(v);
    return absl::OkStatus();
  }

  // `what` (an operand or an output) must be a live value defined earlier.
  absl::Status CheckRef(const Value* v, absl::string_view what, absl::string_view where) {
    if (!graph_.Owns(v)) return Error(where, what, " is not a value of this graph");
    const std::string ref = absl::StrCat(what, " (%", v->name(), ")");
    if (v->producer() != nullptr && v->producer()->removed()) {
      return Error(where, ref, " is dangling: its producer was removed from the graph");
    }
    if (!defined_.contains(v)) return Error(where, ref, " is used before its definition");
    return absl::OkStatus();
  }

  template <typename... Args>
  static absl::Status Error(absl::string_view where, const Args&... args) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", args...));
  }

  const Graph& graph_;
  absl::flat_hash_set<const Value*> defined_;
  absl::flat_hash_set<std::string> names_;
};

}  // namespace

absl::Status Verify(const Graph& graph) { return Verifier(graph).Run(); }

}  // namespace tc
