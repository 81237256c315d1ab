// Maximum s-t flow and a minimum s-t cut (Dinic's algorithm) on a small
// directed graph with int64 capacities.
//
//   FlowGraph g(4);                        // nodes 0..3
//   g.AddEdge(0, 1, 3);
//   g.AddEdge(1, 3, kInfiniteCapacity);
//   g.AddEdge(0, 2, 2);
//   g.AddEdge(2, 3, 1);
//   MinCut cut = MaxFlowMinCut(g, /*source=*/0, /*sink=*/3);
//   // cut.flow == 4; cut.source_side == {true, false, true, false}:
//   // the cut edges are 0->1 (3) and 2->3 (1).
//
// The partitioners use it to choose which values to save (partition/min_cut.h).
#ifndef TENSORCUT_PARTITION_MAX_FLOW_H_
#define TENSORCUT_PARTITION_MAX_FLOW_H_

#include <cstdint>
#include <vector>

namespace tc::partition {

// A capacity no finite cut reaches: an edge that must never be cut. Flows and
// cut values are capped at it, so sums of infinite edges do not overflow.
inline constexpr int64_t kInfiniteCapacity = int64_t{1} << 60;

class FlowGraph {
 public:
  explicit FlowGraph(int num_nodes) : first_edge_(num_nodes, -1) {}

  // Adds the edge from -> to with `capacity` (>= 0; capped at
  // kInfiniteCapacity) and its zero-capacity reverse edge.
  void AddEdge(int from, int to, int64_t capacity);
  int num_nodes() const { return static_cast<int>(first_edge_.size()); }

 private:
  friend class Dinic;
  // Edge 2k is the k-th added edge, 2k+1 its reverse; edges out of a node are
  // chained through next_.
  std::vector<int> to_;
  std::vector<int64_t> capacity_;
  std::vector<int> next_;
  std::vector<int> first_edge_;  // per node, -1 or its last added edge
};

struct MinCut {
  // The maximum flow, equal to the minimum cut's capacity; kInfiniteCapacity
  // when every cut crosses an infinite edge.
  int64_t flow = 0;
  // Per node: reachable from the source in the final residual graph. The cut
  // edges are the ones from a source-side node to a sink-side node.
  std::vector<bool> source_side;
  // Per node: reaches the sink in the final residual graph. The nodes that do
  // not form the source side of the minimum cut closest to the sink.
  std::vector<bool> reaches_sink;
};

// Requires source != sink, both nodes of `graph`.
MinCut MaxFlowMinCut(const FlowGraph& graph, int source, int sink);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_MAX_FLOW_H_
