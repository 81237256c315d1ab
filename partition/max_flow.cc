#include "partition/max_flow.h"

#include <algorithm>
#include <queue>
#include <tuple>

#include "base/check.h"

namespace tc::partition {

void FlowGraph::AddEdge(int from, int to, int64_t capacity) {
  TC_CHECK(from >= 0 && from < num_nodes() && to >= 0 && to < num_nodes(),
           "FlowGraph::AddEdge: node out of range");
  TC_CHECK(capacity >= 0, "FlowGraph::AddEdge: negative capacity");
  for (auto [a, b, c] : {std::tuple{from, to, std::min(capacity, kInfiniteCapacity)},
                         std::tuple{to, from, int64_t{0}}}) {
    to_.push_back(b);
    capacity_.push_back(c);
    next_.push_back(first_edge_[a]);
    first_edge_[a] = static_cast<int>(to_.size()) - 1;
  }
}

// One run of Dinic's algorithm over a copy of the graph's residual capacities:
// repeat { BFS levels from the source; blocking flow by DFS along level-
// increasing edges, with a current-edge pointer per node so that each edge is
// tried once per phase } until the sink is unreachable.
class Dinic {
 public:
  Dinic(const FlowGraph& g, int source, int sink)
      : g_(g), residual_(g.capacity_), source_(source), sink_(sink), level_(g.num_nodes()) {}

  MinCut Run() {
    MinCut cut;
    while (cut.flow < kInfiniteCapacity && Levels()) {
      current_ = g_.first_edge_;
      while (int64_t pushed = Push(source_, kInfiniteCapacity - cut.flow)) cut.flow += pushed;
    }
    Levels();
    for (int level : level_) cut.source_side.push_back(level >= 0);
    cut.reaches_sink = ReachesSink();
    return cut;
  }

 private:
  // Levels by BFS over edges with residual capacity; true if the sink is reached.
  bool Levels() {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<int> queue;
    level_[source_] = 0;
    queue.push(source_);
    while (!queue.empty()) {
      const int u = queue.front();
      queue.pop();
      for (int e = g_.first_edge_[u]; e >= 0; e = g_.next_[e]) {
        const int v = g_.to_[e];
        if (residual_[e] > 0 && level_[v] < 0) {
          level_[v] = level_[u] + 1;
          queue.push(v);
        }
      }
    }
    return level_[sink_] >= 0;
  }

  // Per node: whether it reaches the sink over edges with residual capacity
  // (a BFS from the sink along such edges backwards: edge e ^ 1 of an edge e
  // out of v comes into v).
  std::vector<bool> ReachesSink() const {
    std::vector<bool> reaches(g_.num_nodes(), false);
    std::queue<int> queue;
    reaches[sink_] = true;
    queue.push(sink_);
    while (!queue.empty()) {
      const int v = queue.front();
      queue.pop();
      for (int e = g_.first_edge_[v]; e >= 0; e = g_.next_[e]) {
        const int u = g_.to_[e];
        if (residual_[e ^ 1] > 0 && !reaches[u]) {
          reaches[u] = true;
          queue.push(u);
        }
      }
    }
    return reaches;
  }

  // Pushes at most `limit` from u towards the sink; returns the amount pushed.
  int64_t Push(int u, int64_t limit) {
    if (u == sink_) return limit;
    for (int& e = current_[u]; e >= 0; e = g_.next_[e]) {
      const int v = g_.to_[e];
      if (residual_[e] <= 0 || level_[v] != level_[u] + 1) continue;
      if (int64_t pushed = Push(v, std::min(limit, residual_[e]))) {
        residual_[e] -= pushed;
        residual_[e ^ 1] += pushed;
        return pushed;
      }
    }
    return 0;
  }

  const FlowGraph& g_;
  std::vector<int64_t> residual_;
  int source_, sink_;
  std::vector<int> level_;
  std::vector<int> current_;
};

MinCut MaxFlowMinCut(const FlowGraph& graph, int source, int sink) {
  TC_CHECK(source != sink && source >= 0 && sink >= 0 && source < graph.num_nodes() &&
               sink < graph.num_nodes(),
           "MaxFlowMinCut: bad source or sink");
  return Dinic(graph, source, sink).Run();
}

}  // namespace tc::partition
