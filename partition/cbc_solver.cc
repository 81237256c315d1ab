#include "partition/cbc_solver.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "Cbc_C_Interface.h"
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

// Loads a LinearProgram into a CBC model (a friend, so the layout stays
// private to the program).
class LoadedCbcModel {
 public:
  explicit LoadedCbcModel(const LinearProgram& program) : model_(Cbc_newModel(), Cbc_deleteModel) {
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
    Cbc_loadProblem(model_.get(), program.num_columns(), program.num_rows(), start.data(),
                    index.data(), value.data(), lower.data(), upper.data(), cost.data(),
                    program.row_lower_.data(), program.row_upper_.data());
    for (int c = 0; c < program.num_columns(); ++c) {
      if (program.columns_[static_cast<size_t>(c)].integer) Cbc_setInteger(model_.get(), c);
    }
  }
  Cbc_Model* get() { return model_.get(); }

 private:
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model_;
};

CbcSolution SolveWithCbc(const LinearProgram& program, const CbcOptions& options) {
  absl::MutexLock lock(&cbc_mutex);
  LoadedCbcModel model(program);
  if (options.start.size() == static_cast<size_t>(program.num_columns())) {
    std::vector<int> columns(options.start.size());
    for (size_t c = 0; c < columns.size(); ++c) columns[c] = static_cast<int>(c);
    Cbc_setMIPStartI(model.get(), static_cast<int>(columns.size()), columns.data(),
                     options.start.data());
  }
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setMaximumSeconds(model.get(), options.time_limit_seconds);
  Cbc_setAllowableGap(model.get(), 0);
  Cbc_setAllowableFractionGap(model.get(), 0);
  const absl::Time began = absl::Now();
  Cbc_solve(model.get());
  CbcSolution solution;
  solution.seconds = absl::ToDoubleSeconds(absl::Now() - began);
  solution.proven_infeasible = Cbc_isProvenInfeasible(model.get()) != 0;
  solution.proven_optimal = Cbc_isProvenOptimal(model.get()) != 0;
  const double* x = program.has_integers()
                        ? Cbc_bestSolution(model.get())
                        : (solution.proven_optimal ? Cbc_getColSolution(model.get()) : nullptr);
  if (x != nullptr && !solution.proven_infeasible) {
    solution.found = true;
    solution.x.assign(x, x + program.num_columns());
    solution.objective = Cbc_getObjValue(model.get());
  }
  if (solution.proven_optimal) {
    solution.bound = solution.objective;
  } else if (program.has_integers()) {
    // CBC gives its incumbent (or its infinity) when it has no bound yet.
    const double bound = Cbc_getBestPossibleObjValue(model.get());
    const bool known =
        std::abs(bound) < kNoBound && !(solution.found && bound >= solution.objective);
    solution.bound = known ? bound : -kNoBound;
  }
  return solution;
}

}  // namespace tc::partition
