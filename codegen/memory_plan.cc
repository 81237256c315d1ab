#include "codegen/memory_plan.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tc::codegen {

int64_t AlignedBytes(int64_t bytes) {
  constexpr int64_t a = MemoryPlan::kAlignment;
  return (bytes + a - 1) / a * a;
}

std::vector<BufferLifetime> Lifetimes(absl::Span<const StepAccess> steps,
                                      absl::Span<const int> roots, absl::Span<const int64_t> bytes,
                                      absl::Span<const int> planned,
                                      absl::Span<const int> outputs) {
  const int num_values = roots.size();
  std::vector<int> first(num_values, -1), last(num_values, -1);
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    for (int v : steps[i].writes) {
      const int r = roots[v];
      if (first[r] < 0) first[r] = i;
      last[r] = std::max(last[r], i);
    }
    for (int v : steps[i].reads) last[roots[v]] = std::max(last[roots[v]], i);
  }
  std::vector<bool> returned(num_values, false);
  for (int v : outputs) returned[roots[v]] = true;
  std::vector<BufferLifetime> lifetimes;
  for (int v : planned) {
    if (first[v] >= 0) lifetimes.push_back({v, bytes[v], first[v], last[v], returned[v]});
  }
  return lifetimes;
}

MemoryPlan PlanMemory(absl::Span<const BufferLifetime> lifetimes) {
  MemoryPlan plan;
  plan.offsets.assign(lifetimes.size(), -1);
  std::vector<int> by_size;
  for (int i = 0; i < static_cast<int>(lifetimes.size()); ++i) {
    const int64_t bytes = AlignedBytes(lifetimes[i].bytes);
    if (lifetimes[i].outside_arena) {
      plan.outside_bytes += bytes;
    } else {
      plan.unshared_bytes += bytes;
      by_size.push_back(i);
    }
  }
  std::stable_sort(by_size.begin(), by_size.end(), [&](int a, int b) {
    return AlignedBytes(lifetimes[a].bytes) > AlignedBytes(lifetimes[b].bytes);
  });
  std::vector<int> placed;
  for (int i : by_size) {
    const BufferLifetime& b = lifetimes[i];
    const int64_t bytes = AlignedBytes(b.bytes);
    // The ranges taken by placed buffers live at the same time as b.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (int p : placed) {
      if (lifetimes[p].last < b.first || b.last < lifetimes[p].first) continue;
      taken.emplace_back(plan.offsets[p], plan.offsets[p] + AlignedBytes(lifetimes[p].bytes));
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [start, end] : taken) {
      if (offset + bytes <= start) break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + bytes);
    placed.push_back(i);
  }
  return plan;
}

std::string MemoryPlan::ToString(absl::Span<const BufferLifetime> lifetimes) const {
  std::string s = absl::StrCat("arena ", arena_bytes, " bytes (", unshared_bytes,
                               " unshared), outside ", outside_bytes, " bytes\n");
  for (size_t i = 0; i < lifetimes.size(); ++i) {
    const BufferLifetime& b = lifetimes[i];
    absl::StrAppend(&s, "#", b.value, " [", b.first, ", ", b.last, "] ", AlignedBytes(b.bytes),
                    " bytes ", b.outside_arena ? "outside" : absl::StrCat("at ", offsets[i]), "\n");
  }
  return s;
}

}  // namespace tc::codegen
