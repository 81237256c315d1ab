#include "graph/verifier.h"

#include <algorithm>
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
    // A kernel writes a layout only where it can: an elementwise pass in its
    // order, a view in its strides, the first result of an op that declares
    // it (kTraitChannelsLastResult); a region's results have its body's.
    const OpDef& def = node.def();
    if (def.Has(kTraitRandom) && !node.result(0)->layout().empty()) {
      return Error(where, "%", node.result(0)->name(), " is ", LayoutName(node.result(0)->layout()),
                   ", but ", OpName(node.op()), " draws its numbers in row-major element order");
    }
    if (!def.Has(kTraitRegion) && !def.Has(kTraitFusible) && !def.Has(kTraitView)) {
      for (int i = 0; i < node.num_results(); ++i) {
        const Value* r = node.result(i);
        if (r->layout().empty() || (i == 0 && def.Has(kTraitChannelsLastResult))) continue;
        return Error(where, "%", r->name(), " is ", LayoutName(r->layout()), ", but ",
                     OpName(node.op()), " writes it row-major");
      }
    }
    if (const Graph* body = node.body(); body != nullptr) {
      for (int i = 0; i < node.num_results(); ++i) {
        const Value* r = node.result(i);
        const Value* returned = body->outputs()[i];
        if (r->layout() != returned->layout()) {
          return Error(where, "%", r->name(), " is ", LayoutName(r->layout()),
                       ", but its body returns %", returned->name(), " ",
                       LayoutName(returned->layout()));
        }
      }
    }
    return absl::OkStatus();
  }

  // A region op's body: a graph that verifies and takes the node's input
  // types, returning distinct node results; the node's results are its
  // outputs, in their layouts. A body is a loop region or a kernel with its
  // epilogue (the two functions below say what each may hold).
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
    const std::vector<Node*> nodes = body->nodes();
    for (const Value* p : body->placeholders()) {
      if (!p->layout().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("its body's placeholder %", p->name(),
                         " has a layout: a region reads its operands through their strides"));
      }
    }
    if (EpilogueKernel(node) != nullptr) {
      TC_RETURN_IF_ERROR(VerifyEpilogue(*body, nodes));
    } else {
      TC_RETURN_IF_ERROR(VerifyLoop(*body, nodes));
    }
    return out;
  }

  // A loop region, run as one pass over memory: fusible ops whose results
  // have one shape (the region's; operands broadcast to it) and one layout
  // (the pass's order: row-major where a random op draws, as the node rule
  // says) and are f32, f64 or bool, or bf16 cast from or to f32 (operands
  // too, but a random op's i64 seed and offset), and sums of those results
  // that the body returns, summed in the same pass, reading them directly
  // or through reshapes (of a row-major region) that only sums read.
  static absl::Status VerifyLoop(const Graph& body, const std::vector<Node*>& nodes) {
    // The region's shape and order: its first output computed in the pass's,
    // or (when it returns sums only) its first fusible node's.
    const Value* pass_value = body.outputs()[0];
    for (const Node* n : nodes) {
      if (n->def().Has(kTraitFusible)) {
        pass_value = n->result(0);
        break;
      }
    }
    for (const Value* v : body.outputs()) {
      if (!v->is_placeholder() && v->producer()->def().Has(kTraitFusible)) {
        pass_value = v;
        break;
      }
    }
    const Shape& shape = pass_value->type().shape;
    const DimOrder& order = pass_value->layout();
    for (const Value* p : body.placeholders()) {
      // A random op's seed and offset are i64 scalars.
      bool random_state = p->type() == TensorType{DType::kI64, {}} && !p->uses().empty();
      for (const Use& use : p->uses()) {
        random_state = random_state && use.user->def().Has(kTraitRandom) && use.operand > 0;
      }
      if (!random_state) TC_RETURN_IF_ERROR(CheckRegionDType(*p));
      absl::StatusOr<Shape> broadcast = BroadcastShapes(p->type().shape, shape);
      if (!broadcast.ok() || *broadcast != shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("its body's placeholder %", p->name(), " ", p->type().ToString(),
                         " does not broadcast to its region's shape ", ShapeToString(shape)));
      }
    }
    auto computed_in_pass = [](const Value* v) {
      return !v->is_placeholder() && v->producer()->def().Has(kTraitFusible);
    };
    for (const Node* n : nodes) {
      if (n->def().Has(kTraitFusible)) {
        for (const Value* r : n->results()) {
          TC_RETURN_IF_ERROR(CheckRegionDType(*r));
          if (r->type().shape != shape) {
            return absl::InvalidArgumentError(absl::StrCat(
                "%", r->name(), " in its body has shape ", ShapeToString(r->type().shape),
                ", its region's is ", ShapeToString(shape)));
          }
          if (r->layout() != order) {
            return absl::InvalidArgumentError(
                absl::StrCat("%", r->name(), " in its body is ", LayoutName(r->layout()),
                             ", its region's order is ", LayoutName(order)));
          }
        }
      } else if (n->op() == OpKind::kSum) {
        const Value* in = n->input(0);
        const bool reshaped = !in->is_placeholder() && in->producer()->op() == OpKind::kReshape;
        if (!computed_in_pass(reshaped ? in->producer()->input(0) : in)) {
          return absl::InvalidArgumentError(absl::StrCat("its body sums %", in->name(),
                                                         ", which its pass does not compute: `",
                                                         NodeToString(*n), "`"));
        }
        const DType d = in->type().dtype;
        if (d != DType::kF32 && d != DType::kF64) {
          return absl::InvalidArgumentError(absl::StrCat("its body sums %", in->name(), " ",
                                                         in->type().ToString(),
                                                         ": a fused pass sums f32 and f64"));
        }
        const Value* r = n->result(0);
        if (!r->uses().empty() || !r->is_output()) {
          return absl::InvalidArgumentError(
              absl::StrCat("its body's sum %", r->name(), " is read in its body, or not returned"));
        }
      } else if (n->op() == OpKind::kReshape) {
        const Value* r = n->result(0);
        bool only_summed = r->has_uses() && !r->is_output();
        for (const Use& use : r->uses())
          only_summed = only_summed && use.user->op() == OpKind::kSum;
        if (!computed_in_pass(n->input(0)) || !only_summed || !order.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "its body holds a reshape that is not a row-major pass's value read by sums: `",
              NodeToString(*n), "`"));
        }
      } else {
        return absl::InvalidArgumentError(absl::StrCat("its body holds ", OpName(n->op()),
                                                       ", which has no fused evaluation: `",
                                                       NodeToString(*n), "`"));
      }
    }
    return absl::OkStatus();
  }

  // A kernel and its epilogue, run as the kernel's call: the first node, an
  // op that takes an epilogue (OpDef::epilogue), reads the body's first
  // placeholders in order; then a chain that it takes, each node reading the
  // one before it (the kernel's first result for the first) once, as its
  // first operand (either, for a commutative op), and its other operand, if
  // any, from the next placeholder; every chain value has the type and
  // layout of the kernel's first result. The body returns the chain's last
  // value, then the kernel's other results.
  static absl::Status VerifyEpilogue(const Graph& body, const std::vector<Node*>& nodes) {
    const Node& kernel = *nodes[0];
    const std::vector<Value*>& placeholders = body.placeholders();
    const auto fail = [&](auto... what) {
      return absl::InvalidArgumentError(
          absl::StrCat("its body's epilogue of ", OpName(kernel.op()), " ", what...));
    };
    size_t next = kernel.num_inputs();
    for (int i = 0; i < kernel.num_inputs(); ++i) {
      if (i >= static_cast<int>(placeholders.size()) || kernel.input(i) != placeholders[i]) {
        return fail("needs the kernel to read the body's first ", kernel.num_inputs(),
                    " placeholders in order");
      }
    }
    const Value* head = kernel.result(0);
    const Value* previous = head;
    std::vector<OpKind> chain;
    for (size_t i = 1; i < nodes.size(); ++i) {
      const Node& n = *nodes[i];
      const std::string at = absl::StrCat(": `", NodeToString(n), "`");
      if (n.num_results() != 1 || n.result(0)->type() != head->type() ||
          n.result(0)->layout() != head->layout()) {
        return fail("changes the type or layout of its result", at);
      }
      const int reads = std::count(n.inputs().begin(), n.inputs().end(), previous);
      if (reads != 1) return fail("reads %", previous->name(), " ", reads, " times", at);
      if (n.num_inputs() == 2) {
        const bool first = n.input(0) == previous;
        const Value* operand = n.input(first ? 1 : 0);
        if (!first && !n.def().Has(kTraitCommutative)) {
          return fail("reads %", previous->name(), " as the second operand", at);
        }
        if (next >= placeholders.size() || operand != placeholders[next]) {
          return fail("reads an operand other than the next placeholder", at);
        }
        ++next;
      } else if (n.num_inputs() != 1) {
        return fail("holds an op of ", n.num_inputs(), " operands", at);
      }
      chain.push_back(n.op());
      previous = n.result(0);
    }
    if (next != placeholders.size()) return fail("leaves placeholders unread");
    if (!kernel.def().TakesEpilogue(head->type().dtype, chain)) {
      return fail(
          "is not one its kernel takes: [",
          absl::StrJoin(chain, ", ",
                        [](std::string* out, OpKind op) { absl::StrAppend(out, OpName(op)); }),
          "] on ", DTypeName(head->type().dtype));
    }
    std::vector<const Value*> expected = {previous};
    for (int r = 1; r < kernel.num_results(); ++r) expected.push_back(kernel.result(r));
    if (!std::equal(expected.begin(), expected.end(), body.outputs().begin(),
                    body.outputs().end())) {
      return fail("must return the chain's last value, then the kernel's other results");
    }
    return absl::OkStatus();
  }

  static std::string LayoutName(const DimOrder& layout) {
    return layout.empty() ? "row-major" : layout == kChannelsLast ? "channels-last" : "strided";
  }

  static absl::Status CheckRegionDType(const Value& v) {
    const DType d = v.type().dtype;
    if (d == DType::kF32 || d == DType::kF64 || d == DType::kBool) return absl::OkStatus();
    if (d == DType::kBF16 && CastsToOrFromF32Only(v)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "%", v.name(), " in its body is ", v.type().ToString(),
        ": a fused region computes in f32, f64 and bool, and casts between f32 and bf16"));
  }

  // Whether bf16 `v` is an input or an f32 value's cast, and only casts to
  // f32 read it.
  static bool CastsToOrFromF32Only(const Value& v) {
    auto is_cast = [](const Node* n, DType from, DType to) {
      return n->op() == OpKind::kCast && n->input(0)->type().dtype == from &&
             n->result(0)->type().dtype == to;
    };
    if (!v.is_placeholder() && !is_cast(v.producer(), DType::kF32, DType::kBF16)) return false;
    for (const Use& use : v.uses()) {
      if (!is_cast(use.user, DType::kBF16, DType::kF32)) return false;
    }
    return true;
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

const Node* EpilogueKernel(const Node& node) {
  const Graph* body = node.body();
  if (body == nullptr || body->num_nodes() < 2) return nullptr;
  const Node* first = body->nodes()[0];
  return first->def().epilogue.ops.empty() ? nullptr : first;
}

absl::Status Verify(const Graph& graph) { return Verifier(graph).Run(); }

}  // namespace tc
