// tensorcut: the command-line program. Subcommands are rows of kSubcommands;
// with none given it runs `demo`.
//
//   tensorcut                 # same as `tensorcut demo`: Fashion-MNIST, one epoch
//   tensorcut ops --runs=50   # each op timed as the median of 50 runs
//   tensorcut --help
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "runtime/error.h"
#include "tools/subcommands.h"

namespace tc {
namespace {

// ---- subcommands

struct Subcommand {
  const char* name;
  const char* help;
  int (*run)();
};

constexpr Subcommand kSubcommands[] = {
    {"demo", "train a CNN on Fashion-MNIST for one epoch through the compiled pipeline",
     FashionDemo},
    {"ops", "time a few f32 ops (matmul, conv2d, batch_norm, softmax) and check them", OpsDemo},
};

std::string Usage() {
  std::string usage = "tensorcut [subcommand] [flags]\n\nsubcommands (default: demo):\n";
  for (const Subcommand& s : kSubcommands)
    absl::StrAppend(&usage, "  ", s.name, "  ", s.help, "\n");
  return usage;
}

}  // namespace
}  // namespace tc

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(tc::Usage());
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() > 2) {
    std::fprintf(stderr, "tensorcut: expected at most one subcommand\n\n%s", tc::Usage().c_str());
    return 2;
  }
  const absl::string_view name = args.size() == 2 ? args[1] : "demo";
  for (const tc::Subcommand& s : tc::kSubcommands) {
    if (name != s.name) continue;
    try {
      return s.run();
    } catch (const tc::Error& e) {
      std::fprintf(stderr, "tensorcut %s: %s\n", s.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "tensorcut: unknown subcommand '%s'\n\n%s", std::string(name).c_str(),
               tc::Usage().c_str());
  return 2;
}
