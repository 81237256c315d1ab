// Memory planning: where each buffer a program computes lives, decided once at
// compile time from the buffers' lifetimes.
//
//   // 64 bytes each; step 0 writes a; 1 reads a, writes b; 2 reads b, writes c
//   std::vector<BufferLifetime> lives = Lifetimes(steps, roots, bytes, planned, outputs);
//   MemoryPlan plan = PlanMemory(lives);
//   // a and b are live together at step 1: a at 0, b at 64; c, the graph's
//   // output, in a storage of its own. plan.arena_bytes == 128
//
// A program's values live in buffers: a value computed into memory owns one,
// a view lives in its base's (`roots`). A buffer is live from the first step
// that writes it to the last step that reads it or any view of it. Buffers a
// graph output lives in are handed to the caller, so they are kept outside
// the arena, each in a storage of its own. The others share one arena: sizes
// rounded up to kAlignment, largest first, each at the lowest offset that no
// buffer live at the same time takes (first fit by decreasing size: a buffer
// that overlaps nothing in time lands at offset 0).
//
// Not done here (yet): results written in place over an operand that dies at
// their step, and one contiguous region for the values saved for the backward.
#ifndef TENSORCUT_CODEGEN_MEMORY_PLAN_H_
#define TENSORCUT_CODEGEN_MEMORY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace tc::codegen {

// What one step of a program reads and writes, as value numbers.
struct StepAccess {
  absl::Span<const int> reads;
  absl::Span<const int> writes;
};

// A buffer's size and the steps it is live over, inclusive.
struct BufferLifetime {
  int value = -1;  // the value owning the buffer
  int64_t bytes = 0;
  int first = -1;
  int last = -1;
  bool outside_arena = false;  // a graph output's, or the buffer of a view of one
};

// The lifetimes of the buffers of `planned` values (values that own the
// memory a step computes into, ascending) that some step writes. `roots[v]`
// is the value whose buffer v lives in (v itself, or the base of a view),
// `bytes[v]` v's size, `outputs` the graph's outputs.
std::vector<BufferLifetime> Lifetimes(absl::Span<const StepAccess> steps,
                                      absl::Span<const int> roots, absl::Span<const int64_t> bytes,
                                      absl::Span<const int> planned, absl::Span<const int> outputs);

struct MemoryPlan {
  static constexpr int64_t kAlignment = 64;

  // Per lifetime given to PlanMemory: its offset in the arena, or -1 for a
  // buffer outside it.
  std::vector<int64_t> offsets;
  int64_t arena_bytes = 0;     // the arena's size: the peak of the buffers in it
  int64_t unshared_bytes = 0;  // what the arena's buffers would take side by side
  int64_t outside_bytes = 0;   // the buffers outside the arena, aligned

  // "arena 320 bytes (448 unshared), outside 64 bytes", then one line per
  // buffer: "#7 [2, 5] 256 bytes at 0" or "... outside".
  std::string ToString(absl::Span<const BufferLifetime> lifetimes) const;
};

int64_t AlignedBytes(int64_t bytes);

MemoryPlan PlanMemory(absl::Span<const BufferLifetime> lifetimes);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_MEMORY_PLAN_H_
