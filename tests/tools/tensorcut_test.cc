// The built `tensorcut` binary, run as a user would: each subcommand's output
// checked against the library calls it stands for, --help for each, and the
// exit codes and messages of mistakes.
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/version.h"
#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "nlohmann/json.hpp"
#include "nn/checkpoint.h"
#include "nn/models/models.h"
#include "partition/report.h"
#include "partition/strategies.h"
#include "pipeline/step_memory.h"
#include "runtime/bf16.h"
#include "runtime/build_info.h"
#include "tests/nn/onnx/onnx_builder.h"
#include "tests/npz_writer.h"
#include "tools/training.h"

namespace tc {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  REQUIRE(value != nullptr);
  return value;
}

std::string TempPath(const std::string& name) { return Env("TEST_TMPDIR") + "/" + name; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Result {
  int code;
  std::string out, err;
};

// Runs `tensorcut <args>` from the runfiles; with `interrupt_after` > 0,
// sends it SIGINT after that many seconds, and again every 50 ms until it
// ends: a background job of sh starts with SIGINT ignored, so a signal that
// comes before the program blocks it for its own waiter (a slow start under
// the sanitizers) is lost.
Result Tensorcut(const std::string& args, double interrupt_after = 0) {
  const std::string binary =
      absl::StrCat(Env("TEST_SRCDIR"), "/", Env("TEST_WORKSPACE"), "/tools/tensorcut");
  const std::string out = TempPath("stdout"), err = TempPath("stderr");
  std::string command = absl::StrCat(binary, " ", args, " >", out, " 2>", err);
  if (interrupt_after > 0) {
    command = absl::StrCat(command, " & pid=$!; sleep ", interrupt_after,
                           "; for i in $(seq 200); do state=$(cut -d' ' -f3 /proc/$pid/stat "
                           "2>/dev/null); if [ -z \"$state\" ] || [ \"$state\" = Z ]; then break; "
                           "fi; kill -INT $pid; sleep 0.05; done; wait $pid");
  }
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  Result r{WEXITSTATUS(status), ReadFile(out), ReadFile(err)};
  UNSCOPED_INFO("tensorcut " << args << "\nexit " << r.code << "\nstdout:\n"
                             << r.out << "stderr:\n"
                             << r.err);
  return r;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The number after "key": in a one-line JSON object.
double JsonNumber(const std::string& json, const std::string& key) {
  const std::string quoted = absl::StrCat("\"", key, "\":");
  const size_t at = json.find(quoted);
  REQUIRE(at != std::string::npos);
  const size_t begin = at + quoted.size(), end = json.find_first_of(",}", begin);
  double value = 0;
  REQUIRE(absl::SimpleAtod(json.substr(begin, end - begin), &value));
  return value;
}

// The reference: what the library says for `model` under `strategy`.
partition::PartitionReport LibraryReport(const std::string& model, const std::string& strategy,
                                         double budget = 1) {
  nn::ModelSpec spec = nn::MakeModel(model, 0).value();
  CompilerPipeline pipeline = JointPipeline(*spec.module, spec.inputs).value();
  const JointGraph& joint = **pipeline.joint_graph();
  partition::PartitionResult part =
      pipeline.partition(partition::PartitionerByName(strategy, budget).value(), joint).value();
  partition::PartitionReport report = partition::MakeReport(joint.graph, joint.layout, part);
  report.measured_peak_bytes =
      PlannedStepMemory(pipeline, codegen::fusing(), part).value().peak_bytes();
  return report;
}

TEST_CASE("--help lists the subcommands; SUB --help and help SUB list SUB's flags") {
  const Result help = Tensorcut("--help");
  REQUIRE(help.code == 0);
  for (const char* sub : {"demo", "ops", "train", "partition", "compare", "graph"}) {
    REQUIRE(Contains(help.out, absl::StrCat("\n  ", sub, " ")));
  }
  const std::vector<std::pair<std::string, std::vector<std::string>>> flags = {
      {"train",
       {"--model=mlp", "--epochs=1", "--steps=0", "--batch=100", "--drop_last=false",
        "--lr=", "--optimizer=adam", "--partition=min_cut",
        "--budget=", "--checkpoint=", "--resume=", "--threads=0"}},
      {"partition",
       {"--model=mlp", "--strategy=min_cut", "--budget=0.5", "--json=false", "--dot="}},
      {"compare",
       {"--model=mlp", "--sweep=false", "--csv=", "--plot=", "--json=false", "--milp_seconds=10",
        "--steps=0"}},
      {"graph",
       {"--model=mlp", "--stage=joint", "--decompose=false", "--dynamic_batch=false", "--dot="}},
  };
  for (const auto& [sub, names] : flags) {
    const Result r = Tensorcut(absl::StrCat(sub, " --help"));
    REQUIRE(r.code == 0);
    REQUIRE(r.out.rfind(absl::StrCat("usage: tensorcut ", sub, " [flags]\n"), 0) == 0);
    for (const std::string& name : names) {
      INFO(name);
      REQUIRE(Contains(r.out, absl::StrCat("\n  ", name)));
    }
    REQUIRE(Tensorcut(absl::StrCat("help ", sub)).out == r.out);
  }
  REQUIRE(!Contains(Tensorcut("partition --help").out, "--resume"));
}

TEST_CASE("--version prints the version and the build's configuration") {
  const Result r = Tensorcut("--version");
  REQUIRE(r.code == 0);
  REQUIRE(r.out.rfind(absl::StrCat("tensorcut ", version(), "\nbuilt with "), 0) == 0);
  REQUIRE(Contains(r.out, absl::StrCat("\n", GetBuildInfo().features, "\n")));
  REQUIRE(Contains(r.out, absl::StrCat("\noneDNN ", GetBuildInfo().onednn_version)));
}

TEST_CASE("mistakes exit non-zero with a message naming them") {
  Result r = Tensorcut("frobnicate");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.rfind("tensorcut: unknown subcommand 'frobnicate'\n", 0) == 0);
  REQUIRE(Tensorcut("help frobnicate").code == 2);

  // Values no subcommand accepts: exit 2 before anything runs.
  r = Tensorcut("train --model linear --threads -2");
  REQUIRE(r.code == 2);
  REQUIRE(r.err == "tensorcut: --threads must be at least 1 (0: OpenMP's default), got -2\n");
  r = Tensorcut("train --model linear --lr inf");
  REQUIRE(r.code == 2);
  REQUIRE(r.err == "tensorcut: --lr must be a finite number >= 0, got inf\n");
  REQUIRE(Tensorcut("train --model linear --lr=-1").code == 2);
  r = Tensorcut("train --model linear --collective_timeout 0");
  REQUIRE(r.code == 2);
  REQUIRE(r.err ==
          "tensorcut train: --collective_timeout must be seconds above 0 (up to 1e6), got 0\n");

  r = Tensorcut("partition --model resnet");
  REQUIRE(r.code == 2);
  REQUIRE(r.err ==
          "tensorcut partition: unknown model \"resnet\"; known models: linear, convbn, "
          "structured, mlp, mlp_dropout, cnn, transformer, transformer_dropout; in the zoo: "
          "resnet18, vgg11, mobilenetv2, unet, gpt, lstm\n");
  r = Tensorcut("graph --model linear --stage optimized");
  REQUIRE(r.code == 2);
  REQUIRE(r.err ==
          "tensorcut graph: unknown --stage \"optimized\"; known stages: captured, joint, "
          "forward, backward\n");
  r = Tensorcut("partition --model linear --strategy magic");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.rfind("tensorcut partition: ", 0) == 0);
  REQUIRE(Contains(r.err, "magic"));
  r = Tensorcut("train --model linear --optimizer lion");
  REQUIRE(r.code == 2);
  REQUIRE(r.err ==
          "tensorcut train: unknown optimizer \"lion\"; known optimizers: sgd, adam, adamw\n");
  r = Tensorcut(absl::StrCat("train --model linear --resume ", TempPath("none.safetensors")));
  REQUIRE(r.code == 2);
  REQUIRE(r.err == absl::StrCat("tensorcut train: cannot open checkpoint ",
                                TempPath("none.safetensors"), ": No such file or directory\n"));
  REQUIRE(Tensorcut("train --no_such_flag").code != 0);
  // A flag that does not apply to the model's data, and an unwritable
  // checkpoint: refused before the first step.
  r = Tensorcut("train --model linear --batch 64");
  REQUIRE(r.code == 2);
  REQUIRE(r.err ==
          "tensorcut train: --batch applies to the models trained on Fashion-MNIST (mlp, "
          "mlp_dropout); linear trains on synthetic batches of its example inputs' size\n");
  r = Tensorcut("train --model cnn --data /tmp");
  REQUIRE(r.code == 2);
  REQUIRE(Contains(r.err, "tensorcut train: --data applies to the models trained on"));
  r = Tensorcut("train --model linear --checkpoint /nonexistent/x");
  REQUIRE(r.code == 2);
  REQUIRE(r.out.empty());
  REQUIRE(r.err ==
          "tensorcut train: --checkpoint /nonexistent/x: cannot write in /nonexistent: No such "
          "file or directory\n");
  // A flag of another subcommand would be ignored: refused before any work.
  r = Tensorcut("train --model linear --strategy budget");
  REQUIRE(r.code == 2);
  REQUIRE(
      r.err ==
      "tensorcut train: --strategy is not a flag of train (its flags: --model --onnx --loss "
      "--epochs --steps --batch --drop_last --sync_batchnorm --collective_timeout --lr --optimizer "
      "--partition --budget "
      "--checkpoint --save_every --resume --seed --data --label_column --features --labels "
      "--test_data --threads --gemm --precision)\n");
  r = Tensorcut("partition --model linear --threads 2");
  REQUIRE(r.code == 2);
  REQUIRE(Contains(r.err, "tensorcut partition: --threads is not a flag of partition"));
}

// The OMP_WAIT_POLICY a `tensorcut train` running under `environment` has.
std::string WaitPolicyOfTrain(const std::string& environment) {
  const std::string binary =
      absl::StrCat(Env("TEST_SRCDIR"), "/", Env("TEST_WORKSPACE"), "/tools/tensorcut");
  const std::string out = TempPath("wait_policy");
  std::remove(out.c_str());
  const std::string command = absl::StrCat(
      "env ", environment, " ", binary, " train --model transformer --steps 100000 --checkpoint ",
      TempPath("wait.safetensors"),
      " >/dev/null 2>&1 & pid=$!; sleep 2; tr '\\0' '\\n' "
      "</proc/$pid/environ | grep '^OMP_WAIT_POLICY=' >",
      out, "; kill -INT $pid; wait $pid");
  std::system(command.c_str());
  return ReadFile(out);
}

TEST_CASE("train waits for OpenMP work passively unless the environment says otherwise") {
  // Spinning workers took shared cores from the threads with work.
  CHECK(WaitPolicyOfTrain("-u OMP_WAIT_POLICY") == "OMP_WAIT_POLICY=passive\n");
  CHECK(WaitPolicyOfTrain("OMP_WAIT_POLICY=active") == "OMP_WAIT_POLICY=active\n");
}

TEST_CASE("train writes a checkpoint that --resume continues from") {
  const std::string ckpt = TempPath("linear.safetensors");
  Result r =
      Tensorcut(absl::StrCat("train --model linear --steps 15 --lr 0.05 --checkpoint ", ckpt));
  REQUIRE(r.code == 0);
  REQUIRE(r.out.rfind("tensorcut train: linear (", 0) == 0);
  REQUIRE(Contains(r.out,
                   "\ndata: synthetic batches like the model's example inputs, 10 steps per epoch "
                   "of 4; adam lr 0.05\n"));
  REQUIRE(Contains(r.out, "\nstep 10/15 loss "));
  REQUIRE(Contains(r.out, "\nstep 15/15 loss "));
  REQUIRE(Contains(r.out, absl::StrCat("\ncheckpoint: ", ckpt, " (step 15, epoch 1.50)\n")));

  r = Tensorcut(absl::StrCat("train --model linear --steps 20 --lr 0.05 --checkpoint ", ckpt,
                             " --resume ", ckpt));
  REQUIRE(r.code == 0);
  REQUIRE(Contains(r.out, absl::StrCat("\nresumed from ", ckpt, " at step 15 (epoch 1.50)\n")));
  REQUIRE(!Contains(r.out, "\nstep 10/"));
  REQUIRE(Contains(r.out, "\nstep 20/20 loss "));
  REQUIRE(Contains(r.out, "\ntrained 5 steps in "));
  REQUIRE(!Contains(r.out, "replaces"));

  // Resumed without --lr, the checkpoint's learning rate goes on (it was
  // replaced by the default 0.002); a different --lr says that it replaces it.
  r = Tensorcut(
      absl::StrCat("train --model linear --steps 25 --checkpoint ", ckpt, " --resume ", ckpt));
  REQUIRE(r.code == 0);
  REQUIRE(Contains(r.out, "; adam lr 0.05\n"));
  REQUIRE(!Contains(r.out, "replaces"));
  r = Tensorcut(absl::StrCat("train --model linear --steps 30 --lr 0.01 --checkpoint ", ckpt,
                             " --resume ", ckpt));
  REQUIRE(r.code == 0);
  REQUIRE(Contains(r.out, "; adam lr 0.01\n"));
  REQUIRE(Contains(r.out, "\n--lr 0.01 replaces the checkpoint's learning rate 0.05\n"));

  // Either precision resumes either's checkpoint (the weights stay f32);
  // train says which it uses when they differ.
  r = Tensorcut(absl::StrCat("train --model linear --steps 35 --precision bf16 --checkpoint ", ckpt,
                             " --resume ", ckpt));
  REQUIRE(r.code == 0);
  REQUIRE(Contains(r.out, "\n--precision bf16 replaces the checkpoint's f32\n"));
  r = Tensorcut(
      absl::StrCat("train --model linear --steps 40 --checkpoint ", ckpt, " --resume ", ckpt));
  REQUIRE(r.code == 0);
  REQUIRE(Contains(
      r.out,
      "\ntraining in f32; the checkpoint was trained in bf16 (--precision bf16 keeps it)\n"));

  // A step that its optimizer's state disagrees with: put together or edited.
  nn::Metadata metadata;
  absl::StatusOr<nn::NamedTensors> saved = nn::LoadTensors(ckpt, &metadata);
  REQUIRE(saved.ok());
  metadata["tensorcut.step"] = "37";
  const std::string edited = TempPath("edited.safetensors");
  REQUIRE(nn::SaveTensors(*saved, edited, metadata).ok());
  r = Tensorcut(absl::StrCat("train --model linear --steps 45 --resume ", edited));
  REQUIRE(r.code == 2);
  REQUIRE(r.err == absl::StrCat("tensorcut train: checkpoint ", edited,
                                ": metadata \"tensorcut.step\" is 37 but its optimizer state has "
                                "taken 40 steps; the checkpoint was not written by one "
                                "`tensorcut train` run\n"));

  r = Tensorcut(absl::StrCat("train --model convbn --steps 20 --resume ", ckpt));
  REQUIRE(r.code == 2);
  REQUIRE(r.err == absl::StrCat("tensorcut train: checkpoint ", ckpt,
                                " was written with --model linear, not convbn\n"));
}

// The step a checkpoint holds, from its metadata.
std::string SavedStep(const std::string& path) {
  nn::Metadata metadata;
  REQUIRE(nn::LoadTensors(path, &metadata).ok());
  return metadata["tensorcut.step"];
}

// Three well-separated classes of points in 2-D, `n` rows: x0, x1, label,
// the label a name ("red", "green", "blue") or its index.
std::string Points(int n, bool names, uint64_t seed) {
  const char* kNames[] = {"red", "green", "blue"};
  std::string csv = "x0,x1,y\n";
  Generator gen(seed);
  const std::vector<float> noise = randn({n, 2}, DType::kF32, &gen).to_vector<float>();
  for (int i = 0; i < n; ++i) {
    const int c = i % 3;
    absl::StrAppend(&csv, 3 * c + 0.5 * noise[2 * i], ",",
                    (c == 1 ? 3 : -1) + 0.5 * noise[2 * i + 1], ",",
                    names ? kNames[c] : absl::StrCat(c), "\n");
  }
  return csv;
}

TEST_CASE("train fits an mlp to the user's CSV and reports its test accuracy") {
  const std::string train = TempPath("points.csv"), test = TempPath("points_test.csv");
  std::ofstream(train) << Points(300, true, 1);
  std::ofstream(test) << Points(90, true, 2);
  const std::string ckpt = TempPath("points.safetensors");
  Result r =
      Tensorcut(absl::StrCat("train --model mlp --data ", train, " --label-column y --test-data ",
                             test, " --batch 30 --steps 60 --checkpoint ", ckpt));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(Contains(r.out, "tensorcut train: mlp (2-512-512-3 MLP with ReLU, cross-entropy)"));
  CHECK(Contains(r.out, absl::StrCat("data: ", train,
                                     " (300 examples of 2 features, 3 classes; 90 for testing), "
                                     "10 steps per epoch of 30")));
  const size_t at = r.out.find("test accuracy ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(r.out.substr(at + 14)) > 90);
  CHECK(Contains(r.out, "on the data's test set"));

  // Mistakes name the flag or the file's line.
  r = Tensorcut(absl::StrCat("train --model mlp --data ", train, " --label-column z --steps 1"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, absl::StrCat(train, ": no column \"z\" (columns: x0, x1, y)")));
  // A file saved as UTF-16: the error quotes its header with every NUL and
  // the byte-order mark escaped, not written raw to the terminal; a FIFO is
  // refused rather than waited on.
  const std::string utf16 = TempPath("utf16.csv");
  static constexpr char kUtf16Header[] = "\xff\xfex\0,\0y\0\n\0";
  std::ofstream(utf16, std::ios::binary) << std::string(kUtf16Header, sizeof(kUtf16Header) - 1);
  r = Tensorcut(absl::StrCat("train --model mlp --data ", utf16, " --label-column y --steps 1"));
  CHECK(r.code == 2);
  CHECK(r.err.find('\0') == std::string::npos);
  CHECK(Contains(r.err, "(columns: \\xff\\xfex\\x00, \\x00y\\x00)"));
  const std::string fifo = TempPath("data.fifo");
  std::remove(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  r = Tensorcut(absl::StrCat("train --model mlp --data ", fifo, " --label-column y --steps 1"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, fifo + " is a FIFO, not a regular file"));
  r = Tensorcut(absl::StrCat("train --model cnn --data ", train, " --label-column y --steps 1"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err,
                 "model \"cnn\" takes no data of its own; the mlp models (mlp, mlp_dropout) do"));
}

// The loss the progress line of step `step`/`last` prints.
std::string LossAt(const std::string& out, int step, int last) {
  const std::string line = absl::StrCat("\nstep ", step, "/", last, " loss ");
  const size_t at = out.find(line);
  REQUIRE(at != std::string::npos);
  const size_t end = out.find(' ', at + line.size());
  REQUIRE(end != std::string::npos);
  return out.substr(at + line.size(), end - at - line.size());
}

TEST_CASE("export writes a plan that run trains as train trains the model, and goes on from") {
  const std::string plan = TempPath("linear.tcplan"), ckpt = TempPath("linear_run.safetensors");
  Result r = Tensorcut(absl::StrCat("export --model linear --lr 0.05 --plan ", plan));
  REQUIRE(r.code == 0);
  CHECK(r.out.rfind("tensorcut export: linear (", 0) == 0);
  CHECK(Contains(r.out, absl::StrCat("\nplan: ", plan, " (")));
  r = Tensorcut(absl::StrCat("run --plan ", plan, " --steps 15"));
  REQUIRE(r.code == 0);
  CHECK(Contains(r.out, absl::StrCat("tensorcut run: linear (plan ", plan, ")\n")));
  CHECK(Contains(r.out, "\nloaded at step 0 and compiled for this CPU in "));
  CHECK(Contains(r.out, absl::StrCat("\ncheckpoint: ", plan, " (step 15, epoch 1.50)\n")));
  const std::string run_15 = LossAt(r.out, 15, 15);
  // The plan is its own checkpoint: the next run goes on from step 15.
  r = Tensorcut(absl::StrCat("run --plan ", plan, " --steps 20"));
  REQUIRE(r.code == 0);
  CHECK(Contains(r.out, "\nloaded at step 15 and compiled for this CPU in "));
  CHECK(Contains(r.out, "\ntrained 5 steps in "));
  const std::string run_20 = LossAt(r.out, 20, 20);
  // The same training as train's, interrupted and resumed at the same step.
  r = Tensorcut(absl::StrCat("train --model linear --lr 0.05 --steps 15 --checkpoint ", ckpt));
  REQUIRE(r.code == 0);
  CHECK(LossAt(r.out, 15, 15) == run_15);
  r = Tensorcut(
      absl::StrCat("train --model linear --steps 20 --checkpoint ", ckpt, " --resume ", ckpt));
  REQUIRE(r.code == 0);
  CHECK(LossAt(r.out, 20, 20) == run_20);
  r = Tensorcut(absl::StrCat("run --plan ", plan, " --steps 21 --lr 0.01"));
  REQUIRE(r.code == 0);
  CHECK(Contains(r.out, "\n--lr 0.01 replaces the plan's learning rate 0.05\n"));

  // Mistakes.
  r = Tensorcut("run --steps 3");
  CHECK(r.code == 2);
  CHECK(
      Contains(r.err, "--plan FILE is required: the plan to train (tensorcut export writes one)"));
  r = Tensorcut("export --model linear");
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "--plan FILE is required: the plan to write"));
  r = Tensorcut(absl::StrCat("run --plan ", plan, " --steps 3"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, absl::StrCat("plan ", plan, " is at step 21, past the last step 3")));
  r = Tensorcut(absl::StrCat("run --plan ", ckpt, " --steps 30"));  // a checkpoint, not a plan
  CHECK(r.code == 2);
  CHECK(Contains(r.err, absl::StrCat(ckpt,
                                     ": not a tensorcut plan: its header has no "
                                     "tensorcut.plan.format (a checkpoint, perhaps)")));
  r = Tensorcut(absl::StrCat("run --plan ", plan, " --model mlp"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "--model is not a flag of run"));
  // A plan saved by a program, with no run's position in it.
  nn::Metadata metadata;
  absl::StatusOr<nn::NamedTensors> saved = nn::LoadTensors(plan, &metadata);
  REQUIRE(saved.ok());
  metadata.erase("tensorcut.model");
  const std::string bare = TempPath("bare.tcplan");
  REQUIRE(nn::SaveTensors(*saved, bare, metadata).ok());
  r = Tensorcut(absl::StrCat("run --plan ", bare, " --steps 30"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, absl::StrCat("checkpoint ", bare,
                                     " has no \"tensorcut.model\" metadata: it was not written "
                                     "by `tensorcut train`, `export` or `run`")));
}

TEST_CASE("a plan exported on the user's CSV trains on that file, and on one like it only") {
  const std::string data = TempPath("plan_points.csv"), plan = TempPath("points.tcplan");
  std::ofstream(data) << Points(300, true, 1);
  Result r = Tensorcut(absl::StrCat("export --model mlp --data ", data,
                                    " --label-column y --batch 30 --plan ", plan));
  REQUIRE(r.code == 0);
  r = Tensorcut(absl::StrCat("run --plan ", plan, " --steps 20"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "was trained on a user's data file: give it (--data FILE.csv"));
  r = Tensorcut(absl::StrCat("run --plan ", plan, " --steps 20 --label-column y --data ", data));
  REQUIRE(r.code == 0);
  CHECK(Contains(r.out, absl::StrCat("data: ", data, " (300 examples of 2 features, 3 classes)")));
  // 290 examples: an epoch ends with a batch of 20, which this plan's fixed
  // batch of 30 cannot take.
  const std::string shorter = TempPath("plan_points_290.csv");
  std::ofstream(shorter) << Points(290, true, 1);
  r = Tensorcut(absl::StrCat("run --plan ", plan, " --steps 40 --label-column y --data ", shorter));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "takes batches of exactly 30 examples, and each epoch of"));
  const std::string wider = TempPath("plan_wide.csv");
  std::ofstream(wider) << "x0,x1,x2,y\n0,1,2,0\n1,2,3,1\n";
  r = Tensorcut(absl::StrCat("run --plan ", plan, " --steps 40 --label-column y --data ", wider));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "has 3 features; plan " + plan +
                            " takes an input and a target with 2 values per example"));
}

// A 2-16-3 MLP as PyTorch exports one: Gemm, Relu, Gemm.
std::string OnnxClassifier(int64_t features) {
  testing::OnnxBuilder model;
  model.Input("x", DType::kF32, {"N", features});
  model.Initializer("0.weight", randn({16, features}) * 0.5);
  model.Initializer("0.bias", zeros({16}));
  model.Initializer("2.weight", randn({3, 16}) * 0.3);
  model.Initializer("2.bias", zeros({3}));
  model.Node("Gemm", {"x", "0.weight", "0.bias"}, {"h"}).Int("transB", 1);
  model.Node("Relu", {"h"}, {"a"});
  model.Node("Gemm", {"a", "2.weight", "2.bias"}, {"logits"}).Int("transB", 1);
  model.Output("logits", DType::kF32);
  const std::string path = TempPath(absl::StrCat("classifier", features, ".onnx"));
  std::ofstream(path, std::ios::binary) << model.Bytes();
  return path;
}

TEST_CASE("an imported ONNX model exports as a plan that run trains as train does") {
  const std::string data = TempPath("onnx_plan_points.csv"), plan = TempPath("onnx.tcplan");
  std::ofstream(data) << Points(300, true, 1);
  const std::string model = OnnxClassifier(2), ckpt = TempPath("onnx_plan.safetensors");
  const std::string flags = absl::StrCat(" --data ", data, " --label-column y");
  Result r = Tensorcut(absl::StrCat("export --onnx ", model, flags, " --batch 30 --plan ", plan));
  REQUIRE(r.code == 0);
  CHECK(r.out.rfind("tensorcut export: classifier2 (ONNX opset 15, ", 0) == 0);
  r = Tensorcut(absl::StrCat("run --plan ", plan, flags, " --steps 25"));
  REQUIRE(r.code == 0);
  CHECK(Contains(r.out, absl::StrCat("tensorcut run: classifier2 (plan ", plan, ")\n")));
  const std::string run_25 = LossAt(r.out, 25, 25);
  r = Tensorcut(
      absl::StrCat("train --onnx ", model, flags, " --batch 30 --steps 25 --checkpoint ", ckpt));
  REQUIRE(r.code == 0);
  CHECK(LossAt(r.out, 25, 25) == run_25);
}

TEST_CASE("train --onnx trains an imported model on the user's CSV") {
  const std::string train = TempPath("onnx_points.csv"), test = TempPath("onnx_points_test.csv");
  std::ofstream(train) << Points(300, true, 1);
  std::ofstream(test) << Points(90, true, 2);
  const std::string model = OnnxClassifier(2), ckpt = TempPath("classifier.safetensors");
  Result r = Tensorcut(absl::StrCat("train --onnx ", model, " --data ", train,
                                    " --label-column y --test-data ", test,
                                    " --batch 30 --steps 60 --checkpoint ", ckpt));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(Contains(r.out,
                 "tensorcut train: classifier2 (ONNX opset 15, 99 parameters, 3 classes, "
                 "cross_entropy)"));
  const size_t at = r.out.find("test accuracy ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(r.out.substr(at + 14)) > 90);
  // The checkpoint holds the ONNX names.
  const nn::NamedTensors saved = nn::LoadTensors(ckpt).value();
  CHECK(saved[0].first == "0.weight");

  // Mistakes name the flag or the file.
  r = Tensorcut(absl::StrCat("train --onnx ", model, " --model mlp --steps 1"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "--model and --onnx: give one model to train, not both"));
  r = Tensorcut(absl::StrCat("train --onnx ", model, " --loss hinge --steps 1"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "--loss hinge: expected one of cross_entropy, nll_loss"));
  r = Tensorcut(absl::StrCat("train --loss nll_loss --steps 1"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "--loss applies to --onnx models"));
  r = Tensorcut(absl::StrCat("train --onnx ", OnnxClassifier(5), " --data ", train,
                             " --label-column y --steps 1"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, absl::StrCat("--data ", train, " has 2 features and 3 classes; --onnx ",
                                     TempPath("classifier5.onnx"),
                                     " takes 5 values per example and scores 3 classes")));
  r = Tensorcut(absl::StrCat("train --onnx ", TempPath("absent.onnx"), " --steps 1"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, absl::StrCat(TempPath("absent.onnx"), ": cannot open the ONNX model")));
  std::ofstream(TempPath("garbage.onnx")) << "not a model";
  r = Tensorcut(absl::StrCat("train --onnx ", TempPath("garbage.onnx"), " --steps 1"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "not an ONNX model"));
}

// The README's round trip (examples/onnx/fashion_cnn.py): a CNN exported by
// PyTorch for training, trained by tensorcut, evaluated by PyTorch with the
// checkpoint loaded by load_state_dict: the same test accuracy.
TEST_CASE("a PyTorch CNN trained by train --onnx scores the same accuracy back in PyTorch") {
  if (std::system("/usr/bin/python3 -c 'import torch, onnx' 2>/dev/null") != 0) {
    WARN("skipped: python3-torch and python3-onnx are not installed");
    return;
  }
  const std::string script = "examples/onnx/fashion_cnn.py";
  const std::string model = TempPath("fashion_cnn.onnx"),
                    ckpt = TempPath("fashion_cnn.safetensors");
  REQUIRE(std::system(absl::StrCat("/usr/bin/python3 ", script, " export ", model, " >/dev/null 2>",
                                   TempPath("export.log"))
                          .c_str()) == 0);
  const Result r =
      Tensorcut(absl::StrCat("train --onnx ", model, " --steps 30 --checkpoint ", ckpt));
  REQUIRE(r.code == 0);
  const size_t at = r.out.find("test accuracy ");
  REQUIRE(at != std::string::npos);
  const std::string tensorcut_accuracy = r.out.substr(at + 14, r.out.find('%', at) - at - 14);
  const std::string evaluated = TempPath("evaluate.txt");
  REQUIRE(std::system(absl::StrCat("/usr/bin/python3 ", script, " evaluate ", ckpt, " >", evaluated,
                                   " 2>/dev/null")
                          .c_str()) == 0);
  CHECK(ReadFile(evaluated) ==
        absl::StrCat("PyTorch, the weights tensorcut trained: test accuracy ", tensorcut_accuracy,
                     "%\n"));
}

TEST_CASE("remat reads a node-link graph and prints its size and peak without recomputation") {
  // a(1e9 bytes) -> b(2e9) -> c(4e9), costs 1, 2, 3.
  const std::string path = TempPath("chain.json");
  std::ofstream(path)
      << R"({"graph": {"name": "chain"}, "nodes": [)"
      << R"({"id": 0, "name": "a", "backward": false, "cost_cpu": 1, "cost_ram": 1000000000},)"
      << R"({"id": 1, "name": "b", "backward": false, "cost_cpu": 2, "cost_ram": 2000000000},)"
      << R"({"id": 2, "name": "c", "backward": true, "cost_cpu": 3, "cost_ram": 4000000000}],)"
      << R"("links": [{"source": 0, "target": 1}, {"source": 1, "target": 2}]})";
  Result r = Tensorcut("remat --graph " + path);
  REQUIRE(r.code == 0);
  CHECK(r.out ==
        "chain: 3 nodes (1 backward), 2 edges\n"
        "one pass without recomputation: peak 6.000 GB, compute 6\n");
  r = Tensorcut("remat --json --graph " + path);
  REQUIRE(r.code == 0);
  CHECK(r.out ==
        "{\"graph\":\"chain\",\"nodes\":3,\"edges\":2,\"backward_nodes\":1,"
        "\"no_remat_peak_bytes\":6000000000,\"compute\":6.0}\n");
  r = Tensorcut("remat");
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "--graph FILE.json"));
  std::ofstream(TempPath("cycle.json"))
      << R"({"nodes": [{"id": 0, "name": "a", "cost_cpu": 1, "cost_ram": 1},)"
      << R"({"id": 1, "name": "b", "cost_cpu": 1, "cost_ram": 1}],)"
      << R"("links": [{"source": 0, "target": 1}, {"source": 1, "target": 0}]})";
  r = Tensorcut("remat --graph " + TempPath("cycle.json"));
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "node 0 (a) is on a cycle or after one"));

  // Scheduled under a budget: at 6 GB nothing is computed twice; at half the
  // peak (3 GB), c (b and c: 6 GB) proves that no schedule fits.
  r = Tensorcut("remat --json --strategy all --budget 6GB --graph " + path);
  REQUIRE(r.code == 0);
  const nlohmann::json all = nlohmann::json::parse(r.out);
  REQUIRE(all.size() == 3);
  for (const nlohmann::json& row : all) {
    INFO(row.dump());
    CHECK(row["found"] == true);
    CHECK(row["budget_bytes"] == 6000000000);
    CHECK(row["peak_bytes"] == 6000000000);
    CHECK(row["overhead"] == 0);
    CHECK(row.contains("proven_gap"));
    CHECK(row.contains("solve_seconds"));
  }
  CHECK(all[2]["strategy"] == "milp");
  CHECK(all[2]["proven_optimal"] == true);
  r = Tensorcut("remat --budget 0.5 --graph " + path);
  REQUIRE(r.code == 0);
  CHECK(Contains(r.out, "budget 3.000 GB (0.500 of it)"));
  CHECK(Contains(r.out,
                 "milp         infeasible: no schedule fits in 3000000000 bytes: node 2 (c) "
                 "needs 6000000000 bytes"));
  r = Tensorcut("remat --budget 12XB --graph " + path);
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "budget \"12XB\": expected a positive fraction"));
  r = Tensorcut("remat --budget 0.9 --strategy min_cut --graph " + path);
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "remat schedules with greedy, lp_rounding, milp or all"));
  r = Tensorcut("partition --model mlp --budget 12GB");
  CHECK(r.code == 2);
  CHECK(Contains(r.err, "the partition strategies take a fraction in [0, 1]"));
}

TEST_CASE("train reads .npz arrays with their test split") {
  // np.savez's layout: one stored .npy member per array.
  std::vector<float> x, x_test;
  std::vector<int64_t> y, y_test;
  auto npy = [](const std::string& descr, const std::string& shape, const auto& values) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
    return testing::Npy(
        absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }"),
        testing::Bytes(bytes, bytes + values.size() * sizeof(values[0])));
  };
  Generator gen(3);
  const std::vector<float> noise = randn({400, 2}, DType::kF32, &gen).to_vector<float>();
  for (int i = 0; i < 400; ++i) {
    const int c = i % 2;
    auto& xs = i < 300 ? x : x_test;
    auto& ys = i < 300 ? y : y_test;
    xs.push_back(4.0f * c + noise[2 * i]);
    xs.push_back(noise[2 * i + 1]);
    ys.push_back(c);
  }
  const testing::Bytes zip = testing::Zip({{"x.npy", npy("<f4", "(300, 2)", x)},
                                           {"y.npy", npy("<i8", "(300,)", y)},
                                           {"x_test.npy", npy("<f4", "(100, 2)", x_test)},
                                           {"y_test.npy", npy("<i8", "(100,)", y_test)}},
                                          /*deflated=*/false);
  const std::string path = TempPath("blobs.npz");
  std::ofstream(path, std::ios::binary) << std::string(zip.begin(), zip.end());
  const Result r = Tensorcut(absl::StrCat("train --model mlp --data ", path,
                                          " --batch 50 --steps 30 --checkpoint ",
                                          TempPath("blobs.safetensors")));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(Contains(r.out, absl::StrCat("data: ", path,
                                     " (300 examples of 2 features, 2 classes; 100 for testing)")));
  const size_t at = r.out.find("test accuracy ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(r.out.substr(at + 14)) > 90);
  const Result missing =
      Tensorcut(absl::StrCat("train --model mlp --data ", path, " --labels labels --steps 1"));
  CHECK(missing.code == 2);
  CHECK(Contains(missing.err, absl::StrCat("--data ", path,
                                           " has no array \"labels\" (--labels); its "
                                           "arrays: x, y, x_test, y_test")));

  // A NaN feature (.npz) or an infinite one (.safetensors) is refused, named.
  x[2 * 7 + 1] = std::nanf("");
  const testing::Bytes with_nan = testing::Zip(
      {{"x.npy", npy("<f4", "(300, 2)", x)}, {"y.npy", npy("<i8", "(300,)", y)}}, false);
  const std::string nan_path = TempPath("nan.npz");
  std::ofstream(nan_path, std::ios::binary) << std::string(with_nan.begin(), with_nan.end());
  const Result nan = Tensorcut(absl::StrCat("train --model mlp --data ", nan_path, " --steps 1"));
  CHECK(nan.code == 2);
  CHECK(Contains(nan.err, absl::StrCat(nan_path,
                                       ": features f32[300,2]: example 7, element 1 is "
                                       "nan: features must be finite f32 values")));
  const std::string inf_path = TempPath("inf.safetensors");
  Tensor features = from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2});
  features.data<double>()[4] = INFINITY;
  REQUIRE(nn::SaveTensors({{"x", features}, {"y", from_vector<int64_t>({0, 1, 0}, {3})}}, inf_path)
              .ok());
  const Result inf = Tensorcut(absl::StrCat("train --model mlp --data ", inf_path, " --steps 1"));
  CHECK(inf.code == 2);
  CHECK(Contains(inf.err, absl::StrCat(inf_path,
                                       ": features f64[3,2]: example 2, element 0 is "
                                       "inf: features must be finite f32 values")));
}

TEST_CASE("train loses nothing: a diverging loss stops it, a signal saves, --save-every saves") {
  const std::string ckpt = TempPath("diverging.safetensors");
  REQUIRE(
      Tensorcut(absl::StrCat("train --model linear --steps 5 --optimizer sgd --checkpoint ", ckpt))
          .code == 0);
  // lr 1e30: the loss overflows within a few steps. Saved every step until
  // then; the step that overflowed is not saved.
  Result r = Tensorcut(absl::StrCat("train --model linear --steps 30 --optimizer sgd --lr 1e30 ",
                                    "--save-every 1 --checkpoint ", ckpt, " --resume ", ckpt));
  REQUIRE(r.code == 1);
  REQUIRE(Contains(r.err, ": the loss is "));
  REQUIRE(
      Contains(r.err, absl::StrCat("; training stopped without saving (", ckpt, " holds step ")));
  const std::string kept = SavedStep(ckpt);
  REQUIRE(Contains(r.err, absl::StrCat("holds step ", kept, ")")));
  REQUIRE(std::stoi(kept) > 5);
  REQUIRE(std::isfinite(nn::LoadTensors(ckpt).value()[0].second.to_vector<float>()[0]));

  // SIGINT mid-run: the current step ends, the checkpoint is written.
  const std::string interrupted = TempPath("interrupted.safetensors");
  r = Tensorcut(absl::StrCat("train --model transformer --steps 100000 --checkpoint ", interrupted),
                /*interrupt_after=*/3);
  REQUIRE(r.code == 130);
  REQUIRE(Contains(r.err, "tensorcut train: interrupted (SIGINT) at step "));
  REQUIRE(Contains(r.err, absl::StrCat(": checkpoint ", interrupted, " saved; --resume ")));
  REQUIRE(Contains(r.err, absl::StrCat("at step ", SavedStep(interrupted), ":")));

  // SIGINT while the data loads (a CSV of 120 MB, about 2 s on a fast
  // machine, interrupted after half a second): no step was taken, so the
  // checkpoint of the run before stays as it was.
  const std::string big = TempPath("big.csv");
  {
    // 3,000 distinct rows written 1,000 times: quick to write even under the
    // sanitizers.
    std::string rows;
    for (int i = 0; i < 3000; ++i) {
      absl::StrAppend(&rows, i % 97, ".25,", i % 89, ".5,1.125,2.75,3.5,-4.25,5.0625,6.5,", i % 3,
                      "\n");
    }
    std::ofstream csv(big);
    csv << "a,b,c,d,e,f,g,h,y\n";
    for (int i = 0; i < 1000; ++i) csv << rows;
  }
  const std::string before = ReadFile(interrupted);
  r = Tensorcut(absl::StrCat("train --model mlp --data ", big,
                             " --label-column y --steps 5 --checkpoint ", interrupted),
                /*interrupt_after=*/0.5);
  REQUIRE(r.code == 130);
  REQUIRE(Contains(r.err, absl::StrCat("tensorcut train: interrupted (SIGINT) before the first "
                                       "step: nothing saved (",
                                       interrupted, " is as it was)")));
  // It stopped loading: the banner that follows the data and the compile is not there.
  REQUIRE(!Contains(r.out, "\ndata: "));
  REQUIRE(ReadFile(interrupted) == before);
}

TEST_CASE("partition --json reports the library's numbers; --dot writes the joint graph") {
  const std::string dot = TempPath("mlp.dot");
  const Result r =
      Tensorcut(absl::StrCat("partition --model mlp --strategy min_cut --json --dot ", dot));
  REQUIRE(r.code == 0);
  REQUIRE(std::count(r.out.begin(), r.out.end(), '\n') == 1);  // one line
  REQUIRE(r.out.rfind("{\"model\":\"mlp\",\"strategy\":\"min_cut\",\"budget\":null,", 0) == 0);
  const partition::PartitionReport ref = LibraryReport("mlp", "min_cut");
  REQUIRE(JsonNumber(r.out, "saved_bytes") == ref.saved_bytes);
  REQUIRE(JsonNumber(r.out, "saved_activation_bytes") == ref.saved_activation_bytes);
  REQUIRE(JsonNumber(r.out, "recomputed_nodes") == ref.recomputed_nodes);
  REQUIRE(JsonNumber(r.out, "recompute_flops") == ref.recompute_flops);
  REQUIRE(JsonNumber(r.out, "fw_nodes") == ref.fw_nodes);
  REQUIRE(JsonNumber(r.out, "measured_peak_bytes") == *ref.measured_peak_bytes);
  REQUIRE(*ref.measured_peak_bytes > 0);
  REQUIRE(Contains(r.out, "\"step_memory\":{\"forward_arena_bytes\":"));
  REQUIRE(JsonNumber(r.out, "bw_nodes") == ref.bw_nodes);
  REQUIRE(JsonNumber(r.out, "partition_ms") >= 0);
  REQUIRE(Contains(r.out, "\"saved_values\":[{\"name\":"));
  REQUIRE(ReadFile(dot).rfind("digraph joint {\n", 0) == 0);

  const Result text = Tensorcut("partition --model mlp --strategy budget --budget 0.25");
  REQUIRE(text.code == 0);
  REQUIRE(text.out.rfind("mlp with budget 0.25: joint graph ", 0) == 0);
  const partition::PartitionReport budget = LibraryReport("mlp", "budget", 0.25);
  REQUIRE(Contains(text.out, partition::ReportText(budget)));
}

TEST_CASE("the zoo's models are selectable by name") {
  const Result r = Tensorcut("partition --model resnet18 --strategy min_cut --json");
  REQUIRE(r.code == 0);
  REQUIRE(r.out.rfind("{\"model\":\"resnet18\",\"strategy\":\"min_cut\",", 0) == 0);
  REQUIRE(JsonNumber(r.out, "measured_peak_bytes") > 0);
  const Result g = Tensorcut("graph --model vgg11 --stage captured");
  REQUIRE(g.code == 0);
  REQUIRE(Contains(g.out, "%p_features_26_bias: f32[512]"));  // features.26.bias
}

TEST_CASE("partition --strategy milp reports the library's partition and how the solve ended") {
  const Result r = Tensorcut("partition --model mlp --strategy milp --budget 0.5 --json");
  REQUIRE(r.code == 0);
  REQUIRE(r.out.rfind("{\"model\":\"mlp\",\"strategy\":\"milp\",\"budget\":0.5,", 0) == 0);
  const partition::PartitionReport ref = LibraryReport("mlp", "milp", 0.5);
  REQUIRE(JsonNumber(r.out, "saved_bytes") == ref.saved_bytes);
  REQUIRE(JsonNumber(r.out, "recompute_flops") == ref.recompute_flops);
  REQUIRE(Contains(r.out, "\"milp\":{\"proven_optimal\":true,"));
  REQUIRE(JsonNumber(r.out, "relative_gap") == 0);

  const Result text = Tensorcut("partition --model mlp --strategy milp --budget 0.5");
  REQUIRE(text.code == 0);
  REQUIRE(text.out.rfind("mlp with milp 0.5: joint graph ", 0) == 0);
  REQUIRE(Contains(text.out, partition::ReportText(ref)));
  REQUIRE(Contains(text.out, "\nmilp: proven optimal in "));
}

TEST_CASE("compare tables every strategy with its planned peak and resident growth") {
  const Result r = Tensorcut("compare --model mlp --steps 1");
  REQUIRE(r.code == 0);
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n');
  REQUIRE(lines.size() >= 8);
  REQUIRE(lines[2].rfind("strategy ", 0) == 0);
  const char* rows[] = {"default ",       "min_cut ",  "budget 0.5 ",
                        "recompute_all ", "milp 0.5 ", "peak_budget 0.5 "};
  for (int i = 0; i < 6; ++i) {
    INFO(rows[i]);
    REQUIRE(lines[3 + i].rfind(rows[i], 0) == 0);
  }
  // The default row's saved bytes, in MB, are the library's.
  const std::vector<std::string> cells = absl::StrSplit(lines[3], ' ', absl::SkipWhitespace());
  const partition::PartitionReport default_report = LibraryReport("mlp", "default");
  REQUIRE(cells[1] == absl::StrFormat("%.3f", default_report.saved_bytes / 1e6));
  // Then the planned peak, and what the steps added to the resident set:
  // the plans' memory, taken at the first step, and some eager results.
  REQUIRE(cells[7] == absl::StrFormat("%.3f", *default_report.measured_peak_bytes / 1e6));
  const std::vector<std::string> min_cut_cells =
      absl::StrSplit(lines[4], ' ', absl::SkipWhitespace());
  REQUIRE(std::stod(min_cut_cells[8]) >= std::stod(min_cut_cells[7]) / 2);

  // The sweep's outputs without the sweep are a mistake, not ignored.
  const Result csv_alone = Tensorcut("compare --model mlp --csv x.csv");
  REQUIRE(csv_alone.code == 2);
  REQUIRE(Contains(csv_alone.err, "--csv is an output of --sweep; add --sweep"));
  REQUIRE(Tensorcut("compare --model mlp --json=false --steps 1").code == 0);
  const Result all = Tensorcut("compare --model all");
  REQUIRE(all.code == 2);
  REQUIRE(Contains(all.err, "--model all: all models, or a list, need --sweep"));
  const Result budget = Tensorcut("compare --model mlp --sweep --budget 0.3");
  REQUIRE(budget.code == 2);
  REQUIRE(Contains(budget.err, "--budget does not apply to --sweep"));
}

TEST_CASE("compare --sweep on two models writes a row per strategy and budget, CSV and SVG") {
  const std::string csv = TempPath("suite.csv"), svg = TempPath("suite.svg");
  const Result r = Tensorcut(
      absl::StrCat("compare --model linear,convbn --sweep --steps 1 --csv ", csv, " --plot ", svg));
  INFO(r.err);
  REQUIRE(r.code == 0);
  // A table (one header, 18 rows a model), a plot line per model, the CSV's.
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 1 + 18 + 1 + 18 + 1 + 1);
  REQUIRE(lines[0].rfind("model ", 0) == 0);
  REQUIRE(lines[1].rfind("linear              default ", 0) == 0);
  REQUIRE(lines[19] == absl::StrCat("plot: ", TempPath("suite_linear.svg"), " and ",
                                    TempPath("suite_linear_schedules.svg")));
  REQUIRE(lines[20].rfind("convbn              default ", 0) == 0);
  REQUIRE(lines[39] == absl::StrCat("suite: 36 rows written to ", csv));

  const std::vector<std::string> rows = absl::StrSplit(ReadFile(csv), '\n', absl::SkipEmpty());
  REQUIRE(rows.size() == 37);
  REQUIRE(rows[0] ==
          "model,strategy,budget,saved_bytes,measured_peak_bytes,recompute_flops,step_ms,"
          "partition_ms,milp_flops,milp_proven,milp_solver_gap,gap_to_milp,schedule_peak_bytes,"
          "best_schedule_flops,best_schedule_proven");
  // convbn's min_cut row: the library's saved bytes and planned peak.
  const partition::PartitionReport min_cut = LibraryReport("convbn", "min_cut");
  const std::vector<std::string> min_cut_row = absl::StrSplit(rows[20], ',');
  REQUIRE(min_cut_row[0] == "convbn");
  REQUIRE(min_cut_row[1] == "min_cut");
  REQUIRE(min_cut_row[2].empty());
  REQUIRE(min_cut_row[3] == absl::StrCat(min_cut.saved_bytes));
  REQUIRE(min_cut_row[4] == absl::StrCat(*min_cut.measured_peak_bytes));
  // Budget, peak_budget, then milp rows at 0, 0.25, ..., 1; milp is its own
  // optimum, and proves it on these graphs, so no strategy's gap is
  // negative; peak_budget's planned peak never falls as its budget grows.
  const char* budgets[] = {"0", "0.25", "0.5", "0.75", "1"};
  for (int model = 0; model < 2; ++model) {
    const auto row = [&](int i) -> std::vector<std::string> {
      return absl::StrSplit(rows[1 + 18 * model + i], ',');
    };
    for (int i = 0; i < 5; ++i) {
      const std::vector<std::string> budget_row = row(3 + i), peak_row = row(8 + i),
                                     milp_row = row(13 + i);
      INFO(rows[1 + 18 * model + 3 + i]);
      REQUIRE(budget_row[1] == "budget");
      REQUIRE(budget_row[2] == budgets[i]);
      REQUIRE(peak_row[1] == "peak_budget");
      REQUIRE(peak_row[2] == budgets[i]);
      if (i > 0) REQUIRE(std::stoll(row(7 + i)[4]) <= std::stoll(peak_row[4]));
      REQUIRE(milp_row[1] == "milp");
      REQUIRE(milp_row[2] == budgets[i]);
      REQUIRE(milp_row[9] == "1");
      REQUIRE(milp_row[10] == "0");
      REQUIRE(milp_row[11] == "0");
      REQUIRE(std::stod(milp_row[5]) <= std::stod(budget_row[5]));
    }
    for (int i = 0; i < 13; ++i) {
      INFO(rows[1 + 18 * model + i]);
      REQUIRE(row(i)[9] == "1");
      REQUIRE(std::stod(row(i)[11]) >= 0);
    }
    // Every row's best schedule at its activation peak, proven on these
    // graphs, recomputes no more than the row's partition.
    for (int i = 0; i < 18; ++i) {
      INFO(rows[1 + 18 * model + i]);
      REQUIRE(std::stoll(row(i)[12]) > 0);
      REQUIRE(row(i)[14] == "1");
      REQUIRE(std::stod(row(i)[13]) <= std::stod(row(i)[5]) + 1e-6);
    }
  }
  for (const char* model : {"linear", "convbn"}) {
    const std::string plot = ReadFile(TempPath(absl::StrCat("suite_", model, ".svg")));
    REQUIRE(plot.rfind("<svg ", 0) == 0);
    REQUIRE(Contains(plot, absl::StrCat(">", model, ": planned peak against step time</text>")));
    REQUIRE(Contains(plot, ">milp</text>"));
    REQUIRE(Contains(plot, "<polyline points=\""));
    const std::string schedules =
        ReadFile(TempPath(absl::StrCat("suite_", model, "_schedules.svg")));
    REQUIRE(Contains(schedules, absl::StrCat(">", model,
                                             ": partitions and the best schedules at their "
                                             "peaks</text>")));
    REQUIRE(Contains(schedules, ">best schedule</text>"));
  }

  // --json: the same rows as an array.
  const Result json = Tensorcut("compare --model linear --sweep --steps 1 --json");
  REQUIRE(json.code == 0);
  REQUIRE(json.out.rfind("[\n  {\n    \"model\": \"linear\",\n    \"strategy\": \"default\",", 0) ==
          0);
  REQUIRE(Contains(json.out, "\"budget\": null,"));
  REQUIRE(Contains(json.out, "\"strategy\": \"milp\",\n    \"budget\": 1.0,"));
}

TEST_CASE("graph prints each stage's IR as the library does") {
  nn::ModelSpec spec = nn::MakeModel("linear", 0).value();
  CompilerPipeline pipeline = JointPipeline(*spec.module, spec.inputs).value();
  const JointGraph& joint = **pipeline.joint_graph();
  partition::PartitionResult part =
      pipeline.partition(partition::PartitionerByName("min_cut").value(), joint).value();

  Result r = Tensorcut("graph --model linear --stage captured");
  REQUIRE(r.code == 0);
  REQUIRE(r.out == ToString(pipeline.captured().graph));
  r = Tensorcut("graph --model linear --stage joint --decompose");
  REQUIRE(r.code == 0);
  REQUIRE(r.out == ToString(joint));
  REQUIRE(Contains(r.out, "ParamGrad{linear.weight}"));
  r = Tensorcut("graph --model linear --stage forward --decompose");
  REQUIRE(r.out == ToString(part.forward));
  const std::string dot = TempPath("backward.dot");
  r = Tensorcut(absl::StrCat("graph --model linear --stage backward --decompose --dot ", dot));
  REQUIRE(r.out == ToString(part.backward));
  const std::string text = ReadFile(dot);
  REQUIRE(text.rfind("digraph backward {\n", 0) == 0);
  for (const Node* n : part.backward.nodes()) {
    REQUIRE(Contains(text, absl::StrCat(OpName(n->op()), " %", n->result(0)->name())));
  }
  // The batch a symbol: its text parses back to the same graph.
  r = Tensorcut("graph --model mlp --stage backward --dynamic-batch");
  REQUIRE(r.code == 0);
  REQUIRE(Contains(r.out, "%arg: f32[s0,784]"));
  REQUIRE(ToString(Parse(r.out).value()) == r.out);
  // With the data-parallel all-reduce: linear's two gradients in one bucket.
  r = Tensorcut("graph --model linear --stage backward --data-parallel");
  REQUIRE(r.code == 0);
  REQUIRE(Contains(r.out, "%grad_weight: f64[]) {\n"));
  REQUIRE(
      Contains(r.out, "= all_reduce_start(%3, %4, %grad_weight) {group=\"world\"}  # bucket 0"));
  REQUIRE(Contains(r.out, "= all_reduce_wait(%5) {group=\"world\"}  # bucket 0"));
  REQUIRE(ToString(Parse(r.out).value()) == r.out);
  r = Tensorcut("graph --model linear --stage forward --data-parallel");
  REQUIRE(r.code == 2);
  REQUIRE(r.err ==
          "tensorcut graph: --data_parallel shows the backward's all-reduce: it takes --stage "
          "backward, not forward\n");
}

TEST_CASE("bench --json prints one object with the step times and GFLOP/s") {
  const Result r = Tensorcut("bench --model linear --runs 3 --threads 1 --json");
  REQUIRE(r.code == 0);
  REQUIRE(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  REQUIRE(r.out.rfind("{\"model\": \"linear\",", 0) == 0);
  for (const char* key : {"compiled_step_ms", "function_step_ms", "interpreter_step_ms",
                          "eager_step_ms", "compile_ms", "compiled_inference_ms",
                          "eager_inference_ms", "gflops", "matmul_peak_gflops", "step_gflop"}) {
    INFO(key);
    CHECK(JsonNumber(r.out, key) > 0);
  }
  CHECK(JsonNumber(r.out, "threads") == 1);
  CHECK(JsonNumber(r.out, "runs") == 3);
  REQUIRE(Tensorcut("bench --model resnet").code != 0);
}

TEST_CASE("--gemm picks the library of f32 products, and a bad name is refused before any work") {
  // The same training on each: the same losses, up to f32 rounding order.
  std::vector<double> losses;
  for (const char* gemm : {"onednn", "openblas", "auto"}) {
    INFO(gemm);
    const Result r =
        Tensorcut(absl::StrCat("train --model mlp --steps 2 --batch 32 --gemm ", gemm));
    REQUIRE(r.code == 0);
    const size_t at = r.out.find("\nstep 2/2 loss ");
    REQUIRE(at != std::string::npos);
    losses.push_back(std::stod(r.out.substr(at + std::strlen("\nstep 2/2 loss "))));
  }
  CHECK(losses[1] == Approx(losses[0]).epsilon(1e-3));
  CHECK(losses[2] == Approx(losses[0]).epsilon(1e-3));
  const Result r = Tensorcut("bench --model linear --gemm mkl");
  REQUIRE(r.code == 2);
  REQUIRE(r.err == "tensorcut bench: --gemm: expected auto, onednn or openblas, got \"mkl\"\n");
  REQUIRE(r.out.empty());
}

TEST_CASE("--precision bf16 trains with bf16 products, and a bad name is refused before any work") {
  const Result f32 = Tensorcut("train --model mlp --steps 2 --batch 32");
  const Result bf16 = Tensorcut("train --model mlp --steps 2 --batch 32 --precision bf16");
  REQUIRE(f32.code == 0);
  REQUIRE(bf16.code == 0);
  auto loss = [](const std::string& out) {
    const size_t at = out.find("\nstep 2/2 loss ");
    REQUIRE(at != std::string::npos);
    return std::stod(out.substr(at + std::strlen("\nstep 2/2 loss ")));
  };
  // bf16's 8 significant bits: within 2% after two steps.
  CHECK(loss(bf16.out) == Approx(loss(f32.out)).epsilon(2e-2));
  if (CpuHasBf16()) {
    CHECK(Contains(bf16.out,
                   "\nprecision bf16: matmul, linear and convolutions on bf16 operands, "
                   "accumulated in f32\n"));
  } else {
    CHECK(Contains(bf16.err, "tensorcut: bf16 precision: this CPU has no bf16 instructions"));
    CHECK(loss(bf16.out) == loss(f32.out));
  }
  const Result r = Tensorcut("train --model mlp --precision f16");
  REQUIRE(r.code == 2);
  REQUIRE(r.err == "tensorcut train: --precision: expected f32 or bf16, got \"f16\"\n");
  REQUIRE(r.out.empty());
}

// The one gemm-*.txt file in `folder`, or "" when there is none or several.
std::string GemmCacheIn(const std::string& folder) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "gemm-") && absl::EndsWith(name, ".txt")) {
      files.push_back(entry.path().string());
    }
  }
  return files.size() == 1 ? files[0] : "";
}

TEST_CASE("gemm verdicts are kept on disk: the next process times no shape again") {
  const std::string folder = TempPath("gemm_cache");
  setenv("TENSORCUT_CACHE_DIR", folder.c_str(), 1);
  REQUIRE(Tensorcut("train --model transformer --steps 1").code == 0);
  const std::string path = GemmCacheIn(folder);
  REQUIRE(!path.empty());
  const std::string verdicts = ReadFile(path);
  const std::vector<std::string> lines = absl::StrSplit(verdicts, '\n', absl::SkipEmpty());
  REQUIRE(lines.size() >= 2);  // the identity, then at least one shape
  CHECK(absl::StartsWith(lines[0], "tensorcut gemm verdicts: "));
  REQUIRE(Tensorcut("train --model transformer --steps 1").code == 0);
  CHECK(ReadFile(path) == verdicts);
  // A damaged file: what does not parse is timed again and appended.
  std::ofstream(path) << lines[0] << "\n1 2 garbage\n";
  REQUIRE(Tensorcut("train --model transformer --steps 1").code == 0);
  const std::vector<std::string> again = absl::StrSplit(ReadFile(path), '\n', absl::SkipEmpty());
  CHECK(again.size() == lines.size() + 1);
  unsetenv("TENSORCUT_CACHE_DIR");
}

TEST_CASE("the compile cache: a second process trains on the program the first compiled") {
  setenv("TENSORCUT_CACHE_DIR", TempPath("step_cache").c_str(), 1);
  const std::string ckpt = TempPath("cached.safetensors");
  Result first = Tensorcut("train --model cnn --steps 3 --checkpoint " + ckpt);
  REQUIRE(first.code == 0);
  CHECK(Contains(first.out, "compiled in "));
  CHECK_FALSE(Contains(first.out, "(the cached program)"));
  Result second = Tensorcut("train --model cnn --steps 3 --checkpoint " + ckpt);
  REQUIRE(second.code == 0);
  CHECK(Contains(second.out, " with min_cut (the cached program): joint graph "));
  CHECK(LossAt(second.out, 3, 3) == LossAt(first.out, 3, 3));
  // Another partition is compiled, not cached.
  Result budget = Tensorcut("train --model cnn --steps 3 --partition budget --checkpoint " + ckpt);
  REQUIRE(budget.code == 0);
  CHECK_FALSE(Contains(budget.out, "(the cached program)"));
  unsetenv("TENSORCUT_CACHE_DIR");
}

}  // namespace
}  // namespace tc
