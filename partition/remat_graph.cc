#include "partition/remat_graph.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <queue>
#include <sstream>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tc::partition {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(absl::string_view source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

// The field `key` of `object` as T, or an error naming `where`.
template <typename T>
absl::StatusOr<T> Field(const Json& object, const char* key, absl::string_view source,
                        absl::string_view where) {
  const auto it = object.find(key);
  if (it == object.end()) {
    return Invalid(source, absl::StrCat(where, " has no \"", key, "\""));
  }
  const bool fits = std::is_same_v<T, bool>          ? it->is_boolean()
                    : std::is_same_v<T, std::string> ? it->is_string()
                    : std::is_floating_point_v<T>    ? it->is_number()
                                                     : it->is_number_integer();
  if (!fits) return Invalid(source, absl::StrCat(where, ": \"", key, "\" is ", it->dump()));
  return it->get<T>();
}

}  // namespace

absl::StatusOr<RematGraph> ParseNodeLinkGraph(absl::string_view text, absl::string_view source) {
  const Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return Invalid(source, "not a JSON object (networkx node-link data was expected)");
  }
  if (!json.contains("nodes") || !json["nodes"].is_array() || !json.contains("links") ||
      !json["links"].is_array()) {
    return Invalid(source, "expected arrays \"nodes\" and \"links\" (networkx node-link data)");
  }
  RematGraph graph;
  if (json.contains("graph") && json["graph"].is_object() && json["graph"].contains("name") &&
      json["graph"]["name"].is_string()) {
    graph.name = json["graph"]["name"].get<std::string>();
  }
  // Nodes by id, in the file's order.
  struct Read {
    int64_t id;
    RematGraph::Node node;
  };
  std::vector<Read> read;
  absl::flat_hash_map<int64_t, size_t> by_id;
  for (size_t i = 0; i < json["nodes"].size(); ++i) {
    const Json& n = json["nodes"][i];
    const std::string where = absl::StrCat("node ", i);
    if (!n.is_object()) return Invalid(source, absl::StrCat(where, " is not an object"));
    Read r;
    if (auto id = Field<int64_t>(n, "id", source, where); id.ok()) {
      r.id = *id;
    } else {
      return id.status();
    }
    const std::string named = absl::StrCat("node ", r.id);
    auto name = Field<std::string>(n, "name", source, named);
    auto cost = Field<double>(n, "cost_cpu", source, named);
    auto bytes = Field<int64_t>(n, "cost_ram", source, named);
    if (!name.ok()) return name.status();
    if (!cost.ok()) return cost.status();
    if (!bytes.ok()) return bytes.status();
    const std::string label = absl::StrCat("node ", r.id, " (", *name, ")");
    if (!(*cost >= 0) || *bytes < 0) {
      return Invalid(source, absl::StrCat(label, ": costs must not be negative, got cost_cpu ",
                                          *cost, " and cost_ram ", *bytes));
    }
    r.node.name = *name;
    r.node.cost = *cost;
    r.node.bytes = *bytes;
    if (n.contains("backward")) {
      auto backward = Field<bool>(n, "backward", source, label);
      if (!backward.ok()) return backward.status();
      r.node.backward = *backward;
    }
    if (!by_id.emplace(r.id, read.size()).second) {
      return Invalid(source, absl::StrCat("node id ", r.id, " is given twice"));
    }
    read.push_back(std::move(r));
  }
  // Links as inputs, by file position.
  std::vector<std::vector<size_t>> successors(read.size());
  std::vector<std::vector<size_t>> inputs(read.size());
  std::vector<int> pending(read.size(), 0);
  for (size_t i = 0; i < json["links"].size(); ++i) {
    const Json& l = json["links"][i];
    const std::string where = absl::StrCat("link ", i);
    if (!l.is_object()) return Invalid(source, absl::StrCat(where, " is not an object"));
    auto from = Field<int64_t>(l, "source", source, where);
    auto to = Field<int64_t>(l, "target", source, where);
    if (!from.ok()) return from.status();
    if (!to.ok()) return to.status();
    const auto s = by_id.find(*from), t = by_id.find(*to);
    if (s == by_id.end() || t == by_id.end()) {
      return Invalid(source, absl::StrCat(where, " (", *from, " -> ", *to, ") names node ",
                                          s == by_id.end() ? *from : *to, ", which is not there"));
    }
    if (absl::c_linear_search(inputs[t->second], s->second)) continue;  // a repeated link
    inputs[t->second].push_back(s->second);
    successors[s->second].push_back(t->second);
    ++pending[t->second];
    ++graph.edges;
  }
  // Kahn's order, the smallest id first among the ready.
  using Ready = std::pair<int64_t, size_t>;
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
  for (size_t i = 0; i < read.size(); ++i) {
    if (pending[i] == 0) ready.emplace(read[i].id, i);
  }
  std::vector<int> position(read.size(), -1);
  while (!ready.empty()) {
    const size_t i = ready.top().second;
    ready.pop();
    position[i] = static_cast<int>(graph.nodes.size());
    graph.nodes.push_back(read[i].node);
    for (size_t j : successors[i]) {
      if (--pending[j] == 0) ready.emplace(read[j].id, j);
    }
  }
  if (graph.nodes.size() != read.size()) {
    for (size_t i = 0; i < read.size(); ++i) {
      if (position[i] < 0) {
        return Invalid(source, absl::StrCat("node ", read[i].id, " (", read[i].node.name,
                                            ") is on a cycle or after one: no topological order"));
      }
    }
  }
  for (size_t i = 0; i < read.size(); ++i) {
    std::vector<int>& in = graph.nodes[static_cast<size_t>(position[i])].inputs;
    for (size_t j : inputs[i]) in.push_back(position[j]);
    absl::c_sort(in);
  }
  return graph;
}

absl::StatusOr<RematGraph> ReadNodeLinkGraph(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the graph"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseNodeLinkGraph(text.str(), path);
}

std::vector<size_t> LastReaders(const RematGraph& graph) {
  std::vector<size_t> last_read(graph.nodes.size());
  for (size_t t = 0; t < graph.nodes.size(); ++t) {
    last_read[t] = t;
    for (int i : graph.nodes[t].inputs) last_read[static_cast<size_t>(i)] = t;
  }
  return last_read;
}

int64_t NoRematPeak(const RematGraph& graph) {
  const size_t n = graph.nodes.size();
  const std::vector<size_t> last_read = LastReaders(graph);
  // Live at step t: t itself, and each u < t with last_read[u] >= t.
  int64_t peak = 0, live = 0;  // live: bytes of earlier outputs still read at t or later
  std::vector<std::vector<size_t>> dies_after(n);
  for (size_t u = 0; u < n; ++u) dies_after[last_read[u]].push_back(u);
  for (size_t t = 0; t < n; ++t) {
    peak = std::max(peak, live + graph.nodes[t].bytes);
    live += graph.nodes[t].bytes;
    for (size_t u : dies_after[t]) live -= graph.nodes[u].bytes;
  }
  return peak;
}

double TotalCost(const RematGraph& graph) {
  double cost = 0;
  for (const RematGraph::Node& node : graph.nodes) cost += node.cost;
  return cost;
}

}  // namespace tc::partition
