#include "partition/remat_of_joint.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "partition/accounting.h"

namespace tc::partition {
namespace {

// Adds `v`'s producer to `inputs` once; placeholders are left out.
void AddProducer(const Value* v, const absl::flat_hash_map<const Node*, int>& index,
                 std::vector<int>& inputs) {
  if (v->is_placeholder()) return;
  const int producer = index.at(v->producer());
  if (std::find(inputs.begin(), inputs.end(), producer) == inputs.end()) {
    inputs.push_back(producer);
  }
}

}  // namespace

JointRematGraph RematGraphOfJoint(const Graph& joint, const JointLayout& layout,
                                  const std::string& name) {
  JointRematGraph out;
  out.graph.name = name;
  for (const Value* p : joint.placeholders()) out.resident_bytes += p->type().bytes();
  absl::flat_hash_map<const Node*, int> index;
  for (const Node* node : joint.nodes()) {
    RematGraph::Node problem_node;
    problem_node.name = node->results().empty() ? "node" : node->result(0)->name();
    problem_node.cost = NodeFlops(*node);
    problem_node.backward = true;  // until a forward output needs it
    for (const Value* r : node->results()) {
      problem_node.bytes += r->type().bytes();
      out.node_of_value[r->name()] = static_cast<int>(out.graph.nodes.size());
    }
    for (const Value* v : node->inputs()) AddProducer(v, index, problem_node.inputs);
    out.graph.edges += static_cast<int64_t>(problem_node.inputs.size());
    index[node] = static_cast<int>(out.graph.nodes.size());
    out.graph.nodes.push_back(std::move(problem_node));
  }
  std::vector<int> stack;
  for (int i = 0; i < layout.num_forward_outputs; ++i) {
    AddProducer(joint.outputs()[static_cast<size_t>(i)], index, stack);
  }
  while (!stack.empty()) {
    RematGraph::Node& node = out.graph.nodes[static_cast<size_t>(stack.back())];
    stack.pop_back();
    if (!node.backward) continue;
    node.backward = false;
    stack.insert(stack.end(), node.inputs.begin(), node.inputs.end());
  }
  RematGraph::Node outputs{.name = "outputs", .backward = true};
  for (const Value* v : joint.outputs()) AddProducer(v, index, outputs.inputs);
  out.graph.edges += static_cast<int64_t>(outputs.inputs.size());
  out.graph.nodes.push_back(std::move(outputs));
  return out;
}

absl::StatusOr<StagePlan> PlanOfPartition(const JointRematGraph& problem,
                                          const std::vector<std::string>& saved) {
  const RematGraph& graph = problem.graph;
  const size_t n = graph.nodes.size();
  std::vector<char> is_saved(n, 0);
  for (const std::string& name : saved) {
    auto it = problem.node_of_value.find(name);
    if (it != problem.node_of_value.end()) is_saved[static_cast<size_t>(it->second)] = 1;
  }
  // The step's results (the forward's outputs among them) are returned, so
  // held to the end as saved values are.
  for (int v : graph.nodes.back().inputs) is_saved[static_cast<size_t>(v)] = 1;
  // The last reader of each value, and its last forward reader (-1: none).
  std::vector<int> last_reader(n, -1), last_forward_reader(n, -1);
  for (size_t v = 0; v < n; ++v) {
    for (int u : graph.nodes[v].inputs) {
      last_reader[static_cast<size_t>(u)] = static_cast<int>(v);
      if (!graph.nodes[v].backward)
        last_forward_reader[static_cast<size_t>(u)] = static_cast<int>(v);
    }
  }
  // Stage t keeps what is in memory after node t (as each stage of the plan
  // computes t and whatever of its inputs is not in memory).
  std::vector<std::vector<int>> kept(n);
  std::vector<char> in_memory(n, 0);
  for (size_t t = 0; t + 1 < n; ++t) {
    const std::vector<char> computes = ComputedFor(graph, {static_cast<int>(t)}, in_memory);
    for (size_t v = 0; v <= t; ++v) in_memory[v] = in_memory[v] || computes[v];
    // A saved value stays; CompleteStages then frees it after the last
    // stage that reads it, recomputations in the backward included.
    const bool forward = !graph.nodes[t].backward;
    for (size_t v = 0; v <= t; ++v) {
      if (!in_memory[v]) continue;
      const int until = is_saved[v]                           ? static_cast<int>(n)
                        : forward && !graph.nodes[v].backward ? last_forward_reader[v]
                                                              : last_reader[v];
      in_memory[v] = until > static_cast<int>(t);
      if (in_memory[v]) kept[t + 1].push_back(static_cast<int>(v));
    }
  }
  return CompleteStages(graph, std::move(kept));
}

}  // namespace tc::partition
