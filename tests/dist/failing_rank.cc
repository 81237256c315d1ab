// A two-rank job in which rank 1 fails, for tests/dist/mpirun_test.sh:
//   failing_rank exit   rank 1 exits with status 3 before the all-reduce;
//   failing_rank stall  rank 1 sleeps past rank 0's one-second timeout.
// Rank 0 all-reduces, and on an error prints it and exits with status 1,
// as a training program would.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "dist/process_group.h"
#include "runtime/ops.h"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "exit" && mode != "stall") {
    std::fprintf(stderr, "usage: failing_rank exit|stall\n");
    return 2;
  }
  const auto group = tc::dist::ProcessGroup::World({.timeout = absl::Seconds(1)});
  if (!group.ok()) {
    std::fprintf(stderr, "%s\n", std::string(group.status().message()).c_str());
    return 1;
  }
  if ((*group)->rank() == 1) {
    if (mode == "exit") std::_Exit(3);
    std::this_thread::sleep_for(std::chrono::seconds(20));
    return 0;
  }
  const tc::Tensor t = tc::zeros({4});
  const absl::Status s = (*group)->AllReduceSum({t});
  if (!s.ok()) {
    std::fprintf(stderr, "tensorcut: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
