// `tensorcut remat --graph FILE.json`: a rematerialization research graph
// (partition/remat_graph.h) read, checked and measured: its nodes and
// edges, the peak of one pass without recomputation (the budgets' 100%) and
// its compute. --json prints one object.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "partition/remat_graph.h"
#include "tools/cli.h"
#include "tools/flags.h"
#include "tools/subcommands.h"

namespace tc {
namespace {

absl::Status Run() {
  const std::string path = absl::GetFlag(FLAGS_graph);
  if (path.empty()) {
    return absl::InvalidArgumentError("--graph FILE.json: a graph in networkx node-link JSON");
  }
  TC_ASSIGN_OR_RETURN(const partition::RematGraph graph,
                      partition::ReadNodeLinkGraph(OutputPath(path)));
  int64_t backward = 0;
  for (const partition::RematGraph::Node& node : graph.nodes) backward += node.backward;
  const int64_t peak = partition::NoRematPeak(graph);
  const double compute = partition::TotalCost(graph);
  if (absl::GetFlag(FLAGS_json)) {
    const nlohmann::ordered_json out = {
        {"graph", graph.name},        {"nodes", graph.nodes.size()}, {"edges", graph.edges},
        {"backward_nodes", backward}, {"no_remat_peak_bytes", peak}, {"compute", compute}};
    std::printf("%s\n", out.dump().c_str());
    return absl::OkStatus();
  }
  std::printf("%s: %zu nodes (%lld backward), %lld edges\n", graph.name.c_str(), graph.nodes.size(),
              static_cast<long long>(backward), static_cast<long long>(graph.edges));
  std::printf("one pass without recomputation: peak %.3f GB, compute %g\n", peak / 1e9, compute);
  return absl::OkStatus();
}

}  // namespace

int RematCommand() { return ExitCode("remat", Run()); }

}  // namespace tc
