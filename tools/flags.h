// The `tensorcut` program's flags, defined once for every subcommand (Abseil
// flags share one namespace per binary): a subcommand reads the ones it needs
// and ignores the rest. Each subcommand's --help lists its flags by name from
// this set (tools/tensorcut_main.cc).
//
//   const std::string model = absl::GetFlag(FLAGS_model);
#ifndef TENSORCUT_TOOLS_FLAGS_H_
#define TENSORCUT_TOOLS_FLAGS_H_

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"

// demo, train
ABSL_DECLARE_FLAG(std::string, data);
ABSL_DECLARE_FLAG(std::string, label_column);
ABSL_DECLARE_FLAG(std::string, features);
ABSL_DECLARE_FLAG(std::string, labels);
ABSL_DECLARE_FLAG(std::string, test_data);
ABSL_DECLARE_FLAG(std::string, checkpoint);
ABSL_DECLARE_FLAG(std::string, plan);
ABSL_DECLARE_FLAG(int, batch);
ABSL_DECLARE_FLAG(bool, drop_last);
ABSL_DECLARE_FLAG(bool, dynamic_batch);
ABSL_DECLARE_FLAG(bool, data_parallel);
ABSL_DECLARE_FLAG(bool, sync_batchnorm);
ABSL_DECLARE_FLAG(double, collective_timeout);
ABSL_DECLARE_FLAG(int, save_every);
ABSL_DECLARE_FLAG(double, lr);

// every subcommand that runs a reference model
ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::string, onnx);
ABSL_DECLARE_FLAG(std::string, loss);
ABSL_DECLARE_FLAG(int, threads);
ABSL_DECLARE_FLAG(std::string, gemm);
ABSL_DECLARE_FLAG(std::string, precision);
ABSL_DECLARE_FLAG(int, steps);
ABSL_DECLARE_FLAG(int, runs);

// train
ABSL_DECLARE_FLAG(int, epochs);
ABSL_DECLARE_FLAG(std::string, optimizer);
ABSL_DECLARE_FLAG(std::string, partition);
ABSL_DECLARE_FLAG(std::string, resume);
ABSL_DECLARE_FLAG(int, seed);

// partition, compare, graph
ABSL_DECLARE_FLAG(std::string, strategy);
ABSL_DECLARE_FLAG(std::string, budget);
ABSL_DECLARE_FLAG(double, milp_seconds);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(std::string, graph);
ABSL_DECLARE_FLAG(std::string, dot);
ABSL_DECLARE_FLAG(bool, sweep);
ABSL_DECLARE_FLAG(std::string, csv);
ABSL_DECLARE_FLAG(std::string, plot);
ABSL_DECLARE_FLAG(std::string, stage);
ABSL_DECLARE_FLAG(bool, decompose);

namespace tc {
// --budget as the partition strategies take it: a fraction in [0, 1]
// (remat also takes bytes, partition/remat_stages.h's ParseBudget).
absl::StatusOr<double> BudgetFraction();
}  // namespace tc

// bench
ABSL_DECLARE_FLAG(bool, profile);

#endif  // TENSORCUT_TOOLS_FLAGS_H_
