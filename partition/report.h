// What a partition did, in numbers people can compare across strategies: the
// saved values, their bytes, what the backward recomputes and at what cost,
// node counts, the backward's estimated peak memory and, once compiled, the
// step's planned peak. As a text table, as
// JSON, and the joint graph as Graphviz DOT with both sides coloured.
//
//   PartitionReport r = MakeReport(joint.graph, joint.layout, *part);
//   std::cout << ReportText(r);         // a table
//   std::cout << ReportJson(r);         // one JSON object
//   WriteFile("cnn.dot", JointDot(joint.graph, joint.layout, *part));  // dot -Tsvg
#ifndef TENSORCUT_PARTITION_REPORT_H_
#define TENSORCUT_PARTITION_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "graph/joint_layout.h"
#include "partition/partition.h"

namespace tc::partition {

struct SavedValueReport {
  std::string name;
  std::string op;  // the producing op, or "input" for a graph input
  TensorType type;
  int64_t bytes = 0;
  bool is_activation = false;  // neither a graph input nor a view of one (IsActivation)
};

struct PartitionReport {
  std::vector<SavedValueReport> saved;
  // Byte figures are at the example size (the symbols' hints) of a symbolic
  // graph; saved_bytes_formula gives the saved bytes in the symbols
  // ("1585152*s0"), the number itself for a static graph.
  int64_t saved_bytes = 0;
  std::string saved_bytes_formula;
  int64_t saved_activation_bytes = 0;
  int recomputed_nodes = 0;    // forward nodes the backward graph runs again
  double recompute_flops = 0;  // their FLOPs, by the op table's cost model
  int fw_nodes = 0;
  int bw_nodes = 0;
  // The most bytes live at once while the backward graph runs in order: its
  // inputs (saved values and tangents, held by the caller throughout), plus
  // each node's results from definition to last use; outputs stay live. A
  // view takes no bytes of its own and keeps the buffer it views alive.
  int64_t bw_peak_bytes = 0;
  // The compiled step's planned peak (pipeline/step_memory.h): set by a
  // caller that compiled the partition, unset by MakeReport (a partition
  // alone does not say how its halves are compiled).
  std::optional<int64_t> measured_peak_bytes;
};

PartitionReport MakeReport(const Graph& joint, const JointLayout& layout,
                           const PartitionResult& part);

// A table: a line per saved value, then the totals (the planned peak's
// line only when it is set).
std::string ReportText(const PartitionReport& report);
// One JSON object with the fields above (saved values as an array of
// {name, op, shape, dtype, bytes, activation}; measured_peak_bytes null when
// unset). No trailing newline.
std::string ReportJson(const PartitionReport& report);

// The joint graph in Graphviz DOT, one node per placeholder and per op
// (labelled "op %result"), edges labelled with the value's type. Fill: nodes
// of the forward graph, nodes only of the backward graph, nodes of neither,
// primals and tangents each in their kDot*Fill colour. Nodes whose result is
// saved are outlined in kDotSavedBorder with a "saved" line; forward
// nodes the backward runs again are dashed with a "recomputed" line.
inline constexpr char kDotForwardFill[] = "lightblue";
inline constexpr char kDotBackwardFill[] = "lightsalmon";
inline constexpr char kDotUnusedFill[] = "lightgrey";
inline constexpr char kDotPrimalFill[] = "palegreen";
inline constexpr char kDotTangentFill[] = "khaki";
inline constexpr char kDotSavedBorder[] = "red";
std::string JointDot(const Graph& joint, const JointLayout& layout, const PartitionResult& part);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_REPORT_H_
