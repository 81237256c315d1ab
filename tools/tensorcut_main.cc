// tensorcut: the command-line program. Subcommands are rows of kSubcommands;
// with none given it runs `demo`.
//
//   tensorcut                   # same as `tensorcut demo`: Fashion-MNIST, one epoch
//   tensorcut ops --runs=50     # each op timed as the median of 50 runs
//   tensorcut train --model linear --steps 20
//   tensorcut --help            # the subcommands
//   tensorcut partition --help  # one subcommand's flags (or: tensorcut help partition)
//   tensorcut --version         # the version and the build's configuration

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "codegen/autocast.h"
#include "runtime/build_info.h"
#include "runtime/error.h"
#include "runtime/gemm.h"
#include "runtime/threads.h"
#include "tools/cli.h"
#include "tools/flags.h"
#include "tools/subcommands.h"

namespace tc {
namespace {

// ---- subcommands

struct Subcommand {
  const char* name;
  const char* help;
  int (*run)();
  // The flags it reads, space-separated: `tensorcut NAME --help` lists them
  // with their help text and defaults (tools/flags.h).
  const char* flags = "";
};

constexpr Subcommand kSubcommands[] = {
    {"demo", "train a CNN on Fashion-MNIST for one epoch through the compiled pipeline",
     FashionDemo, "data checkpoint batch lr threads gemm precision"},
    {"ops", "time a few f32 ops (matmul, conv2d, batch_norm, softmax) and check them", OpsDemo,
     "runs threads gemm"},
    {"train", "train a reference model through the compiled pipeline, resumable from checkpoints",
     TrainCommand,
     "model onnx loss epochs steps batch drop_last sync_batchnorm collective_timeout lr optimizer "
     "partition budget "
     "checkpoint "
     "save_every "
     "resume seed data label_column features labels test_data threads gemm precision"},
    {"export",
     "compile a model's training step (train's model, data and optimizer flags) and save it as "
     "a plan file, which run trains without the model's code",
     ExportCommand,
     "model onnx loss batch drop_last lr optimizer partition budget plan seed data label_column "
     "features labels threads gemm precision"},
    {"run",
     "train a plan file (export's) on its model's data or --data's file; the plan is its own "
     "checkpoint, and a later run goes on from it",
     RunCommand,
     "plan epochs steps lr checkpoint save_every data label_column features labels threads "
     "gemm"},
    {"partition", "partition a model's joint graph with one strategy: what it saves and recomputes",
     PartitionCommand, "model strategy budget milp_seconds json dot seed"},
    {"compare",
     "every partition strategy on one model in a table; --sweep: every strategy over a budget "
     "sweep beside the milp optimum, on one model, a list or all",
     CompareCommand, "model steps budget milp_seconds sweep csv json plot seed threads gemm"},
    {"graph", "print a model's graph at one stage (captured, joint, forward, backward)",
     GraphCommand,
     "model stage decompose dynamic_batch data_parallel strategy budget milp_seconds dot seed"},
    {"bench", "time a model's training and inference steps compiled and eager (--model all)",
     BenchCommand, "model runs threads gemm json seed profile"},
    {"remat",
     "read a rematerialization research graph (node-link JSON, or --model's joint graph) and "
     "measure it (nodes, the peak without recomputation, compute); with --budget, schedule it "
     "under that peak",
     RematCommand, "graph model budget strategy milp_seconds json seed"},
};

const Subcommand* Find(absl::string_view name) {
  for (const Subcommand& s : kSubcommands) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::string Usage() {
  std::string usage = "usage: tensorcut [subcommand] [flags]\n\nsubcommands (default: demo):\n";
  for (const Subcommand& s : kSubcommands) {
    absl::StrAppend(&usage, "  ", absl::StrFormat("%-11s", s.name), s.help, "\n");
  }
  absl::StrAppend(&usage,
                  "\n`tensorcut SUBCOMMAND --help` (or `tensorcut help SUBCOMMAND`) lists its "
                  "flags; --helpfull lists every flag.\n");
  return usage;
}

// The subcommand's line and each of its flags with its default and help.
std::string Usage(const Subcommand& s) {
  std::string usage =
      absl::StrCat("usage: tensorcut ", s.name, " [flags]\n\n", s.help, "\n\nflags:\n");
  for (absl::string_view name : absl::StrSplit(s.flags, ' ', absl::SkipEmpty())) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;  // not linked in: a row naming a flag nobody defines
    const std::string value = flag->DefaultValue();
    absl::StrAppend(&usage, "  --", name, "=", value.empty() ? "\"\"" : value, "\n      ",
                    flag->Help(), "\n");
  }
  return usage;
}

// A flag of another subcommand given to `s` would be ignored without a
// word: an error naming it, and s's flags. `given`: the flag names on the
// command line ("batch", or "nodecompose" for --nodecompose).
int IgnoredFlag(const Subcommand& s, const std::vector<std::string>& given) {
  const std::vector<absl::string_view> own = absl::StrSplit(s.flags, ' ', absl::SkipEmpty());
  for (const std::string& g : given) {
    const absl::string_view name =
        absl::FindCommandLineFlag(g) == nullptr && absl::StartsWith(g, "no")
            ? absl::string_view(g).substr(2)
            : absl::string_view(g);
    bool anyones = false;
    for (const Subcommand& other : kSubcommands) {
      const std::vector<absl::string_view> theirs =
          absl::StrSplit(other.flags, ' ', absl::SkipEmpty());
      anyones = anyones || std::find(theirs.begin(), theirs.end(), name) != theirs.end();
    }
    if (!anyones || std::find(own.begin(), own.end(), name) != own.end()) continue;
    std::fprintf(stderr, "tensorcut %s: --%s is not a flag of %s (its flags: --%s)\n", s.name,
                 std::string(name).c_str(), s.name, absl::StrJoin(own, " --").c_str());
    return tc::kExitBadInput;
  }
  return 0;
}

// What is wrong with a flag's value that no subcommand would accept, or "".
std::string InvalidFlagValue() {
  if (const int threads = absl::GetFlag(FLAGS_threads); threads < 0) {
    return absl::StrCat("--threads must be at least 1 (0: OpenMP's default), got ", threads);
  }
  if (const double lr = absl::GetFlag(FLAGS_lr); !(lr >= 0 && std::isfinite(lr))) {
    return absl::StrCat("--lr must be a finite number >= 0, got ", lr);
  }
  return "";
}

int UnknownSubcommand(absl::string_view name) {
  std::fprintf(stderr, "tensorcut: unknown subcommand '%s'\n\n%s", std::string(name).c_str(),
               Usage().c_str());
  return kExitBadInput;
}

// `tensorcut [SUB] --help` and `tensorcut help [SUB]`: the usage on stdout,
// exit code 0; an unknown SUB is an error.
int Help(absl::string_view name) {
  if (name.empty()) {
    std::printf("%s", Usage().c_str());
    return 0;
  }
  const Subcommand* s = Find(name);
  if (s == nullptr) return UnknownSubcommand(name);
  std::printf("%s", Usage(*s).c_str());
  return 0;
}

// --gemm, for the whole process: an unknown name, or openblas where it is not
// installed, is an error.
absl::Status SetGemmChoiceFromFlag() {
  TC_ASSIGN_OR_RETURN(const GemmChoice choice, ParseGemmChoice(absl::GetFlag(FLAGS_gemm)));
  return SetGemmChoice(choice);
}

}  // namespace
}  // namespace tc

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(tc::Usage());
  absl::FlagsUsageConfig usage_config;
  usage_config.version_string = tc::BuildInfoText;  // --version
  absl::SetFlagsUsageConfig(usage_config);
  // --help is ours, so that it can describe one subcommand: Abseil's would
  // print every flag of the program and exit before the subcommand is known.
  // A flag is spelled with dashes or underscores alike: --drop-last is
  // Abseil's --drop_last.
  bool help = false;
  std::vector<std::string> spelled, given;  // the arguments; the flag names among them
  bool flags_end = false;                   // after "--", arguments are not flags
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    flags_end = flags_end || arg == "--";
    const bool is_help = i > 0 && (arg == "--help" || arg == "-help" || arg == "-h");
    help = help || is_help;
    if (is_help) continue;
    if (i > 0 && !flags_end && arg.size() > 2 && arg[0] == '-') {
      const size_t name_start = arg.find_first_not_of('-');
      const size_t name_end = std::min(arg.find('='), arg.size());
      // A name, not a negative number given as a flag's value.
      if (name_start < name_end && absl::ascii_isalpha(arg[name_start])) {
        std::replace(arg.begin() + name_start, arg.begin() + name_end, '-', '_');
        given.push_back(arg.substr(name_start, name_end - name_start));
      }
    }
    spelled.push_back(std::move(arg));
  }
  std::vector<char*> kept;
  for (std::string& arg : spelled) kept.push_back(arg.data());
  std::vector<char*> args = absl::ParseCommandLine(static_cast<int>(kept.size()), kept.data());
  if (args.size() >= 2 && absl::string_view(args[1]) == "help") {
    help = true;
    args.erase(args.begin() + 1);
  }
  if (args.size() > 2) {
    std::fprintf(stderr, "tensorcut: expected at most one subcommand\n\n%s", tc::Usage().c_str());
    return tc::kExitBadInput;
  }
  if (help) return tc::Help(args.size() == 2 ? args[1] : "");
  if (const std::string problem = tc::InvalidFlagValue(); !problem.empty()) {
    std::fprintf(stderr, "tensorcut: %s\n", problem.c_str());
    return tc::kExitBadInput;
  }
  if (const int threads = absl::GetFlag(FLAGS_threads); threads > 0) tc::SetNumThreads(threads);

  const absl::string_view name = args.size() == 2 ? args[1] : "demo";
  const tc::Subcommand* s = tc::Find(name);
  if (s == nullptr) return tc::UnknownSubcommand(name);
  if (const int code = tc::IgnoredFlag(*s, given); code != 0) return code;
  // OpenMP's workers wait for work by spinning (libgomp's default), which
  // takes the cores from the threads that have work where other programs
  // share them: beside one busy process on two cores (AMD EPYC), mlp's and
  // the transformer's training steps ran 1.6-2.4 times slower than with
  // passive waiting, which costs 0-10% on free cores. libgomp reads the
  // policy once, when it loads, so the program starts itself again with
  // OMP_WAIT_POLICY=passive unless the environment sets one; bench and ops,
  // which time kernels on a quiet machine, keep OpenMP's default.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && name != "bench" && name != "ops") {
    ::setenv("OMP_WAIT_POLICY", "passive", 1);
    ::execv("/proc/self/exe", argv);  // returns only if it failed: then run as we are
  }
  tc::SetGivenFlags(std::move(given));
  if (const absl::Status gemm = tc::SetGemmChoiceFromFlag(); !gemm.ok()) {
    std::fprintf(stderr, "tensorcut %s: --%s\n", s->name, std::string(gemm.message()).c_str());
    return tc::kExitBadInput;
  }
  if (const absl::StatusOr<tc::Precision> precision =
          tc::ParsePrecision(absl::GetFlag(FLAGS_precision));
      !precision.ok()) {
    std::fprintf(stderr, "tensorcut %s: --%s\n", s->name,
                 std::string(precision.status().message()).c_str());
    return tc::kExitBadInput;
  }
  try {
    return s->run();
  } catch (const tc::Error& e) {
    std::fprintf(stderr, "tensorcut %s: %s\n", s->name, e.what());
    return 1;
  }
}
