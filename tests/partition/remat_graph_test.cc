// Rematerialization graphs in node-link JSON: hand-made graphs read into
// their topological order, their peaks without recomputation worked out by
// hand, and every kind of bad file an error naming the node or link.
#include "partition/remat_graph.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"

namespace tc::partition {
namespace {

// Node-link JSON of nodes "id:bytes" (cost 1 each) and links "a>b".
std::string NodeLink(const std::vector<std::pair<int, int64_t>>& nodes,
                     const std::vector<std::pair<int, int>>& links) {
  std::string out = R"({"directed": true, "graph": {"name": "hand"}, "nodes": [)";
  for (size_t i = 0; i < nodes.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", R"({"id": )", nodes[i].first, R"(, "name": "n)",
                    nodes[i].first, R"(", "backward": false, "cost_cpu": 1, "cost_ram": )",
                    nodes[i].second, "}");
  }
  absl::StrAppend(&out, R"(], "links": [)");
  for (size_t i = 0; i < links.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", R"({"source": )", links[i].first, R"(, "target": )",
                    links[i].second, "}");
  }
  return out + "]}";
}

TEST_CASE("a chain's and a diamond's peak without recomputation, worked by hand") {
  // a(1) -> b(2) -> c(4): at c, b and c are live: 6.
  const RematGraph chain =
      ParseNodeLinkGraph(NodeLink({{0, 1}, {1, 2}, {2, 4}}, {{0, 1}, {1, 2}}), "chain").value();
  CHECK(chain.name == "hand");
  CHECK(chain.edges == 2);
  CHECK(NoRematPeak(chain) == 6);
  CHECK(TotalCost(chain) == 3);
  // a(1) -> b(2), a -> c(4), b -> d(8), c -> d: at c, a (read by c) and b
  // (read by d) are live: 7; at d, b and c: 14.
  const RematGraph diamond =
      ParseNodeLinkGraph(
          NodeLink({{0, 1}, {1, 2}, {2, 4}, {3, 8}}, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}), "diamond")
          .value();
  CHECK(NoRematPeak(diamond) == 14);
  CHECK(diamond.nodes[3].inputs == std::vector<int>{1, 2});
  // A long-lived value: a(8) read by the last node keeps 8 live throughout.
  const RematGraph skip =
      ParseNodeLinkGraph(
          NodeLink({{0, 8}, {1, 1}, {2, 1}, {3, 1}}, {{0, 1}, {1, 2}, {2, 3}, {0, 3}}), "skip")
          .value();
  CHECK(NoRematPeak(skip) == 8 + 1 + 1);
}

TEST_CASE("nodes listed out of order are read in their ids' topological order") {
  const RematGraph g =
      ParseNodeLinkGraph(NodeLink({{5, 1}, {2, 2}, {9, 4}}, {{2, 9}, {9, 5}}), "shuffled").value();
  REQUIRE(g.nodes.size() == 3);
  CHECK(g.nodes[0].name == "n2");
  CHECK(g.nodes[1].name == "n9");
  CHECK(g.nodes[2].name == "n5");
  CHECK(g.nodes[2].inputs == std::vector<int>{1});
}

TEST_CASE("a bad graph file is an error naming the node or link") {
  auto error = [](const std::string& json) {
    return std::string(ParseNodeLinkGraph(json, "g.json").status().message());
  };
  CHECK(error("[1, 2]") == "g.json: not a JSON object (networkx node-link data was expected)");
  CHECK(error("{\"nodes\": []}") ==
        "g.json: expected arrays \"nodes\" and \"links\" (networkx node-link data)");
  CHECK(error(NodeLink({{0, 1}, {1, 1}}, {{0, 1}, {1, 0}})) ==
        "g.json: node 0 (n0) is on a cycle or after one: no topological order");
  CHECK(error(NodeLink({{0, 1}}, {{0, 7}})) ==
        "g.json: link 0 (0 -> 7) names node 7, which is not there");
  CHECK(error(NodeLink({{0, 1}, {0, 2}}, {})) == "g.json: node id 0 is given twice");
  CHECK(error(NodeLink({{0, -5}}, {})) ==
        "g.json: node 0 (n0): costs must not be negative, got cost_cpu 1 and cost_ram -5");
  CHECK(error(R"({"nodes": [{"id": 3, "name": "x", "cost_ram": 4}], "links": []})") ==
        "g.json: node 3 has no \"cost_cpu\"");
  CHECK(
      error(
          R"({"nodes": [{"id": 3, "name": "x", "cost_cpu": "a", "cost_ram": 4}], "links": []})") ==
      "g.json: node 3: \"cost_cpu\" is \"a\"");
  CHECK(ReadNodeLinkGraph("/nonexistent/g.json").status().code() == absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tc::partition
