// Rematerialization problems as the research literature poses them
// (Checkmate, MLSys 2020; MOCCASIN, ICML 2023): a dependency graph in a
// fixed topological order, each node with a compute cost and the bytes of
// its output, to be scheduled so that any value may be computed again later
// under a limit on peak memory. This file reads the field's shared graphs
// (networkx node-link JSON) and measures them; the schedulers build on it.
//
//   TC_ASSIGN_OR_RETURN(partition::RematGraph g, partition::ReadNodeLinkGraph(path));
//   int64_t peak = partition::NoRematPeak(g);  // the budgets' 100%
//
// Node-link JSON: "nodes" with "id", "name", "backward", "cost_cpu" and
// "cost_ram" (bytes of the output); "links" with "source" and "target" ids.
// The order is the ids' topological order (ties by id).
#ifndef TENSORCUT_PARTITION_REMAT_GRAPH_H_
#define TENSORCUT_PARTITION_REMAT_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tc::partition {

struct RematGraph {
  struct Node {
    std::string name;
    bool backward = false;
    double cost = 0;          // compute, in the graph's own unit
    int64_t bytes = 0;        // of the output
    std::vector<int> inputs;  // indices of earlier nodes, each once
  };
  std::string name;
  std::vector<Node> nodes;  // topological order
  int64_t edges = 0;
};

// A cycle, a missing or negative cost, a link to no node or a repeated id:
// an InvalidArgumentError naming `source` and the node or link.
absl::StatusOr<RematGraph> ParseNodeLinkGraph(absl::string_view json, absl::string_view source);
absl::StatusOr<RematGraph> ReadNodeLinkGraph(const std::string& path);

// For each node, the last node that reads its output (itself if none does).
std::vector<size_t> LastReaders(const RematGraph& graph);

// The peak of one pass in order without recomputation: at step t, node t's
// output plus every earlier output that node t or a later node reads
// (MOCCASIN's definition, the 1.0 of its budgets).
int64_t NoRematPeak(const RematGraph& graph);
// The compute of one pass: the sum of the costs.
double TotalCost(const RematGraph& graph);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_REMAT_GRAPH_H_
