// The tensor IR: a Graph of Nodes in topological order over SSA Values.
//
//   Graph g;
//   Value* x = g.AddPlaceholder("x", {DType::kF32, {4, 3}});
//   Value* w = g.AddPlaceholder("p_linear_weight", {DType::kF32, {2, 3}});
//   Value* b = g.AddPlaceholder("p_linear_bias", {DType::kF32, {2}});
//   absl::StatusOr<std::vector<Value*>> y =
//       g.AddNode(OpKind::kLinear, {x, w, b}, {}, /*source=*/"linear");
//   g.SetOutputs({(*y)[0]}).IgnoreError();
//   // ToString(g) (graph/printer.h):
//   //   graph(%x: f32[4,3], %p_linear_weight: f32[2,3], %p_linear_bias: f32[2]) {
//   //     %0: f32[4,2] = linear(%x, %p_linear_weight, %p_linear_bias)  # linear
//   //     return (%0)
//   //   }
//
// Every node is built through the op table: AddNode runs tc::InferTypes, so a
// node's result types are the inferred ones. A region op (kTraitRegion: a
// fused pass, made by codegen's lowering) holds a body, a graph of its own
// whose placeholders take the node's inputs and whose outputs are its
// results; AddRegionNode builds one. The graph owns its nodes and
// values; pointers stay valid for the graph's lifetime, even after a node is
// removed (removed nodes are kept as tombstones, so the verifier can name a
// value whose producer is gone instead of reading freed memory).
//
// Two layers of mutation:
//  - building (AddPlaceholder, AddNode, SetOutputs, Clone) checks everything;
//  - rewriting (Node::SetInput, Node::SetAttrs, ReplaceAllUsesWith, RemoveNode,
//    MoveBefore, ReplaceNode, RenameValue) keeps use lists consistent and rejects values of another
//    graph, but leaves types, order and names to Verify (graph/verifier.h),
//    which RunPasses (graph/pass.h) runs after every pass.
#ifndef TENSORCUT_GRAPH_IR_H_
#define TENSORCUT_GRAPH_IR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/attrs.h"
#include "graph/op_def.h"
#include "graph/shape.h"

namespace tc {

class Graph;
class Node;

// One operand slot that reads a value.
struct Use {
  Node* user;
  int operand;
  bool operator==(const Use& o) const { return user == o.user && operand == o.operand; }
};

// An SSA value: a placeholder (graph input) or one result of a node.
class Value {
 public:
  const std::string& name() const { return name_; }
  const TensorType& type() const { return type_; }
  // The memory order a lowered graph gives the value (kChannelsLast), or
  // empty (row-major, or for a view strides in neither order). Set by
  // codegen's layout pass; printed after the type ("f32[2,4,8,8]:nhwc").
  const DimOrder& layout() const { return layout_; }
  // The node that defines this value; nullptr for a placeholder.
  Node* producer() const { return producer_; }
  bool is_placeholder() const { return producer_ == nullptr; }
  // Index among the producer's results, or among the graph's placeholders.
  int index() const { return index_; }
  // Every operand slot reading this value, in the order the uses were made.
  const std::vector<Use>& uses() const { return uses_; }
  // The distinct nodes reading this value, in the order of first use.
  std::vector<Node*> users() const;
  // How many times this value appears in the graph's output list.
  int output_count() const { return output_count_; }
  bool is_output() const { return output_count_ > 0; }
  bool has_uses() const { return !uses_.empty() || output_count_ > 0; }

 private:
  friend class Graph;
  friend class Node;
  Value(uint64_t graph_id, std::string name, TensorType type, Node* producer, int index)
      : graph_id_(graph_id),
        name_(std::move(name)),
        type_(std::move(type)),
        producer_(producer),
        index_(index) {}
  void RemoveUse(const Use& use);

  uint64_t graph_id_;
  std::string name_;
  TensorType type_;
  Node* producer_;
  int index_;
  std::vector<Use> uses_;
  int output_count_ = 0;
  DimOrder layout_;
};

// One op call: an OpKind from the op table, operands, attributes, results and
// the location (e.g. the module FQN "linear1") that produced it.
class Node {
 public:
  OpKind op() const { return op_; }
  const OpDef& def() const { return GetOpDef(op_); }
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(int i) const { return inputs_[i]; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const std::vector<Value*>& results() const { return results_; }
  Value* result(int i) const { return results_[i]; }
  int num_results() const { return static_cast<int>(results_.size()); }
  const Attrs& attrs() const { return attrs_; }
  // A region op's body; nullptr for every other op. Bodies are immutable and
  // shared by clones.
  const Graph* body() const { return body_.get(); }
  const std::string& source() const { return source_; }
  // True once Graph::RemoveNode took the node out of the graph.
  bool removed() const { return removed_; }

  // Rewrite primitives (see the file comment). SetInput rejects a value of
  // another graph; neither re-runs shape inference.
  absl::Status SetInput(int i, Value* value);
  void SetAttrs(Attrs attrs) { attrs_ = std::move(attrs); }
  void set_source(std::string source) { source_ = std::move(source); }

 private:
  friend class Graph;
  Node(uint64_t graph_id, OpKind op, Attrs attrs, std::string source)
      : graph_id_(graph_id), op_(op), attrs_(std::move(attrs)), source_(std::move(source)) {}

  uint64_t graph_id_;
  OpKind op_;
  std::vector<Value*> inputs_;
  std::vector<Value*> results_;
  Attrs attrs_;
  std::shared_ptr<const Graph> body_;
  std::string source_;
  bool removed_ = false;
};

class Graph {
 public:
  Graph() = default;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;
  // Copies are explicit: use Clone().
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Adds a graph input named `name` (made unique: "x", "x_1", ...; characters
  // other than letters, digits, '_' and '.' become '_').
  Value* AddPlaceholder(absl::string_view name, TensorType type);

  // Appends a node after all existing ones. Operands must be live values of
  // this graph; the result types come from tc::InferTypes, whose error is
  // returned (with " (at <source>)" when a source is given). `names` is empty
  // (results named %0, %1, ... in creation order) or one name hint per result
  // ("" for automatic). `source` must be a single line.
  absl::StatusOr<std::vector<Value*>> AddNode(OpKind op, absl::Span<Value* const> inputs,
                                              Attrs attrs = {}, std::string source = "",
                                              absl::Span<const std::string> names = {});

  // Appends a node of a region op holding `body`: one body placeholder per
  // input, of its type; the results take the types and layouts of the
  // body's outputs.
  absl::StatusOr<std::vector<Value*>> AddRegionNode(OpKind op, absl::Span<Value* const> inputs,
                                                    Graph body, std::string source = "",
                                                    absl::Span<const std::string> names = {});
  // Appends a copy of `node` (of any graph) reading `inputs`: its op,
  // attributes or body, source and result layouts; results named by `names`
  // as in AddNode.
  // What every pass that rebuilds a graph copies nodes with.
  absl::StatusOr<std::vector<Value*>> AddCopyOf(const Node& node, absl::Span<Value* const> inputs,
                                                absl::Span<const std::string> names = {});

  // Replaces the output list; every value must be a value of this graph.
  absl::Status SetOutputs(std::vector<Value*> outputs);

  // Rewrite primitives (see the file comment).
  // Points every use of `from` (operands and outputs) at `to`; both must be
  // values of this graph with equal types.
  absl::Status ReplaceAllUsesWith(Value* from, Value* to);
  // Takes a node whose results are unused out of the graph.
  absl::Status RemoveNode(Node* node);
  // Moves `node` to just before `position` in the node order (both live
  // nodes of this graph); Verify checks that values still come before uses.
  absl::Status MoveBefore(Node* node, const Node* position);
  // Replaces `node` by a new node of `op` over `inputs`, in its place and
  // with its source: the new results take the old ones' uses and names (their
  // types must be equal), and `node` is removed. Returns the new results.
  absl::StatusOr<std::vector<Value*>> ReplaceNode(Node* node, OpKind op,
                                                  absl::Span<Value* const> inputs, Attrs attrs);
  // Gives a region node `body` in place of its own, which must take and
  // return the same types; its results take the new body's output layouts.
  absl::Status SetBody(Node* node, Graph body);
  // Removes every node whose results are transitively unused; returns how many.
  int RemoveDeadNodes();
  // Renames a value exactly as asked; Verify rejects a name defined twice.
  void RenameValue(Value* value, absl::string_view name);
  // Gives a value a memory order; Verify rejects one other than
  // kChannelsLast on a rank-4 value.
  void SetLayout(Value* value, DimOrder layout) { value->layout_ = std::move(layout); }

  // A deep copy: same names, types, order, attributes and sources.
  Graph Clone() const;

  const std::vector<Value*>& placeholders() const { return placeholders_; }
  // Live nodes in topological order.
  std::vector<Node*> nodes() const;
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const std::vector<Value*>& outputs() const { return outputs_; }

  // True for a value or node created by this graph (removed or not).
  bool Owns(const Value* value) const { return value != nullptr && value->graph_id_ == id_.id; }
  bool Owns(const Node* node) const { return node != nullptr && node->graph_id_ == id_.id; }
  // The live value named `name` (without '%'), or nullptr.
  Value* FindValue(absl::string_view name) const;

 private:
  // A process-unique id that stays with the graph's contents when moved, so a
  // moved-from graph never accepts the moved values as its own.
  struct Id {
    uint64_t id = Next();
    Id() = default;
    Id(Id&& o) noexcept : id(o.id) { o.id = Next(); }
    Id& operator=(Id&& o) noexcept {
      id = o.id;
      o.id = Next();
      return *this;
    }
    static uint64_t Next();
  };

  std::string UniqueName(absl::string_view hint);
  absl::Status CheckOperand(const Value* value, absl::string_view what) const;
  // The checks AddNode and AddRegionNode share: live operands and a
  // one-line source. Returns the operands' types.
  absl::StatusOr<std::vector<TensorType>> CheckNodeInputs(OpKind op,
                                                          absl::Span<Value* const> inputs,
                                                          absl::string_view source) const;
  absl::StatusOr<std::vector<Value*>> AddRegion(OpKind op, absl::Span<Value* const> inputs,
                                                std::shared_ptr<const Graph> body,
                                                std::string source,
                                                absl::Span<const std::string> names);
  // Appends a checked node with results of `types`.
  absl::StatusOr<std::vector<Value*>> Append(OpKind op, absl::Span<Value* const> inputs,
                                             Attrs attrs, std::shared_ptr<const Graph> body,
                                             std::string source,
                                             absl::Span<const std::string> names,
                                             std::vector<TensorType> types);

  Id id_;
  std::vector<std::unique_ptr<Value>> values_;  // every value ever made
  std::vector<std::unique_ptr<Node>> nodes_;    // live, topological order
  std::vector<std::unique_ptr<Node>> removed_;  // tombstones
  std::vector<Value*> placeholders_;
  std::vector<Value*> outputs_;
  absl::flat_hash_set<std::string> taken_names_;
  int64_t next_number_ = 0;  // the next automatic name %N
};

}  // namespace tc

#endif  // TENSORCUT_GRAPH_IR_H_
