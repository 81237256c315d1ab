// Mixed-integer and linear programs in column form, solved by COIN-OR CBC:
// the one place that talks to CBC, for the save-or-recompute MILP
// (partition/milp.h) and the rematerialization schedulers
// (partition/remat_milp.h).
//
//   LinearProgram lp;
//   const int x = lp.AddColumn({.upper = 1, .cost = -1, .integer = true});
//   const int row = lp.AddRow(-kNoBound, 0.5);
//   lp.Set(row, x, 1);                              // x <= 0.5
//   CbcSolution s = SolveWithCbc(lp, {.time_limit_seconds = 1});
//   // s.proven_optimal, s.x[x] == 0
//
// A program with no integer column is solved as a linear program (its
// optimum is then also its bound). CBC's driver keeps global state, so one
// solve runs at a time, whichever thread asks.
#ifndef TENSORCUT_PARTITION_CBC_SOLVER_H_
#define TENSORCUT_PARTITION_CBC_SOLVER_H_

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace tc::partition {

inline constexpr double kNoBound = 1e30;  // CBC's infinity

class LinearProgram {
 public:
  struct Column {
    double lower = 0;
    double upper = 1;
    double cost = 0;  // minimised
    bool integer = false;
  };
  int AddColumn(const Column& column);
  int AddRow(double lower, double upper);
  // Adds `coefficient` to the entry at (row, column); fill each row before
  // adding the next.
  void Set(int row, int column, double coefficient);
  void SetRowUpper(int row, double upper) { row_upper_[static_cast<size_t>(row)] = upper; }

  int num_columns() const { return static_cast<int>(columns_.size()); }
  int num_rows() const { return static_cast<int>(row_lower_.size()); }
  bool has_integers() const;

 private:
  friend class LoadedCbcModel;
  std::vector<Column> columns_;
  std::vector<std::vector<std::pair<int, double>>> entries_;  // per column: (row, coefficient)
  std::vector<double> row_lower_, row_upper_;
};

struct CbcOptions {
  // Wall time for the whole solve: the root LP (or a linear program) stops
  // at it, then the branch and bound gets what is left. CBC checks its clock
  // between phases, so a solve may end a few seconds late.
  double time_limit_seconds = 10;
  // A solution to start from (one value per column), or empty. CBC drops a
  // start that breaks a row; one of another length is not given to it.
  std::vector<double> start;
  // A mixed-integer program's: called with the optimum of its relaxation
  // before branching (with the solver's lock held: it must not solve),
  // returns a start cheaper than `start` (rounded from it), which replaces
  // it, or empty.
  std::function<std::vector<double>(const std::vector<double>& relaxed)> start_from_relaxation;
};

struct CbcSolution {
  bool found = false;              // x holds a feasible solution
  bool proven_optimal = false;     // and no better one exists
  bool proven_infeasible = false;  // or unbounded, which no program here is
  std::vector<double> x;
  double objective = 0;  // of x
  // No solution costs less; -kNoBound when CBC proved no bound (a time
  // limit that stopped it before its root LP was solved).
  double bound = -kNoBound;
  double seconds = 0;
};

CbcSolution SolveWithCbc(const LinearProgram& program, const CbcOptions& options);

}  // namespace tc::partition

#endif  // TENSORCUT_PARTITION_CBC_SOLVER_H_
