#include "partition/cbc_solver.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "CbcModel.hpp"
#include "CbcSolver.hpp"
#include "ClpSimplex.hpp"
#include "ClpSolve.hpp"
#include "OsiClpSolverInterface.hpp"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace tc::partition {
namespace {

ABSL_CONST_INIT absl::Mutex cbc_mutex(absl::kConstInit);

}  // namespace

int LinearProgram::AddColumn(const Column& column) {
  columns_.push_back(column);
  entries_.emplace_back();
  return num_columns() - 1;
}

int LinearProgram::AddRow(double lower, double upper) {
  row_lower_.push_back(lower);
  row_upper_.push_back(upper);
  return num_rows() - 1;
}

void LinearProgram::Set(int row, int column, double coefficient) {
  auto& entries = entries_[static_cast<size_t>(column)];
  // Rows are filled in the order they are added, so a repeated entry is the last.
  if (!entries.empty() && entries.back().first == row) {
    entries.back().second += coefficient;
    return;
  }
  entries.push_back({row, coefficient});
}

bool LinearProgram::has_integers() const {
  return std::any_of(columns_.begin(), columns_.end(), [](const Column& c) { return c.integer; });
}

// Loads a LinearProgram into Clp through its OSI interface, which CBC
// solves from (a friend, so the layout stays private to the program).
class LoadedCbcModel {
 public:
  explicit LoadedCbcModel(const LinearProgram& program) {
    std::vector<CoinBigIndex> start = {0};
    std::vector<int> index;
    std::vector<double> value, lower, upper, cost;
    for (size_t c = 0; c < program.columns_.size(); ++c) {
      for (const auto& [row, coefficient] : program.entries_[c]) {
        index.push_back(row);
        value.push_back(coefficient);
      }
      start.push_back(static_cast<CoinBigIndex>(index.size()));
      lower.push_back(program.columns_[c].lower);
      upper.push_back(program.columns_[c].upper);
      cost.push_back(program.columns_[c].cost);
    }
    solver_.loadProblem(program.num_columns(), program.num_rows(), start.data(), index.data(),
                        value.data(), lower.data(), upper.data(), cost.data(),
                        program.row_lower_.data(), program.row_upper_.data());
    for (int c = 0; c < program.num_columns(); ++c) {
      if (program.columns_[static_cast<size_t>(c)].integer) solver_.setInteger(c);
    }
    solver_.messageHandler()->setLogLevel(0);
    solver_.getModelPtr()->messageHandler()->setLogLevel(0);
  }
  OsiClpSolverInterface& solver() { return solver_; }

 private:
  OsiClpSolverInterface solver_;
};

namespace {

// Solves the linear relaxation, presolved, within `seconds` of wall time:
// CBC's driver neither presolves it nor stops it (on MobileNet's schedule at
// 0.8, 28.5 s there against 9.8 s here, on an AMD EPYC). True when it is
// optimal. The limit is lifted after, so that the branch and bound's copy
// of the solver does not inherit it.
bool SolveRootLp(OsiClpSolverInterface& solver, double seconds) {
  ClpSolve options;
  options.setPresolveType(ClpSolve::presolveOn);
  solver.setSolveOptions(options);
  solver.getModelPtr()->setMaximumWallSeconds(std::max(seconds, 1e-9));
  solver.initialSolve();
  solver.getModelPtr()->setMaximumWallSeconds(-1);
  return solver.isProvenOptimal();
}

// Branch and bound from the solved root (CBC's driver, with its default
// cuts and heuristics, reuses the root's basis), from `start` when it has
// one value per column, stopped after `seconds` of wall time. Given a
// start, the feasibility pump is off: it overran the time limit by seconds
// on MobileNet's schedule to find what the start already is.
void BranchAndBound(CbcModel& model, const std::vector<double>& start, double seconds) {
  CbcSolverUsefulData data;
  CbcMain0(model, data);
  const bool started = start.size() == static_cast<size_t>(model.getNumCols());
  if (started) {
    std::vector<std::pair<std::string, double>> named;
    for (size_t c = 0; c < start.size(); ++c) {
      named.emplace_back(model.solver()->getColName(static_cast<int>(c)), start[c]);
    }
    model.setMIPStart(named);
  }
  const std::string limit = absl::StrCat(std::max(seconds, 1e-9));
  std::vector<const char*> args = {
      "tensorcut",   "-log",          "0", "-timeMode", "elapsed", "-seconds",
      limit.c_str(), "-allowableGap", "0", "-ratioGap", "0"};
  if (started) args.insert(args.end(), {"-feas", "off"});
  args.insert(args.end(), {"-solve", "-quit"});
  CbcMain1(
      static_cast<int>(args.size()), args.data(), model, [](CbcModel*, int) { return 0; }, data);
}

}  // namespace

CbcSolution SolveWithCbc(const LinearProgram& program, const CbcOptions& options) {
  absl::MutexLock lock(&cbc_mutex);
  const absl::Time began = absl::Now();
  const auto elapsed = [&] { return absl::ToDoubleSeconds(absl::Now() - began); };
  LoadedCbcModel loaded(program);
  OsiClpSolverInterface& solver = loaded.solver();
  CbcSolution solution;
  const bool root_optimal = SolveRootLp(solver, options.time_limit_seconds);
  if (!program.has_integers() || !root_optimal) {
    // A linear program's answer, or a relaxation that proves the program
    // infeasible or ran out of time (no bound then).
    solution.proven_infeasible = solver.isProvenPrimalInfeasible();
    if (root_optimal) {
      solution.found = solution.proven_optimal = true;
      solution.x.assign(solver.getColSolution(), solver.getColSolution() + program.num_columns());
      solution.objective = solution.bound = solver.getObjValue();
    }
    solution.seconds = elapsed();
    return solution;
  }
  std::vector<double> start = options.start;
  if (options.start_from_relaxation) {
    const double* relaxed = solver.getColSolution();
    std::vector<double> rounded =
        options.start_from_relaxation({relaxed, relaxed + program.num_columns()});
    if (rounded.size() == static_cast<size_t>(program.num_columns())) start = std::move(rounded);
  }
  const double root_bound = solver.getObjValue();
  CbcModel model(solver);
  BranchAndBound(model, start, options.time_limit_seconds - elapsed());
  solution.seconds = elapsed();
  solution.proven_infeasible = model.isProvenInfeasible();
  solution.proven_optimal = model.isProvenOptimal() && model.bestSolution() != nullptr;
  if (model.bestSolution() != nullptr && !solution.proven_infeasible) {
    solution.found = true;
    solution.x.assign(model.bestSolution(), model.bestSolution() + program.num_columns());
    solution.objective = model.getObjValue();
  }
  if (solution.proven_optimal) {
    solution.bound = solution.objective;
  } else {
    // CBC gives its incumbent (or its infinity) when it has no bound yet;
    // the root relaxation's optimum is one anyway.
    const double bound = model.getBestPossibleObjValue();
    const bool known =
        std::abs(bound) < kNoBound && !(solution.found && bound >= solution.objective);
    solution.bound = known ? std::max(bound, root_bound) : root_bound;
  }
  return solution;
}

}  // namespace tc::partition
