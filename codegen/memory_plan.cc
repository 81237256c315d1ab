#include "codegen/memory_plan.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace tc::codegen {

int64_t AlignedBytes(int64_t bytes) {
  constexpr int64_t a = MemoryPlan::kAlignment;
  return (bytes + a - 1) / a * a;
}

Buffers AssignBuffers(absl::Span<const StepAccess> steps, absl::Span<const int> roots,
                      absl::Span<const int64_t> bytes, absl::Span<const int> planned,
                      absl::Span<const int> outputs, int saved_from) {
  const int num_values = roots.size();
  // Each buffer's first writer and last reader, through views.
  std::vector<int> first(num_values, -1), last(num_values, -1);
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    for (int v : steps[i].writes) {
      const int r = roots[v];
      if (first[r] < 0) first[r] = i;
      last[r] = std::max(last[r], i);
    }
    for (int v : steps[i].reads) last[roots[v]] = std::max(last[roots[v]], i);
  }
  // Buffers the caller gets: saved, when every output in them is saved.
  std::vector<BufferPlace> place(num_values, BufferPlace::kArena);
  for (int o = static_cast<int>(outputs.size()) - 1; o >= 0; --o) {
    BufferPlace& p = place[roots[outputs[o]]];
    if (o < saved_from) {
      p = BufferPlace::kOutside;
    } else if (p == BufferPlace::kArena) {
      p = BufferPlace::kSaved;
    }
  }
  std::vector<bool> is_planned(num_values, false);
  for (int v : planned) is_planned[v] = true;

  // Writes in place, in step order: `buffer[v]` is the planned value whose
  // buffer v's own buffer merged into (v for one that did not).
  std::vector<int> buffer(num_values);
  for (int v = 0; v < num_values; ++v) buffer[v] = v;
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    absl::flat_hash_set<int> taken;
    for (const auto& [operand, written] : steps[i].in_place) {
      const int from = buffer[roots[operand]];
      // The operand must be the step's one read of its buffer: a second
      // read (a view of it, or the same value twice) would be read in
      // another order than the result is written.
      const int reads_of_buffer = std::count_if(steps[i].reads.begin(), steps[i].reads.end(),
                                                [&](int r) { return buffer[roots[r]] == from; });
      const bool fits = is_planned[from] && is_planned[written] && roots[written] == written &&
                        place[from] == BufferPlace::kArena &&
                        place[written] == BufferPlace::kArena && first[written] == i &&
                        last[from] == i && bytes[from] == bytes[written] && reads_of_buffer == 1 &&
                        !taken.contains(from);
      if (!fits) continue;
      taken.insert(from);
      buffer[written] = from;
      last[from] = last[written];
      first[written] = -1;  // no buffer of its own
    }
  }
  Buffers result;
  for (int v = 0; v < num_values; ++v) result.roots.push_back(buffer[roots[v]]);
  for (int v : planned) {
    if (first[v] >= 0) result.lifetimes.push_back({v, bytes[v], first[v], last[v], place[v]});
  }
  return result;
}

MemoryPlan PlanMemory(absl::Span<const BufferLifetime> lifetimes) {
  MemoryPlan plan;
  plan.offsets.assign(lifetimes.size(), -1);
  std::vector<int> by_size;
  for (int i = 0; i < static_cast<int>(lifetimes.size()); ++i) {
    const int64_t bytes = AlignedBytes(lifetimes[i].bytes);
    switch (lifetimes[i].place) {
      case BufferPlace::kOutside:
        plan.outside_bytes += bytes;
        break;
      case BufferPlace::kSaved:  // every saved value lives to the end: back to back
        plan.offsets[i] = plan.saved_bytes;
        plan.saved_bytes += bytes;
        break;
      case BufferPlace::kArena:
        plan.unshared_bytes += bytes;
        by_size.push_back(i);
        break;
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
  std::string s =
      absl::StrCat("arena ", arena_bytes, " bytes (", unshared_bytes, " unshared), saved ",
                   saved_bytes, " bytes, outside ", outside_bytes, " bytes\n");
  for (size_t i = 0; i < lifetimes.size(); ++i) {
    const BufferLifetime& b = lifetimes[i];
    absl::StrAppend(&s, "#", b.value, " [", b.first, ", ", b.last, "] ", AlignedBytes(b.bytes),
                    " bytes ",
                    b.place == BufferPlace::kOutside ? "outside"
                    : b.place == BufferPlace::kSaved ? absl::StrCat("saved at ", offsets[i])
                                                     : absl::StrCat("at ", offsets[i]),
                    "\n");
  }
  return s;
}

}  // namespace tc::codegen
