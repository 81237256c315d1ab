#include "graph/passes/fuse_attention.h"

#include <optional>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "graph/symbolic.h"

namespace tc {
namespace {

// `v`'s producer when it is a node of `op` whose result only one use reads
// (and no graph output), else null.
Node* SoleUseOf(Value* v, OpKind op) {
  Node* node = v->producer();
  if (node == nullptr || node->op() != op || v->is_output() || v->uses().size() != 1) {
    return nullptr;
  }
  return node;
}

// The value of a 0-d `full` constant, if `v` is one.
std::optional<double> ScalarConstant(const Value* v) {
  const Node* node = v->producer();
  if (node == nullptr || node->op() != OpKind::kFull || !v->type().shape.empty()) {
    return std::nullopt;
  }
  return node->attrs().Float("value");
}

bool SwapsLastTwo(const Node& permute) {
  const std::vector<int64_t>& dims = permute.attrs().Ints("dims");
  const int64_t rank = static_cast<int64_t>(dims.size());
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t expected = d == rank - 2 ? rank - 1 : d == rank - 1 ? rank - 2 : d;
    if (dims[d] != expected && dims[d] != expected - rank) return false;
  }
  return rank >= 2;
}

// What a match found: the operands of the sdpa that replaces `output`.
struct Match {
  Node* output;  // the matmul(p, v)
  Value *q, *kt, *v;
  Value* k = nullptr;  // kt's permute input, when kt is one
  std::vector<Value*> masks;
  double scale = 1;
};

std::optional<Match> MatchAt(Node* pv) {
  if (pv->op() != OpKind::kMatmul) return std::nullopt;
  Match m{pv, nullptr, nullptr, pv->input(1)};
  Node* softmax = SoleUseOf(pv->input(0), OpKind::kSoftmax);
  if (softmax == nullptr) return std::nullopt;
  const int64_t rank = softmax->result(0)->type().rank();
  const int64_t dim = softmax->attrs().Int("dim");
  if (dim != -1 && dim != rank - 1) return std::nullopt;
  // Down from the softmax's input: adds of masks, then the scale.
  Value* s = softmax->input(0);
  while (Node* add = SoleUseOf(s, OpKind::kAdd)) {
    // The score side is the operand of the scores' own shape; a mask may
    // broadcast to it, not beyond it.
    const bool left = add->input(0)->type() == add->result(0)->type();
    s = add->input(left ? 0 : 1);
    if (s->type() != add->result(0)->type()) return std::nullopt;
    m.masks.push_back(add->input(left ? 1 : 0));
  }
  if (Node* mul = SoleUseOf(s, OpKind::kMul)) {
    for (int side : {0, 1}) {
      if (std::optional<double> c = ScalarConstant(mul->input(side))) {
        m.scale = *c;
        s = mul->input(1 - side);
        break;
      }
    }
  } else if (Node* div = SoleUseOf(s, OpKind::kDiv)) {
    std::optional<double> c = ScalarConstant(div->input(1));
    if (!c.has_value() || *c == 0) return std::nullopt;
    m.scale = 1 / *c;
    s = div->input(0);
  }
  Node* qk = SoleUseOf(s, OpKind::kMatmul);
  if (qk == nullptr) return std::nullopt;
  m.q = qk->input(0);
  m.kt = qk->input(1);
  if (const Node* permute = m.kt->producer();
      permute != nullptr && permute->op() == OpKind::kPermute && SwapsLastTwo(*permute)) {
    m.k = permute->input(0);
  }
  // sdpa's operands: one rank, equal batch dims (matmul would broadcast them),
  // f32 or f64, masks of the scores' dtype.
  const TensorType &q = m.q->type(), &kt = m.kt->type(), &v = m.v->type();
  if (q.rank() != rank || kt.rank() != rank || v.rank() != rank) return std::nullopt;
  for (int64_t d = 0; d + 2 < rank; ++d) {
    if (q.shape[d] != kt.shape[d] || q.shape[d] != v.shape[d]) return std::nullopt;
  }
  if (q.dtype != DType::kF32 && q.dtype != DType::kF64) return std::nullopt;
  for (const Value* mask : m.masks) {
    if (mask->type().dtype != q.dtype) return std::nullopt;
  }
  return m;
}

absl::Status Rewrite(Graph& g, const Match& m) {
  const int first_new = g.num_nodes();
  Value* k = m.k;
  if (k == nullptr) {
    const int64_t rank = m.kt->type().rank();
    std::vector<int64_t> swap(rank);
    for (int64_t d = 0; d < rank; ++d) swap[d] = d;
    std::swap(swap[rank - 2], swap[rank - 1]);
    TC_ASSIGN_OR_RETURN(std::vector<Value*> permuted,
                        g.AddNode(OpKind::kPermute, {m.kt}, {{"dims", swap}}));
    k = permuted[0];
  }
  std::vector<Value*> operands = {m.q, k, m.v};
  if (!m.masks.empty()) {
    Value* mask = m.masks.back();  // the innermost add's mask first, as the adds ran
    for (auto it = m.masks.rbegin() + 1; it != m.masks.rend(); ++it) {
      TC_ASSIGN_OR_RETURN(std::vector<Value*> sum, g.AddNode(OpKind::kAdd, {mask, *it}));
      mask = sum[0];
    }
    operands.push_back(mask);
  }
  TC_ASSIGN_OR_RETURN(std::vector<Value*> attention,
                      g.AddNode(OpKind::kSdpa, operands, {{"causal", false}, {"scale", m.scale}},
                                m.output->source()));
  // The new nodes go where the written-out attention ended.
  const std::vector<Node*> nodes = g.nodes();
  for (size_t i = first_new; i < nodes.size(); ++i) {
    nodes[i]->set_source(m.output->source());
    TC_RETURN_IF_ERROR(g.MoveBefore(nodes[i], m.output));
  }
  return g.ReplaceAllUsesWith(m.output->result(0), attention[0]);
}

absl::StatusOr<bool> Run(Graph& g) {
  bool changed = false;
  for (Node* node : g.nodes()) {
    if (node->removed()) continue;
    std::optional<Match> match = MatchAt(node);
    if (!match.has_value()) continue;
    TC_RETURN_IF_ERROR(Rewrite(g, *match));
    changed = true;
  }
  if (changed) g.RemoveDeadNodes();
  return changed;
}

}  // namespace

Pass FuseAttention() { return {"fuse-attention", &Run}; }

}  // namespace tc
