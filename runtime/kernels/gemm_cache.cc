#include "runtime/kernels/gemm_cache.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/cache_folder.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/kernels/onednn.h"
#include "runtime/kernels/openblas.h"

namespace tc::kernels {
namespace {

constexpr char kHeader[] = "tensorcut gemm verdicts: ";

// The CPU's model name from /proc/cpuinfo, or "unknown CPU".
std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (!absl::StartsWith(line, "model name")) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "unknown CPU";
}

// What a verdict depends on besides the shape: the CPU and both libraries.
std::string Identity() {
  const dnnl_version_t* v = dnnl::version();
  const OpenBlas* blas = OpenBlas::Get();
  return absl::StrCat(CpuModel(), "; oneDNN ", v->major, ".", v->minor, ".", v->patch, " ",
                      OneDnnIsa(), "; ", blas != nullptr ? blas->config() : "no OpenBLAS");
}

std::optional<GemmImpl> ParseWinner(absl::string_view name) {
  if (name == "onednn") return GemmImpl::kOneDnn;
  if (name == "openblas") return GemmImpl::kOpenBlas;
  return std::nullopt;
}

// One verdict line: nine fields, eight numbers then the winner.
std::optional<std::pair<GemmShape, GemmImpl>> ParseLine(absl::string_view line) {
  const std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (f.size() != 9) return std::nullopt;
  int64_t n[8];
  for (int i = 0; i < 8; ++i) {
    if (!absl::SimpleAtoi(f[i], &n[i]) || n[i] < 0) return std::nullopt;
  }
  if (n[4] > 1 || n[5] > 1 || n[6] > 1 || n[7] < 1 || n[7] > (1 << 16)) return std::nullopt;
  const std::optional<GemmImpl> winner = ParseWinner(f[8]);
  if (!winner) return std::nullopt;
  const GemmShape shape{n[0],      n[1],      n[2],      n[3],
                        n[4] == 1, n[5] == 1, n[6] == 1, static_cast<int>(n[7])};
  return std::make_pair(shape, *winner);
}

}  // namespace

std::optional<GemmCacheFile> GemmCacheFile::ForThisMachine() {
  std::string folder = CacheFolder();
  if (folder.empty()) return std::nullopt;
  return GemmCacheFile(std::move(folder), Identity());
}

GemmCacheFile::GemmCacheFile(std::string folder, std::string identity)
    : folder_(std::move(folder)), identity_line_(absl::StrCat(kHeader, identity)) {
  path_ = absl::StrFormat("%s/gemm-%016x.txt", folder_, std::hash<std::string>{}(identity_line_));
}

absl::flat_hash_map<GemmShape, GemmImpl> GemmCacheFile::Read() const {
  absl::flat_hash_map<GemmShape, GemmImpl> verdicts;
  std::ifstream in(path_);
  std::string line;
  if (!std::getline(in, line) || line != identity_line_) return verdicts;
  while (std::getline(in, line)) {
    if (const auto verdict = ParseLine(line)) verdicts.insert(*verdict);
  }
  return verdicts;
}

bool GemmCacheFile::Append(const GemmShape& s, GemmImpl winner) const {
  std::error_code error;
  std::filesystem::create_directories(folder_, error);
  if (error) return false;
  // "a": every write lands at the end, so processes appending at once
  // interleave whole lines.
  std::FILE* f = std::fopen(path_.c_str(), "a");
  if (f == nullptr) return false;
  const bool fresh = std::fseek(f, 0, SEEK_END) == 0 && std::ftell(f) == 0;
  const std::string line = absl::StrCat(
      fresh ? absl::StrCat(identity_line_, "\n") : "", s.batch, " ", s.m, " ", s.n, " ", s.k, " ",
      s.a_transposed ? 1 : 0, " ", s.b_transposed ? 1 : 0, " ", s.bias ? 1 : 0, " ", s.threads, " ",
      winner == GemmImpl::kOpenBlas ? "openblas" : "onednn", "\n");
  const bool written = std::fputs(line.c_str(), f) >= 0;
  return std::fclose(f) == 0 && written;
}

}  // namespace tc::kernels
