// The compile cache: the programs TrainStep compiles (pipeline/step_program.h),
// kept on disk, so that a later process compiling the same model goes from
// its capture straight to lowering, without differentiating or partitioning
// it again. Lowering still runs in every process: it plans for the CPU the
// process runs on.
//
//   CacheFolder()/steps/<CRC-32 of the key>-<key's length>.tcstep
//
// Each entry is a step program file (SaveStepProgram, pipeline/plan.h) with
// its whole key and the compilation's summary in its header. The key is all
// the program depends on: the tensorcut version, the options that shape it
// and the captured graph's text with what each placeholder stands for.
// An entry is used only when its key is the key asked for and it loads and
// verifies; otherwise it is a miss, and the compile that follows replaces it.
// A folder that cannot be written leaves compiling as it was without a cache.
#ifndef TENSORCUT_PIPELINE_STEP_CACHE_H_
#define TENSORCUT_PIPELINE_STEP_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "pipeline/step_program.h"

namespace tc {

// What a step's compilation made, for reports: its joint graph's nodes,
// each half's, and what the forward saves for the backward.
struct StepSummary {
  int joint_nodes = 0, forward_nodes = 0, backward_nodes = 0, saved_values = 0;
  int64_t saved_bytes = 0;  // at the symbols' hints
  bool cached = false;      // the program came from the compile cache
};

struct CachedStep {
  StepProgram program;
  StepSummary summary;
};

class StepCache {
 public:
  // The cache in CacheFolder()/steps, or nullopt when caching is off.
  static std::optional<StepCache> ForThisProcess();
  explicit StepCache(std::string folder) : folder_(std::move(folder)) {}

  // The entry of `key`, or nullopt: none, another key's, or one that does
  // not load or verify.
  std::optional<CachedStep> Find(const std::string& key) const;
  // Keeps `program` under `key`; false when the entry cannot be written.
  bool Store(const std::string& key, const StepProgram& program, const StepSummary& summary) const;

  // The file of `key`'s entry.
  std::string PathOf(const std::string& key) const;

 private:
  std::string folder_;
};

}  // namespace tc

#endif  // TENSORCUT_PIPELINE_STEP_CACHE_H_
