// SolveWithCbc on programs small enough to solve by hand: a linear
// program's optimum, a mixed-integer program's optimum, the relaxation handed
// to the start callback, infeasibility proven by the relaxation.
#include "partition/cbc_solver.h"

#include <vector>

#include "catch2/catch.hpp"

namespace tc::partition {
namespace {

// maximise x + y over [0, 1]^2 with x + y <= 1.5: 1.5 relaxed, 1 in integers.
LinearProgram Knapsack(bool integer) {
  LinearProgram lp;
  const int x = lp.AddColumn({.upper = 1, .cost = -1, .integer = integer});
  const int y = lp.AddColumn({.upper = 1, .cost = -1, .integer = integer});
  const int row = lp.AddRow(-kNoBound, 1.5);
  lp.Set(row, x, 1);
  lp.Set(row, y, 1);
  return lp;
}

TEST_CASE("a linear program's optimum is its own bound") {
  const CbcSolution s = SolveWithCbc(Knapsack(false), {.time_limit_seconds = 10});
  REQUIRE(s.found);
  CHECK(s.proven_optimal);
  CHECK(s.objective == Approx(-1.5));
  CHECK(s.bound == Approx(-1.5));
  CHECK(s.x[0] + s.x[1] == Approx(1.5));
}

// What this can show: the relaxation's optimum reaches the callback before
// branching, and the optimum follows. Whether CBC takes the returned start
// it cannot show (branch and bound finds -1 from any start).
TEST_CASE("a mixed-integer program hands its relaxation's optimum to the start callback") {
  std::vector<double> seen;
  CbcOptions options{.time_limit_seconds = 10};
  options.start_from_relaxation = [&](const std::vector<double>& relaxed) {
    seen = relaxed;
    return std::vector<double>{1, 0};
  };
  const CbcSolution s = SolveWithCbc(Knapsack(true), options);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] + seen[1] == Approx(1.5));  // the relaxation's optimum, before branching
  REQUIRE(s.found);
  CHECK(s.proven_optimal);
  CHECK(s.objective == Approx(-1));
  CHECK(s.bound == Approx(-1));
}

TEST_CASE("a relaxation with no solution proves the program infeasible") {
  LinearProgram lp;
  const int x = lp.AddColumn({.upper = 1, .cost = 1, .integer = true});
  const int low = lp.AddRow(0.5, kNoBound);
  lp.Set(low, x, 1);
  const int high = lp.AddRow(-kNoBound, 0.4);
  lp.Set(high, x, 1);
  bool called = false;
  CbcOptions options{.time_limit_seconds = 10};
  options.start_from_relaxation = [&](const std::vector<double>&) {
    called = true;
    return std::vector<double>{};
  };
  const CbcSolution s = SolveWithCbc(lp, options);
  CHECK_FALSE(s.found);
  CHECK(s.proven_infeasible);
  CHECK_FALSE(called);
}

}  // namespace
}  // namespace tc::partition
