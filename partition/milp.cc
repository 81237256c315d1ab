#include "partition/milp.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "Cbc_C_Interface.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "partition/accounting.h"
#include "partition/min_cut.h"
#include "partition/strategies.h"

namespace tc::partition {
namespace {

using ValueSet = absl::flat_hash_set<const Value*>;

// CBC's solve runs through its command-line driver, which keeps global
// state: one solve at a time.
ABSL_CONST_INIT absl::Mutex cbc_mutex(absl::kConstInit);

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

// The program of milp.h in CBC's column-major form: column i < num_save is
// s of forward value i; the rest are r of the recomputable forward nodes.
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
      const int row = AddRow(1, kInfinity);
      Available(v, row, 1);
    }
    for (const Node* node : problem.forward_nodes) {
      auto it = recompute_column_.find(node);
      if (it == recompute_column_.end()) continue;
      ValueSet constrained;
      for (const Value* u : node->inputs()) {
        if (!constrained.insert(u).second) continue;  // an operand given twice
        const int row = AddRow(0, kInfinity);
        Available(u, row, 1);
        columns_[it->second].push_back({row, -1});
      }
    }
    bytes_row_ = AddRow(-kInfinity, kInfinity);
    for (const Value* v : problem.forward_values) {
      columns_[save_column_.at(v)].push_back({bytes_row_, static_cast<double>(v->type().bytes())});
    }
  }

  int num_columns() const { return static_cast<int>(columns_.size()); }
  int num_rows() const { return static_cast<int>(row_lower_.size()); }
  int SaveColumn(const Value* v) const { return save_column_.at(v); }
  int RecomputeColumn(const Node* n) const { return recompute_column_.at(n); }

  // Loads the program into `model` with the saved bytes at most `max_bytes`.
  void Load(Cbc_Model* model, double max_bytes) {
    row_upper_[bytes_row_] = max_bytes;
    std::vector<CoinBigIndex> start = {0};
    std::vector<int> index;
    std::vector<double> value;
    for (const auto& column : columns_) {
      for (const auto& [row, coefficient] : column) {
        index.push_back(row);
        value.push_back(coefficient);
      }
      start.push_back(static_cast<CoinBigIndex>(index.size()));
    }
    const std::vector<double> lower(columns_.size(), 0), upper(columns_.size(), 1);
    Cbc_loadProblem(model, num_columns(), num_rows(), start.data(), index.data(), value.data(),
                    lower.data(), upper.data(), objective_.data(), row_lower_.data(),
                    row_upper_.data());
    for (int c = 0; c < num_columns(); ++c) Cbc_setInteger(model, c);
  }

 private:
  static constexpr double kInfinity = 1e30;  // CBC's "no bound"

  int AddColumn(double cost) {
    objective_.push_back(cost);
    columns_.emplace_back();
    return num_columns() - 1;
  }
  int AddRow(double lower, double upper) {
    row_lower_.push_back(lower);
    row_upper_.push_back(upper);
    return num_rows() - 1;
  }
  // Adds `coefficient` (s_v + r_producer(v)) to `row`.
  void Available(const Value* v, int row, double coefficient) {
    columns_[save_column_.at(v)].push_back({row, coefficient});
    if (v->is_placeholder()) return;
    if (auto it = recompute_column_.find(v->producer()); it != recompute_column_.end()) {
      columns_[it->second].push_back({row, coefficient});
    }
  }

  absl::flat_hash_map<const Value*, int> save_column_;
  absl::flat_hash_map<const Node*, int> recompute_column_;
  std::vector<std::vector<std::pair<int, double>>> columns_;  // (row, coefficient)
  std::vector<double> objective_, row_lower_, row_upper_;
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
  {
    absl::MutexLock lock(&cbc_mutex);
    std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
    program.Load(model.get(), static_cast<double>(options.max_saved_bytes));
    const std::vector<double> x0 = Assignment(program, problem, start_saved, *start);
    std::vector<int> columns(x0.size());
    for (size_t c = 0; c < x0.size(); ++c) columns[c] = static_cast<int>(c);
    Cbc_setMIPStartI(model.get(), program.num_columns(), columns.data(), x0.data());
    Cbc_setLogLevel(model.get(), 0);
    Cbc_setMaximumSeconds(model.get(), options.time_limit_seconds);
    Cbc_setAllowableGap(model.get(), 0);
    Cbc_setAllowableFractionGap(model.get(), 0);
    const absl::Time began = absl::Now();
    Cbc_solve(model.get());
    solve.seconds = absl::ToDoubleSeconds(absl::Now() - began);
    solve.proven_optimal = Cbc_isProvenOptimal(model.get()) != 0;
    solve.lower_bound = Cbc_getBestPossibleObjValue(model.get());
    if (const double* best = Cbc_bestSolution(model.get()); best != nullptr) {
      ValueSet chosen;
      for (const Value* v : problem.forward_values) {
        if (best[program.SaveColumn(v)] > 0.5) chosen.insert(v);
      }
      saved = std::move(chosen);
    }
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
