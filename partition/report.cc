#include "partition/report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/dot.h"
#include "nlohmann/json.hpp"
#include "partition/accounting.h"

namespace tc::partition {
namespace {

// The value whose buffer `v` uses: `v` itself, or for a view the buffer of
// the value it views.
const Value* Storage(const Value* v) {
  while (!v->is_placeholder() && v->producer()->def().Has(kTraitView)) v = v->producer()->input(0);
  return v;
}

int64_t BackwardPeakBytes(const Graph& backward) {
  // The caller holds the backward's inputs (saved values, tangents) for the
  // whole run, so they count throughout.
  int64_t inputs = 0;
  for (const Value* p : backward.placeholders()) inputs += p->type().bytes();

  // The step after which each node result's buffer is freed: its last
  // reader's, through every view of it; never for an output.
  const std::vector<Node*> nodes = backward.nodes();
  const int never = static_cast<int>(nodes.size());
  absl::flat_hash_map<const Value*, int> free_after;
  for (int i = 0; i < never; ++i) {
    for (const Value* in : nodes[i]->inputs()) {
      const Value* s = Storage(in);
      if (!s->is_placeholder()) free_after[s] = std::max(free_after[s], i);
    }
    for (const Value* r : nodes[i]->results()) {
      if (Storage(r) == r) free_after.try_emplace(r, i);  // unused: freed at once
    }
  }
  for (const Value* out : backward.outputs()) {
    const Value* s = Storage(out);
    if (!s->is_placeholder()) free_after[s] = never;
  }
  std::vector<std::vector<const Value*>> freed(nodes.size());
  for (const auto& [value, step] : free_after) {
    if (step < never) freed[step].push_back(value);
  }

  int64_t live = 0, peak = 0;
  for (int i = 0; i < never; ++i) {
    for (const Value* r : nodes[i]->results()) {
      if (Storage(r) == r) live += r->type().bytes();
    }
    peak = std::max(peak, live);
    for (const Value* v : freed[i]) live -= v->type().bytes();
  }
  return inputs + peak;
}

// `amount` with an SI prefix: "512 B", "1.31 kB", "9.80 MB"; "32 FLOP", "12.58 MFLOP".
std::string WithPrefix(double amount, absl::string_view unit) {
  if (amount < 1000) return absl::StrFormat("%.0f %s", amount, unit);
  const char* prefixes[] = {"k", "M", "G", "T"};
  int p = 0;
  for (amount /= 1e3; amount >= 1000 && p < 3; ++p) amount /= 1e3;
  return absl::StrFormat("%.2f %s%s", amount, prefixes[p], unit);
}

// A dim in JSON: a number, or a symbolic one as its text ("s0").
nlohmann::ordered_json JsonDim(int64_t dim) {
  if (IsSymbolic(dim)) return DimToString(dim);
  return dim;
}

}  // namespace

PartitionReport MakeReport(const Graph& joint, const JointLayout& /*layout*/,
                           const PartitionResult& part) {
  PartitionReport report;
  int64_t formula = 0;
  for (const SavedValue& s : part.saved) {
    formula = DimAdd(formula, DimMul(NumElements(s.type.shape), ItemSize(s.type.dtype)));
    const Value* v = joint.FindValue(s.name);
    SavedValueReport saved;
    saved.name = s.name;
    saved.op =
        v == nullptr || v->is_placeholder() ? "input" : std::string(OpName(v->producer()->op()));
    saved.type = s.type;
    saved.bytes = s.bytes;
    saved.is_activation = IsActivation(joint, s);
    report.saved_bytes += s.bytes;
    if (saved.is_activation) report.saved_activation_bytes += s.bytes;
    report.saved.push_back(std::move(saved));
  }
  report.saved_bytes_formula = DimToString(formula);
  const RecomputeStats recomputed = Recomputed(part);
  report.recomputed_nodes = recomputed.nodes;
  report.recompute_flops = recomputed.flops;
  report.fw_nodes = part.forward.num_nodes();
  report.bw_nodes = part.backward.num_nodes();
  report.bw_peak_bytes = BackwardPeakBytes(part.backward);
  return report;
}

std::string ReportText(const PartitionReport& report) {
  size_t name_width = 11, op_width = 2, shape_width = 5;
  for (const SavedValueReport& s : report.saved) {
    name_width = std::max(name_width, s.name.size() + 1);
    op_width = std::max(op_width, s.op.size());
    shape_width = std::max(shape_width, ShapeToString(s.type.shape).size());
  }
  std::string out =
      absl::StrFormat("%-*s  %-*s  %-*s  %-5s  %10s  %s\n", name_width, "saved value", op_width,
                      "op", shape_width, "shape", "dtype", "bytes", "activation");
  for (const SavedValueReport& s : report.saved) {
    absl::StrAppendFormat(&out, "%-*s  %-*s  %-*s  %-5s  %10s  %s\n", name_width,
                          absl::StrCat("%", s.name), op_width, s.op, shape_width,
                          ShapeToString(s.type.shape), DTypeName(s.type.dtype),
                          WithPrefix(s.bytes, "B"), s.is_activation ? "yes" : "no");
  }
  absl::StrAppendFormat(&out, "saved: %d values, %s (activations %s)", report.saved.size(),
                        WithPrefix(report.saved_bytes, "B"),
                        WithPrefix(report.saved_activation_bytes, "B"));
  if (report.saved_bytes_formula != absl::StrCat(report.saved_bytes)) {
    absl::StrAppendFormat(&out, "; %s bytes in the symbols (figures at the example size)",
                          report.saved_bytes_formula);
  }
  out += "\n";
  absl::StrAppendFormat(&out, "recomputed in the backward: %d nodes, %s\n", report.recomputed_nodes,
                        WithPrefix(report.recompute_flops, "FLOP"));
  absl::StrAppendFormat(&out, "forward %d nodes, backward %d nodes, backward peak %s\n",
                        report.fw_nodes, report.bw_nodes, WithPrefix(report.bw_peak_bytes, "B"));
  if (report.measured_peak_bytes) {
    absl::StrAppendFormat(&out, "compiled step: planned peak %s\n",
                          WithPrefix(*report.measured_peak_bytes, "B"));
  }
  return out;
}

std::string ReportJson(const PartitionReport& report) {
  nlohmann::ordered_json saved = nlohmann::ordered_json::array();
  for (const SavedValueReport& s : report.saved) {
    nlohmann::ordered_json shape = nlohmann::ordered_json::array();
    for (const int64_t dim : s.type.shape) shape.push_back(JsonDim(dim));
    saved.push_back({{"name", s.name},
                     {"op", s.op},
                     {"shape", std::move(shape)},
                     {"dtype", std::string(DTypeName(s.type.dtype))},
                     {"bytes", s.bytes},
                     {"activation", s.is_activation}});
  }
  const nlohmann::ordered_json json = {
      {"saved_bytes", report.saved_bytes},
      {"saved_bytes_formula", report.saved_bytes_formula},
      {"saved_activation_bytes", report.saved_activation_bytes},
      {"saved_values", std::move(saved)},
      {"recomputed_nodes", report.recomputed_nodes},
      {"recompute_flops", report.recompute_flops},
      {"fw_nodes", report.fw_nodes},
      {"bw_nodes", report.bw_nodes},
      {"bw_peak_bytes", report.bw_peak_bytes},
      {"measured_peak_bytes", report.measured_peak_bytes
                                  ? nlohmann::ordered_json(*report.measured_peak_bytes)
                                  : nlohmann::ordered_json(nullptr)}};
  // Value names are ASCII; `replace` keeps a stray byte from throwing.
  return json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string JointDot(const Graph& joint, const JointLayout& layout, const PartitionResult& part) {
  absl::flat_hash_set<std::string> in_forward, in_backward, recomputed, saved;
  for (const Node* n : part.forward.nodes()) in_forward.insert(n->result(0)->name());
  for (const Node* n : part.backward.nodes()) in_backward.insert(n->result(0)->name());
  for (const Node* n : RecomputedNodes(part)) recomputed.insert(n->result(0)->name());
  for (const SavedValue& s : part.saved) saved.insert(s.name);

  // A line per saved value, and an outline when there is one.
  auto mark_saved = [&](const std::vector<const Value*>& values, DotItem& item) {
    bool outlined = false;
    for (const Value* v : values) {
      if (!saved.contains(v->name())) continue;
      absl::StrAppend(&item.label, "\nsaved");
      if (values.size() > 1) absl::StrAppend(&item.label, " %", v->name());  // which result
      outlined = true;
    }
    if (outlined) absl::StrAppend(&item.attrs, ", color=", kDotSavedBorder, ", penwidth=3");
  };
  DotStyle style;
  style.placeholder = [&](const Value& p, int index, DotItem& item) {
    item.attrs =
        absl::StrCat("fillcolor=", index < layout.num_primals ? kDotPrimalFill : kDotTangentFill);
    mark_saved({&p}, item);
  };
  style.node = [&](const Node& n, DotItem& item) {
    const std::string& name = n.result(0)->name();
    item.attrs = absl::StrCat("fillcolor=", in_forward.contains(name)    ? kDotForwardFill
                                            : in_backward.contains(name) ? kDotBackwardFill
                                                                         : kDotUnusedFill);
    if (recomputed.contains(name)) {
      absl::StrAppend(&item.label, "\nrecomputed");
      absl::StrAppend(&item.attrs, ", style=\"filled,dashed\"");
    }
    mark_saved({n.results().begin(), n.results().end()}, item);
  };
  return GraphDot(joint, style, "joint");
}

}  // namespace tc::partition
