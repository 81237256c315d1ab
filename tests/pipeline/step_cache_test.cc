// The compile cache: a second compile of the same model takes its program
// from the cache and trains bit for bit as the first; a damaged entry or
// another key's is compiled again and replaced; no cache when it is off or
// the partition is the caller's.
#include "pipeline/step_cache.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/cache_folder.h"
#include "catch2/catch.hpp"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "partition/min_cut.h"
#include "pipeline/train_step.h"
#include "runtime/random.h"

namespace tc {
namespace {

namespace fs = std::filesystem;

// A fresh cache folder for one test, set as TENSORCUT_CACHE_DIR.
std::string UseCacheFolder(const std::string& name) {
  const std::string folder = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  fs::remove_all(folder);
  setenv("TENSORCUT_CACHE_DIR", folder.c_str(), 1);
  return folder;
}

// The entries in `folder`'s cache.
std::vector<std::string> Entries(const std::string& folder) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& e : fs::directory_iterator(folder + "/steps", error)) {
    files.push_back(e.path().string());
  }
  return files;
}

// A model's step: its losses over three runs and what compiling made.
struct Trained {
  std::vector<double> losses;
  StepSummary summary;
};

Trained Train(const std::string& name, const TrainStepOptions& options = {}) {
  manual_seed(1);  // the same dropout masks every time
  nn::ModelSpec spec = nn::MakeModel(name, 4).value();
  nn::SGD sgd(spec.module->named_parameters(), 0.05, /*momentum=*/0.9);
  std::unique_ptr<TrainStep> step =
      TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd, options).value();
  std::vector<Tensor> batch = Flatten(spec.inputs).first;
  for (const Tensor& t : Flatten(spec.targets).first) batch.push_back(t);
  Trained trained{{}, step->summary()};
  for (int i = 0; i < 3; ++i) trained.losses.push_back(step->Run(batch).value());
  return trained;
}

TEST_CASE("a second compile takes the cached program and trains bit for bit as the first") {
  const std::string folder = UseCacheFolder("hit");
  for (const std::string name : {"mlp", "convbn", "transformer", "mlp_dropout"}) {
    INFO(name);
    const Trained first = Train(name);
    CHECK_FALSE(first.summary.cached);
    const Trained second = Train(name);
    CHECK(second.summary.cached);
    CHECK(second.losses == first.losses);
    CHECK(second.summary.joint_nodes == first.summary.joint_nodes);
    CHECK(second.summary.forward_nodes == first.summary.forward_nodes);
    CHECK(second.summary.backward_nodes == first.summary.backward_nodes);
    CHECK(second.summary.saved_values == first.summary.saved_values);
    CHECK(second.summary.saved_bytes == first.summary.saved_bytes);
  }
  CHECK(Entries(folder).size() == 4);
  // Other options shape another program: another entry.
  CHECK_FALSE(Train("mlp", {.return_outputs = true}).summary.cached);
  CHECK(Entries(folder).size() == 5);
  unsetenv("TENSORCUT_CACHE_DIR");
}

TEST_CASE("a damaged entry, or another key's, is compiled again and replaced") {
  const std::string folder = UseCacheFolder("damaged");
  const Trained first = Train("mlp");
  REQUIRE(Entries(folder).size() == 1);
  const std::string entry = Entries(folder)[0];
  // A byte of the forward graph's text changed: the header's checksum no
  // longer matches.
  std::string bytes;
  {
    std::ifstream in(entry, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find("linear(");
  REQUIRE(at != std::string::npos);
  bytes[at] = 'k';
  std::ofstream(entry, std::ios::binary) << bytes;
  Trained again = Train("mlp");
  CHECK_FALSE(again.summary.cached);
  CHECK(again.losses == first.losses);
  CHECK(Train("mlp").summary.cached);  // replaced by a good entry

  // Another model's entry where the mlp's belongs: its key differs.
  const std::string other = UseCacheFolder("other");
  Train("linear");
  REQUIRE(Entries(other).size() == 1);
  fs::copy_file(Entries(other)[0], entry, fs::copy_options::overwrite_existing);
  setenv("TENSORCUT_CACHE_DIR", folder.c_str(), 1);
  again = Train("mlp");
  CHECK_FALSE(again.summary.cached);
  CHECK(again.losses == first.losses);
  CHECK(Train("mlp").summary.cached);
  // Truncated: not a file that loads.
  fs::resize_file(entry, 100);
  CHECK_FALSE(Train("mlp").summary.cached);
  unsetenv("TENSORCUT_CACHE_DIR");
}

TEST_CASE("an entry's key names the build that wrote it, so a rebuilt engine compiles again") {
  // The file holding this code, its size and modification time: a rebuild
  // of the same version makes another key.
  const std::string identity = BuildIdentity();
  REQUIRE_FALSE(identity.empty());
  const std::string file = identity.substr(0, identity.find(' '));
  CHECK(std::to_string(fs::file_size(file)) ==
        identity.substr(file.size() + 1, identity.find(' ', file.size() + 1) - file.size() - 1));
  const std::string folder = UseCacheFolder("build");
  Train("linear");
  REQUIRE(Entries(folder).size() == 1);
  std::ifstream in(Entries(folder)[0], std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(in), {});
  CHECK(bytes.find("\\nbuild " + identity + "\\n") != std::string::npos);
  unsetenv("TENSORCUT_CACHE_DIR");
}

TEST_CASE("no cache when it is off, or for a partition the caller chose") {
  setenv("TENSORCUT_CACHE_DIR", "", 1);
  CHECK_FALSE(StepCache::ForThisProcess().has_value());
  Train("mlp");
  CHECK_FALSE(Train("mlp").summary.cached);
  const std::string folder = UseCacheFolder("custom");
  Train("mlp", {.partition_fn = partition::MinCutPartition});
  CHECK(Entries(folder).empty());
  // A folder that cannot be made: compiling goes on without the cache.
  const std::string file = folder + "_file";
  std::ofstream(file) << "not a folder";
  setenv("TENSORCUT_CACHE_DIR", file.c_str(), 1);
  CHECK_FALSE(Train("mlp").summary.cached);
  unsetenv("TENSORCUT_CACHE_DIR");
}

}  // namespace
}  // namespace tc
