#include "graph/decompositions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/op_attrs.h"
#include "graph/printer.h"

namespace tc {
namespace {

constexpr int kMaxRounds = 32;

// Emits nodes for a rule. The first failure is kept and every later call
// returns nullptr, so a rule reads as straight-line math and checks once, in
// Finish.
class Emitter {
 public:
  explicit Emitter(Graph& graph) : graph_(graph) {}

  std::vector<Value*> Many(OpKind op, std::vector<Value*> inputs, Attrs attrs = {}) {
    if (!status_.ok()) return {};
    absl::StatusOr<std::vector<Value*>> out = graph_.AddNode(op, inputs, std::move(attrs));
    if (!out.ok()) {
      status_ = out.status();
      return {};
    }
    return *std::move(out);
  }
  Value* Op(OpKind op, std::vector<Value*> inputs, Attrs attrs = {}) {
    std::vector<Value*> out = Many(op, std::move(inputs), std::move(attrs));
    return out.empty() ? nullptr : out[0];
  }

  Value* Scalar(double value, DType dtype) {
    return Op(OpKind::kFull, {},
              {{"shape", std::vector<int64_t>{}}, {"value", value}, {"dtype", dtype}});
  }
  // A size as a scalar: a constant, or a size_scalar node for a symbolic one.
  Value* Size(int64_t size, DType dtype) {
    if (!IsSymbolic(size)) return Scalar(static_cast<double>(size), dtype);
    return Op(OpKind::kSizeScalar, {}, {{"size", size}, {"dtype", dtype}});
  }
  Value* Add(Value* a, Value* b) { return Op(OpKind::kAdd, {a, b}); }
  Value* Sub(Value* a, Value* b) { return Op(OpKind::kSub, {a, b}); }
  Value* Mul(Value* a, Value* b) { return Op(OpKind::kMul, {a, b}); }
  Value* Div(Value* a, Value* b) { return Op(OpKind::kDiv, {a, b}); }
  Value* Unary(OpKind op, Value* x) { return Op(op, {x}); }
  Value* Reduce(OpKind op, Value* x, std::vector<int64_t> dims, bool keepdim) {
    return Op(op, {x}, {{"dims", std::move(dims)}, {"keepdim", keepdim}});
  }
  Value* Var(Value* x, std::vector<int64_t> dims, bool keepdim, int64_t correction) {
    return Op(OpKind::kVar, {x},
              {{"dims", std::move(dims)}, {"keepdim", keepdim}, {"correction", correction}});
  }
  // x with its last two dims swapped.
  Value* Transpose(Value* x) {
    const int64_t rank = x->type().rank();
    std::vector<int64_t> dims(rank);
    for (int64_t d = 0; d < rank; ++d) dims[d] = d;
    std::swap(dims[rank - 2], dims[rank - 1]);
    return Op(OpKind::kPermute, {x}, {{"dims", std::move(dims)}});
  }
  Value* Reshape(Value* x, std::vector<int64_t> shape) {
    return Op(OpKind::kReshape, {x}, {{"shape", std::move(shape)}});
  }

  absl::StatusOr<std::vector<Value*>> Finish(std::vector<Value*> results) {
    if (!status_.ok()) return status_;
    return results;
  }

 private:
  Graph& graph_;
  absl::Status status_;
};

using Inputs = absl::Span<Value* const>;
using Result = absl::StatusOr<std::vector<Value*>>;

// How many elements a reduction over `dims` combines into one.
int64_t ReducedCount(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n = DimMul(n, shape[d]);
  return n;
}

Result Linear(Graph& g, const Node&, Inputs in) {
  Emitter e(g);
  Value *x = in[0], *w = in[1], *b = in[2];
  Value* wt = e.Op(OpKind::kPermute, {w}, {{"dims", std::vector<int64_t>{1, 0}}});
  // matmul needs rank >= 2: a vector input becomes one row and back.
  const Shape& x_shape = x->type().shape;
  if (x_shape.size() != 1) return e.Finish({e.Add(e.Op(OpKind::kMatmul, {x, wt}), b)});
  Value* row = e.Op(OpKind::kMatmul, {e.Reshape(x, {1, x_shape[0]}), wt});
  return e.Finish({e.Add(e.Reshape(row, {w->type().shape[0]}), b)});
}

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Result GeluTanh(Graph& g, const Node& node, Inputs in) {
  if (GeluApproximationOf(node.attrs()) != GeluApproximation::kTanh) return std::vector<Value*>{};
  Emitter e(g);
  Value* x = in[0];
  const DType t = x->type().dtype;
  Value* cube = e.Mul(e.Mul(x, x), x);
  Value* inner =
      e.Mul(e.Scalar(std::sqrt(2.0 / M_PI), t), e.Add(x, e.Mul(e.Scalar(0.044715, t), cube)));
  Value* half_x = e.Mul(e.Scalar(0.5, t), x);
  return e.Finish({e.Mul(half_x, e.Add(e.Scalar(1.0, t), e.Unary(OpKind::kTanh, inner)))});
}

// softmax (log = false) or log_softmax along one dim, shifted by the max.
Result Softmax(Graph& g, const Node& node, Inputs in, bool log) {
  Value* x = in[0];
  TC_ASSIGN_OR_RETURN(int64_t dim, WrapDim(node.attrs().Int("dim"), x->type().rank()));
  if (x->type().shape[dim] == 0) return std::vector<Value*>{};  // max has no identity
  Emitter e(g);
  Value* shifted = e.Sub(x, e.Reduce(OpKind::kMax, x, {dim}, true));
  Value* exp = e.Unary(OpKind::kExp, shifted);
  Value* sum = e.Reduce(OpKind::kSum, exp, {dim}, true);
  if (log) return e.Finish({e.Sub(shifted, e.Unary(OpKind::kLog, sum))});
  return e.Finish({e.Div(exp, sum)});
}

Result Mean(Graph& g, const Node& node, Inputs in) {
  Value* x = in[0];
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      NormalizeDims(node.attrs().Ints("dims"), x->type().rank()));
  Emitter e(g);
  const int64_t n = ReducedCount(x->type().shape, dims);
  Value* sum = e.Reduce(OpKind::kSum, x, dims, node.attrs().Bool("keepdim"));
  return e.Finish({e.Div(sum, e.Size(n, x->type().dtype))});
}

// Two passes, as the kernel: sum((x - mean)^2) / max(n - correction, 0).
Result Var(Graph& g, const Node& node, Inputs in) {
  Value* x = in[0];
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      NormalizeDims(node.attrs().Ints("dims"), x->type().rank()));
  Emitter e(g);
  const int64_t n = ReducedCount(x->type().shape, dims);
  // A symbolic count is not clamped at 0 as a number is: a batch that makes
  // it smaller than the correction divides by a negative count.
  const int64_t correction = node.attrs().Int("correction");
  const int64_t divisor =
      IsSymbolic(n) ? DimSub(n, correction) : std::max<int64_t>(n - correction, 0);
  Value* centered = e.Sub(x, e.Reduce(OpKind::kMean, x, dims, true));
  Value* squares =
      e.Reduce(OpKind::kSum, e.Mul(centered, centered), dims, node.attrs().Bool("keepdim"));
  return e.Finish({e.Div(squares, e.Size(divisor, x->type().dtype))});
}

// (x - mean) * rsqrt(var + eps) over `dims`, with the statistics kept (keepdim).
struct Normalized {
  Value* y;
  Value* mean;
  Value* var;
};
Normalized Normalize(Emitter& e, Value* x, const std::vector<int64_t>& dims, double eps) {
  Value* mean = e.Reduce(OpKind::kMean, x, dims, true);
  Value* var = e.Var(x, dims, true, 0);
  Value* inv_std = e.Unary(OpKind::kRsqrt, e.Add(var, e.Scalar(eps, x->type().dtype)));
  return {e.Mul(e.Sub(x, mean), inv_std), mean, var};
}

Result LayerNorm(Graph& g, const Node& node, Inputs in) {
  Value *x = in[0], *w = in[1], *b = in[2];
  const Shape& shape = x->type().shape;
  TC_ASSIGN_OR_RETURN(int64_t axis, WrapDim(node.attrs().Int("axis"), x->type().rank()));
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < x->type().rank(); ++d) dims.push_back(d);
  Emitter e(g);
  Normalized n = Normalize(e, x, dims, node.attrs().Float("eps"));
  const std::vector<int64_t> stats(shape.begin(), shape.begin() + axis);
  return e.Finish({e.Add(e.Mul(n.y, w), b), e.Reshape(n.mean, stats), e.Reshape(n.var, stats)});
}

// Training mode: statistics over every dim but the channels (dim 1).
Result BatchNorm(Graph& g, const Node& node, Inputs in) {
  Value *x = in[0], *w = in[1], *b = in[2];
  const int64_t rank = x->type().rank(), channels = x->type().shape[1];
  std::vector<int64_t> dims = {0}, per_channel(rank, 1);
  for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
  per_channel[1] = channels;
  Emitter e(g);
  Normalized n = Normalize(e, x, dims, node.attrs().Float("eps"));
  Value* y = e.Add(e.Mul(n.y, e.Reshape(w, per_channel)), e.Reshape(b, per_channel));
  return e.Finish({y, e.Reshape(n.mean, {channels}), e.Reshape(n.var, {channels})});
}

// Attention's scores q k^T scale, masked as sdpa masks them: [..., S, T].
Value* MaskedScores(Emitter& e, const Node& node, Inputs in, Value* mask) {
  Value *q = in[0], *k = in[1];
  const DType dtype = q->type().dtype;
  const int64_t rank = q->type().rank();
  const int64_t s_len = q->type().shape[rank - 2], t_len = k->type().shape[rank - 2];
  Value* scores = e.Mul(e.Op(OpKind::kMatmul, {q, e.Transpose(k)}),
                        e.Scalar(node.attrs().Float("scale"), dtype));
  Value* minus_inf = e.Scalar(-std::numeric_limits<double>::infinity(), dtype);
  if (mask != nullptr) {
    scores = mask->type().dtype == DType::kBool ? e.Op(OpKind::kWhere, {mask, scores, minus_inf})
                                                : e.Add(scores, mask);
  }
  if (node.attrs().Bool("causal")) {
    auto positions = [&](int64_t n, std::vector<int64_t> shape) {
      return e.Reshape(e.Op(OpKind::kArange, {},
                            {{"start", 0.0},
                             {"end", static_cast<double>(n)},
                             {"step", 1.0},
                             {"dtype", DType::kI64}}),
                       std::move(shape));
    };
    Value* future = e.Op(OpKind::kGt, {positions(t_len, {1, t_len}), positions(s_len, {s_len, 1})});
    scores = e.Op(OpKind::kWhere, {future, minus_inf, scores});
  }
  return scores;
}

// sdpa written out: the scores, their softmax, its product with v, and each
// row's log-sum-exp, max + log(sum(exp(scores - max))). Declines on bf16 (no softmax runs in bf16)
// and on no keys (max has no identity).
Result Sdpa(Graph& g, const Node& node, Inputs in) {
  Value *q = in[0], *v = in[2];
  const int64_t rank = q->type().rank();
  if (q->type().dtype == DType::kBF16 || in[1]->type().shape[rank - 2] == 0) {
    return std::vector<Value*>{};
  }
  Emitter e(g);
  Value* scores = MaskedScores(e, node, in, in.size() == 4 ? in[3] : nullptr);
  // The softmax op, not its parts: written out before autodiff (bf16), its
  // own VJP reuses the probabilities; lse is dead code where nothing reads it.
  Value* probabilities = e.Op(OpKind::kSoftmax, {scores}, {{"dim", rank - 1}});
  Value* out = e.Op(OpKind::kMatmul, {probabilities, v});
  Value* max = e.Reduce(OpKind::kMax, scores, {rank - 1}, true);
  Value* sum = e.Reduce(OpKind::kSum, e.Unary(OpKind::kExp, e.Sub(scores, max)), {rank - 1}, true);
  Shape rows = q->type().shape;
  rows.pop_back();
  Value* lse = e.Reshape(e.Add(max, e.Unary(OpKind::kLog, sum)), rows);
  return e.Finish({out, lse});
}

// sdpa_backward written out, the probabilities recomputed from lse:
// dv = p^T g, ds = p (g v^T - rowsum(g out)), dq = scale ds k, dk = scale ds^T q.
Result SdpaBackward(Graph& g, const Node& node, Inputs in) {
  Value *grad = in[0], *q = in[1], *k = in[2], *v = in[3], *out = in[4], *lse = in[5];
  const DType dtype = q->type().dtype;
  if (dtype == DType::kBF16) return std::vector<Value*>{};
  const int64_t rank = q->type().rank();
  Emitter e(g);
  Value* scores = MaskedScores(e, node, in.subspan(1), in.size() == 7 ? in[6] : nullptr);
  Shape column = lse->type().shape;
  column.push_back(1);
  Value* p = e.Unary(OpKind::kExp, e.Sub(scores, e.Reshape(lse, column)));
  Value* dv = e.Op(OpKind::kMatmul, {e.Transpose(p), grad});
  Value* delta = e.Reduce(OpKind::kSum, e.Mul(grad, out), {rank - 1}, true);
  Value* ds = e.Mul(p, e.Sub(e.Op(OpKind::kMatmul, {grad, e.Transpose(v)}), delta));
  Value* scale = e.Scalar(node.attrs().Float("scale"), dtype);
  Value* dq = e.Mul(e.Op(OpKind::kMatmul, {ds, k}), scale);
  Value* dk = e.Mul(e.Op(OpKind::kMatmul, {e.Transpose(ds), q}), scale);
  return e.Finish({dq, dk, dv});
}

bool IsAutomaticName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), absl::ascii_isdigit);
}

// Copies `node` into `out` with mapped operands, keeping chosen names.
absl::StatusOr<std::vector<Value*>> CopyNode(Graph& out, const Node& node,
                                             absl::Span<Value* const> inputs) {
  std::vector<std::string> names;
  for (const Value* r : node.results()) {
    names.push_back(IsAutomaticName(r->name()) ? "" : r->name());
  }
  return out.AddCopyOf(node, inputs, names);
}

// Runs `rule` on `node`; empty when it declines.
absl::StatusOr<std::vector<Value*>> ApplyRule(const DecompositionFn& rule, Graph& out,
                                              const Node& node, absl::Span<Value* const> inputs) {
  const int first_new = out.num_nodes();
  absl::StatusOr<std::vector<Value*>> results = rule(out, node, inputs);
  auto fail = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("decomposing `", NodeToString(node), "`: ", what));
  };
  if (!results.ok()) return fail(results.status().message());
  if (results->empty()) {
    if (out.num_nodes() != first_new) return fail("the rule declined after emitting nodes");
    return results;
  }
  if (static_cast<int>(results->size()) != node.num_results()) {
    return fail(
        absl::StrCat("the rule gave ", results->size(), " results, expected ", node.num_results()));
  }
  for (int i = 0; i < node.num_results(); ++i) {
    const Value* r = (*results)[i];
    if (!out.Owns(r) || r->type() != node.result(i)->type()) {
      return fail(absl::StrCat("result ", i, " should be ", node.result(i)->type().ToString(),
                               ", the rule gave ",
                               out.Owns(r) ? r->type().ToString() : "no value of the graph"));
    }
  }
  const std::vector<Node*> nodes = out.nodes();
  for (size_t k = first_new; k < nodes.size(); ++k) nodes[k]->set_source(node.source());
  return results;
}

// One rebuild of `graph` with every node that has a rule decomposed once.
absl::StatusOr<bool> DecomposeOnce(Graph& graph, const DecompositionTable& table) {
  const std::vector<Node*> nodes = graph.nodes();
  if (std::none_of(nodes.begin(), nodes.end(),
                   [&](const Node* n) { return table.contains(n->op()); })) {
    return false;
  }
  Graph out;
  absl::flat_hash_map<const Value*, Value*> map;
  for (const Value* p : graph.placeholders()) map[p] = out.AddPlaceholder(p->name(), p->type());
  bool changed = false;
  for (const Node* node : nodes) {
    std::vector<Value*> inputs;
    for (const Value* in : node->inputs()) inputs.push_back(map.at(in));
    std::vector<Value*> results;
    if (auto rule = table.find(node->op()); rule != table.end()) {
      TC_ASSIGN_OR_RETURN(results, ApplyRule(rule->second, out, *node, inputs));
      changed = changed || !results.empty();
    }
    if (results.empty()) {
      TC_ASSIGN_OR_RETURN(results, CopyNode(out, *node, inputs));
    }
    for (int i = 0; i < node->num_results(); ++i) map[node->result(i)] = results[i];
  }
  if (!changed) return false;
  std::vector<Value*> outputs;
  for (const Value* v : graph.outputs()) outputs.push_back(map.at(v));
  TC_RETURN_IF_ERROR(out.SetOutputs(std::move(outputs)));
  graph = std::move(out);
  return true;
}

}  // namespace

const DecompositionTable& DefaultDecompositions() {
  static const DecompositionTable* table = new DecompositionTable{
      {OpKind::kLinear, &Linear},
      {OpKind::kGelu, &GeluTanh},
      {OpKind::kSoftmax,
       [](Graph& g, const Node& n, Inputs in) { return Softmax(g, n, in, /*log=*/false); }},
      {OpKind::kLogSoftmax,
       [](Graph& g, const Node& n, Inputs in) { return Softmax(g, n, in, /*log=*/true); }},
      {OpKind::kLayerNorm, &LayerNorm},
      {OpKind::kBatchNorm, &BatchNorm},
      {OpKind::kVar, &Var},
      {OpKind::kMean, &Mean},
  };
  return *table;
}

const DecompositionTable& AttentionDecompositions() {
  static const DecompositionTable* table = new DecompositionTable{
      {OpKind::kSdpa, &Sdpa},
      {OpKind::kSdpaBackward, &SdpaBackward},
  };
  return *table;
}

const DecompositionTable& ReferenceDecompositions() {
  static const DecompositionTable* table = [] {
    auto* t = new DecompositionTable(DefaultDecompositions());
    for (const auto& [op, rule] : AttentionDecompositions()) (*t)[op] = rule;
    return t;
  }();
  return *table;
}

Pass Decompose(DecompositionTable table) {
  return {"decompose", [table = std::move(table)](Graph& graph) -> absl::StatusOr<bool> {
            bool changed = false;
            for (int round = 0; round < kMaxRounds; ++round) {
              TC_ASSIGN_OR_RETURN(bool once, DecomposeOnce(graph, table));
              if (!once) return changed;
              changed = true;
            }
            return absl::InvalidArgumentError(
                absl::StrCat("decompositions still apply after ", kMaxRounds,
                             " rounds: the table's rules keep emitting ops that have rules"));
          }};
}

}  // namespace tc
