// The partition suite on mlp: a row per strategy and budget, each beside the
// milp optimum at its saved bytes; its CSV, JSON and plot; model lists.
#include "tools/partition_suite.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "nn/models/models.h"

namespace tc {
namespace {

TEST_CASE("the suite runs every strategy and puts each beside the milp optimum") {
  const std::vector<SuiteRow> rows =
      RunPartitionSuite("mlp", {.budgets = {0, 0.5, 1}, .step_runs = 1}).value();
  const std::vector<std::string> order = {"default",     "min_cut", "recompute_all", "budget",
                                          "budget",      "budget",  "peak_budget",   "peak_budget",
                                          "peak_budget", "milp",    "milp",          "milp"};
  REQUIRE(rows.size() == order.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const SuiteRow& r = rows[i];
    INFO(r.strategy);
    REQUIRE(r.model == "mlp");
    REQUIRE(r.strategy == order[i]);
    REQUIRE(r.budget.has_value() == (i >= 3));
    REQUIRE(r.measured_peak_bytes >= r.saved_bytes / 2);
    REQUIRE(r.step_ms > 0);
    // mlp's graph is small enough for every solve to finish: no strategy
    // recomputes less than the optimum at its saved bytes.
    REQUIRE(r.milp_proven);
    REQUIRE(r.milp_solver_gap == 0);
    REQUIRE(r.milp_flops <= r.recompute_flops);
    REQUIRE(r.gap_to_milp.has_value());
    REQUIRE(*r.gap_to_milp >= 0);
  }
  // Budget 0 saves the least, as recompute_all does; milp at a budget
  // recomputes no more than the knapsack at it.
  REQUIRE(rows[3].saved_bytes == rows[2].saved_bytes);
  for (int i = 0; i < 3; ++i) REQUIRE(rows[9 + i].recompute_flops <= rows[3 + i].recompute_flops);
  REQUIRE(rows[9].gap_to_milp == 0.0);
  // peak_budget's planned peak never falls as its budget grows, and at 0
  // is the least of its candidates' (every other row but milp's).
  REQUIRE(rows[6].measured_peak_bytes <= rows[7].measured_peak_bytes);
  REQUIRE(rows[7].measured_peak_bytes <= rows[8].measured_peak_bytes);
  for (int i = 0; i < 6; ++i) REQUIRE(rows[6].measured_peak_bytes <= rows[i].measured_peak_bytes);

  const std::vector<std::string> csv = absl::StrSplit(SuiteCsv(rows), '\n', absl::SkipEmpty());
  REQUIRE(csv.size() == 1 + rows.size());
  REQUIRE(csv[1].rfind("mlp,default,,", 0) == 0);
  REQUIRE(csv[5].rfind("mlp,budget,0.5,", 0) == 0);
  const std::string json = SuiteJson(rows);
  REQUIRE(json.find("\"strategy\": \"recompute_all\",\n    \"budget\": null,") !=
          std::string::npos);

  // At each row's activation peak the best schedule recomputes no more
  // than the row's partition, and default (saving everything) recomputes
  // nothing; recompute_all's peak is no higher than default's.
  for (const SuiteRow& r : rows) {
    INFO(r.strategy);
    REQUIRE(r.schedule_peak_bytes > 0);
    REQUIRE(r.best_schedule_proven);
    REQUIRE(r.best_schedule_flops <= r.recompute_flops + 1e-6);
  }
  REQUIRE(rows[0].best_schedule_flops == 0);
  REQUIRE(rows[2].schedule_peak_bytes <= rows[0].schedule_peak_bytes);
  const Plot schedules = SchedulePlot("mlp", rows);
  REQUIRE(schedules.series.size() == 7);
  REQUIRE(schedules.series.back().name == "best schedule");
  REQUIRE(schedules.series.back().joined);

  const Plot plot = SuitePlot("mlp", rows);
  REQUIRE(plot.series.size() == 6);
  REQUIRE(plot.series[0].name == "default");
  REQUIRE(!plot.series[0].joined);
  REQUIRE(plot.series[3].name == "budget");
  REQUIRE(plot.series[3].points.size() == 3);
  REQUIRE(plot.series[4].name == "peak_budget");
  const PlotSeries& frontier = plot.series[5];
  REQUIRE(frontier.name == "milp");
  REQUIRE(frontier.joined);
  REQUIRE(frontier.points.size() == 3);
  for (size_t i = 1; i < frontier.points.size(); ++i) {
    REQUIRE(frontier.points[i - 1].x <= frontier.points[i].x);
  }
}

TEST_CASE("the suite's models: all of them, a list, or an error naming the wrong one") {
  std::vector<std::string> all = nn::ModelNames(), zoo = nn::ZooModelNames();
  all.insert(all.end(), zoo.begin(), zoo.end());
  REQUIRE(SuiteModelNames("all").value() == all);
  REQUIRE(SuiteModelNames("cnn,mlp").value() == std::vector<std::string>{"cnn", "mlp"});
  const absl::StatusOr<std::vector<std::string>> bad = SuiteModelNames("mlp,resnet");
  REQUIRE(!bad.ok());
  REQUIRE(bad.status().message().find("unknown model \"resnet\"") != std::string::npos);
  REQUIRE(SuiteModelNames("cnn, mlp").value() == std::vector<std::string>{"cnn", "mlp"});
  REQUIRE(SuiteModelNames("cnn,,mlp").status().message().find("unknown model \"\"") !=
          std::string::npos);
  REQUIRE(SuiteModelNames("cnn,mlp,cnn").status().message() ==
          "model \"cnn\" is named twice in \"cnn,mlp,cnn\"");
}

}  // namespace
}  // namespace tc
