#include "pipeline/step_cache.h"

#include <zlib.h>

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/cache_folder.h"
#include "pipeline/plan.h"

namespace tc {
namespace {

constexpr char kKeyKey[] = "tensorcut.cache.key";
// The summary's numbers, in StepSummary's order.
constexpr const char* kSummaryKeys[] = {
    "tensorcut.cache.joint_nodes", "tensorcut.cache.forward_nodes",
    "tensorcut.cache.backward_nodes", "tensorcut.cache.saved_values",
    "tensorcut.cache.saved_bytes"};

}  // namespace

std::optional<StepCache> StepCache::ForThisProcess() {
  const std::string folder = CacheFolder();
  if (folder.empty()) return std::nullopt;
  return StepCache(absl::StrCat(folder, "/steps"));
}

std::string StepCache::PathOf(const std::string& key) const {
  const uLong crc =
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(key.data()), key.size());
  return absl::StrCat(folder_, "/", absl::Hex(crc, absl::kZeroPad8), "-", key.size(), ".tcstep");
}

std::optional<CachedStep> StepCache::Find(const std::string& key) const {
  const std::string path = PathOf(key);
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return std::nullopt;
  nn::Metadata metadata;
  absl::StatusOr<StepProgram> program = LoadStepProgram(path, &metadata);
  if (!program.ok()) return std::nullopt;
  auto found = metadata.find(kKeyKey);
  if (found == metadata.end() || found->second != key) return std::nullopt;
  int64_t numbers[5];
  for (int i = 0; i < 5; ++i) {
    auto it = metadata.find(kSummaryKeys[i]);
    if (it == metadata.end() || !absl::SimpleAtoi(it->second, &numbers[i]) || numbers[i] < 0 ||
        (i < 4 && numbers[i] > (int64_t{1} << 30))) {
      return std::nullopt;
    }
  }
  const StepSummary summary{static_cast<int>(numbers[0]),
                            static_cast<int>(numbers[1]),
                            static_cast<int>(numbers[2]),
                            static_cast<int>(numbers[3]),
                            numbers[4],
                            /*cached=*/true};
  return CachedStep{*std::move(program), summary};
}

bool StepCache::Store(const std::string& key, const StepProgram& program,
                      const StepSummary& summary) const {
  std::error_code error;
  std::filesystem::create_directories(folder_, error);
  if (error) return false;
  const int64_t numbers[5] = {summary.joint_nodes, summary.forward_nodes, summary.backward_nodes,
                              summary.saved_values, summary.saved_bytes};
  nn::Metadata annotations = {{kKeyKey, key}};
  for (int i = 0; i < 5; ++i) annotations[kSummaryKeys[i]] = absl::StrCat(numbers[i]);
  return SaveStepProgram(program, PathOf(key), annotations).ok();
}

}  // namespace tc
