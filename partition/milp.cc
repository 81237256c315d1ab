#include "partition/milp.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "partition/accounting.h"
#include "partition/cbc_solver.h"
#include "partition/min_cut.h"
#include "partition/strategies.h"

namespace tc::partition {
namespace {

using ValueSet = absl::flat_hash_set<const Value*>;

// All the saved values' tie-break terms together are worth this many FLOPs.
constexpr double kTieBreakFlops = 1e-3;

template <typename Values>
int64_t TotalBytes(const Values& values) {
  int64_t bytes = 0;
  for (const Value* v : values) bytes += v->type().bytes();
  return bytes;
}

// What the backward does when the forward saves `saved`: the forward nodes
// it runs again (walking from what it reads through the producers of values
// not saved) and the saved values it reads. nullopt if that needs a primal
// not saved or a node IsRecomputable rejects.
struct Rebuild {
  absl::flat_hash_set<const Node*> nodes;
  ValueSet read_saved;
};

std::optional<Rebuild> RebuildFrom(const SaveOrRecompute& problem, const ValueSet& saved) {
  Rebuild rebuild;
  ValueSet seen;
  std::vector<const Value*> stack(problem.read_by_backward.begin(), problem.read_by_backward.end());
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    if (saved.contains(v)) {
      rebuild.read_saved.insert(v);
      continue;
    }
    if (v->is_placeholder() || !IsRecomputable(*v->producer())) return std::nullopt;
    if (!rebuild.nodes.insert(v->producer()).second) continue;
    stack.insert(stack.end(), v->producer()->inputs().begin(), v->producer()->inputs().end());
  }
  return rebuild;
}

// The program of milp.h: a column s per forward value, then a column r per
// recomputable forward node.
class Program {
 public:
  explicit Program(const SaveOrRecompute& problem) {
    double total_bytes = 0;
    for (const Value* v : problem.forward_values) total_bytes += v->type().bytes();
    for (const Value* v : problem.forward_values) {
      save_column_[v] =
          AddColumn(total_bytes == 0 ? 0 : kTieBreakFlops * v->type().bytes() / total_bytes);
    }
    for (const Node* node : problem.forward_nodes) {
      if (IsRecomputable(*node)) recompute_column_[node] = AddColumn(NodeFlops(*node));
    }
    for (const Value* v : problem.forward_values) {
      if (!problem.read_by_backward.contains(v)) continue;
      const int row = lp_.AddRow(1, kNoBound);
      Available(v, row, 1);
    }
    for (const Node* node : problem.forward_nodes) {
      auto it = recompute_column_.find(node);
      if (it == recompute_column_.end()) continue;
      ValueSet constrained;
      for (const Value* u : node->inputs()) {
        if (!constrained.insert(u).second) continue;  // an operand given twice
        const int row = lp_.AddRow(0, kNoBound);
        Available(u, row, 1);
        lp_.Set(row, it->second, -1);
      }
    }
    bytes_row_ = lp_.AddRow(-kNoBound, kNoBound);
    for (const Value* v : problem.forward_values) {
      lp_.Set(bytes_row_, save_column_.at(v), static_cast<double>(v->type().bytes()));
    }
  }

  int num_columns() const { return lp_.num_columns(); }
  int num_rows() const { return lp_.num_rows(); }
  int SaveColumn(const Value* v) const { return save_column_.at(v); }
  int RecomputeColumn(const Node* n) const { return recompute_column_.at(n); }

  // The program with the saved bytes at most `max_bytes`.
  const LinearProgram& WithMaxBytes(double max_bytes) {
    lp_.SetRowUpper(bytes_row_, max_bytes);
    return lp_;
  }

 private:
  int AddColumn(double cost) { return lp_.AddColumn({.upper = 1, .cost = cost, .integer = true}); }
  // Adds `coefficient` (s_v + r_producer(v)) to `row`.
  void Available(const Value* v, int row, double coefficient) {
    lp_.Set(row, save_column_.at(v), coefficient);
    if (v->is_placeholder()) return;
    if (auto it = recompute_column_.find(v->producer()); it != recompute_column_.end()) {
      lp_.Set(row, it->second, coefficient);
    }
  }

  absl::flat_hash_map<const Value*, int> save_column_;
  absl::flat_hash_map<const Node*, int> recompute_column_;
  LinearProgram lp_;
  int bytes_row_ = 0;
};

// The columns' values for saving `saved` and running `rebuild`'s nodes again.
std::vector<double> Assignment(const Program& program, const SaveOrRecompute& problem,
                               const ValueSet& saved, const Rebuild& rebuild) {
  std::vector<double> x(program.num_columns(), 0);
  for (const Value* v : problem.forward_values) {
    if (saved.contains(v)) x[program.SaveColumn(v)] = 1;
  }
  for (const Node* node : rebuild.nodes) x[program.RecomputeColumn(node)] = 1;
  return x;
}

double Objective(const Rebuild& rebuild, const SaveOrRecompute& problem) {
  double flops = 0, bytes = 0, total_bytes = 0;
  for (const Node* node : rebuild.nodes) flops += NodeFlops(*node);
  for (const Value* v : problem.forward_values) {
    total_bytes += v->type().bytes();
    if (rebuild.read_saved.contains(v)) bytes += v->type().bytes();
  }
  return flops + (total_bytes == 0 ? 0 : kTieBreakFlops * bytes / total_bytes);
}

// Replaces the start by the best of `options.starts` that fits and
// recomputes less.
void BetterStart(const SaveOrRecompute& problem, const MilpOptions& options, ValueSet* saved,
                 std::optional<Rebuild>* rebuild) {
  absl::flat_hash_map<absl::string_view, const Value*> by_name;
  for (const Value* v : problem.forward_values) by_name[v->name()] = v;
  double best = Objective(**rebuild, problem);
  for (const PartitionResult* partition : options.starts) {
    ValueSet candidate;
    for (const SavedValue& s : partition->saved) {
      auto it = by_name.find(s.name);
      if (it != by_name.end()) candidate.insert(it->second);
    }
    std::optional<Rebuild> r = RebuildFrom(problem, candidate);
    if (!r.has_value() || TotalBytes(r->read_saved) > options.max_saved_bytes) continue;
    if (const double objective = Objective(*r, problem); objective < best) {
      best = objective;
      *saved = r->read_saved;
      *rebuild = std::move(r);
    }
  }
}

const bool kRegistered =
    RegisterPartitioner("milp", [](double budget) -> absl::StatusOr<PartitionFn> {
      TC_RETURN_IF_ERROR(CheckActivationMemoryBudget(budget));
      return MilpPartitioner(budget);
    });

}  // namespace

absl::StatusOr<MilpPartitionResult> MilpPartition(const Graph& joint, const JointLayout& layout,
                                                  const MilpOptions& options) {
  TC_ASSIGN_OR_RETURN(const SaveOrRecompute problem, MakeSaveOrRecompute(joint, layout));
  TC_ASSIGN_OR_RETURN(const std::vector<Value*> least,
                      MinCutSavedValues(joint, layout, {.may_recompute = IsRecomputable}));
  if (const int64_t least_bytes = TotalBytes(least); options.max_saved_bytes < least_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "no partition saves at most %d bytes: the least any saves is %d (recompute_all's)",
        options.max_saved_bytes, least_bytes));
  }
  if (!(options.time_limit_seconds > 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the MILP time limit must be positive, got %g seconds", options.time_limit_seconds));
  }
  ValueSet start_saved(least.begin(), least.end());
  std::optional<Rebuild> start = RebuildFrom(problem, start_saved);
  if (!start.has_value()) return absl::InternalError("recompute_all's cut is not a partition");
  BetterStart(problem, options, &start_saved, &start);

  Program program(problem);
  MilpSolve solve;
  solve.variables = program.num_columns();
  solve.constraints = program.num_rows();
  ValueSet saved = start_saved;
  const CbcSolution solution =
      SolveWithCbc(program.WithMaxBytes(static_cast<double>(options.max_saved_bytes)),
                   {.time_limit_seconds = options.time_limit_seconds,
                    .start = Assignment(program, problem, start_saved, *start)});
  solve.seconds = solution.seconds;
  solve.proven_optimal = solution.proven_optimal;
  solve.lower_bound = std::max(0.0, solution.bound);  // no FLOPs below nothing
  if (solution.found) {
    ValueSet chosen;
    for (const Value* v : problem.forward_values) {
      if (solution.x[static_cast<size_t>(program.SaveColumn(v))] > 0.5) chosen.insert(v);
    }
    saved = std::move(chosen);
  }

  // The backward reads only some of what the solution saves; keep those.
  std::optional<Rebuild> rebuild = RebuildFrom(problem, saved);
  if (!rebuild.has_value() || TotalBytes(rebuild->read_saved) > options.max_saved_bytes) {
    // A solution CBC's tolerances let through that is not one: the start.
    saved = start_saved;
    rebuild = start;
    solve.proven_optimal = false;
  }
  solve.objective = Objective(*rebuild, problem);
  solve.lower_bound = std::min(solve.lower_bound, solve.objective);
  solve.relative_gap = solve.proven_optimal || solve.objective <= 0
                           ? 0
                           : (solve.objective - solve.lower_bound) / solve.objective;
  std::vector<Value*> saved_values;
  for (Value* v : problem.forward_values) {
    if (rebuild->read_saved.contains(v)) saved_values.push_back(v);
  }
  TC_ASSIGN_OR_RETURN(PartitionResult partition, AssemblePartition(joint, layout, saved_values));
  return MilpPartitionResult{std::move(partition), solve};
}

PartitionFn MilpPartitioner(double budget, double time_limit_seconds, MilpSolve* solve,
                            std::vector<const PartitionResult*> extra_starts) {
  return [budget, time_limit_seconds, solve, extra_starts = std::move(extra_starts)](
             const Graph& joint, const JointLayout& layout) -> absl::StatusOr<PartitionResult> {
    TC_ASSIGN_OR_RETURN(const int64_t max_bytes, SavedBytesAtBudget(joint, layout, budget));
    TC_ASSIGN_OR_RETURN(const PartitionResult knapsack, BudgetPartition(joint, layout, budget));
    MilpOptions options{.max_saved_bytes = max_bytes, .time_limit_seconds = time_limit_seconds};
    options.starts = extra_starts;
    options.starts.push_back(&knapsack);
    TC_ASSIGN_OR_RETURN(MilpPartitionResult result, MilpPartition(joint, layout, options));
    if (solve != nullptr) *solve = result.solve;
    return std::move(result.partition);
  };
}

std::string MilpSolveText(const MilpSolve& solve) {
  const std::string size =
      absl::StrFormat("%d variables, %d constraints", solve.variables, solve.constraints);
  if (solve.proven_optimal) {
    return absl::StrFormat("proven optimal in %.2f s (%s)", solve.seconds, size);
  }
  return absl::StrFormat(
      "stopped after %.2f s without proof (%s): %.6g FLOPs recomputed, bound %.6g, gap %.2f%%",
      solve.seconds, size, solve.objective, solve.lower_bound, 100 * solve.relative_gap);
}

}  // namespace tc::partition
