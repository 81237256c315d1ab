// Memory planning: where each buffer a program computes lives, decided once at
// compile time from the buffers' lifetimes.
//
//   // 64 bytes each; step 0 writes a; 1 reads a, writes b; 2 reads b, writes c
//   Buffers buffers = AssignBuffers(steps, roots, bytes, planned, outputs);
//   MemoryPlan plan = PlanMemory(buffers.lifetimes);
//   // a and b are live together at step 1: a at 0, b at 64; c, the graph's
//   // output, in a storage of its own. plan.arena_bytes == 128
//
// A program's values live in buffers: a value computed into memory owns one,
// a view lives in its base's (`roots`). A buffer is live from the first step
// that writes it to the last step that reads it or any view of it.
//
// In place: a step may write a result over an operand whose buffer dies at
// that step (StepAccess::in_place: a fused elementwise pass reads each block
// of the operand before it writes that block of the result). The result then
// lives in the operand's buffer, which lives on as long as the result does.
//
// Buffers a graph output lives in are handed to the caller, so they are kept
// outside the arena: each in a storage of its own, except the values saved
// for a backward (outputs from `saved_from` on), which share one storage, the
// saved region, back to back. The other buffers share one arena: sizes
// rounded up to kAlignment, largest first, each at the lowest offset that no
// buffer live at the same time takes (first fit by decreasing size: a buffer
// that overlaps nothing in time lands at offset 0).
#ifndef TENSORCUT_CODEGEN_MEMORY_PLAN_H_
#define TENSORCUT_CODEGEN_MEMORY_PLAN_H_

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace tc::codegen {

// What one step of a program reads and writes, as value numbers, and the
// {operand, result} pairs it may write in place.
struct StepAccess {
  absl::Span<const int> reads;
  absl::Span<const int> writes;
  absl::Span<const std::pair<int, int>> in_place = {};
};

// Where a buffer lives.
enum class BufferPlace {
  kArena,    // shared with buffers live at other times
  kOutside,  // a storage of its own: a graph output's, or the base of one
  kSaved,    // the saved region: only outputs from `saved_from` on live in it
};

// A buffer's size and the steps it is live over, inclusive.
struct BufferLifetime {
  int value = -1;  // the value owning the buffer
  int64_t bytes = 0;
  int first = -1;
  int last = -1;
  BufferPlace place = BufferPlace::kArena;
};

// Per value, the value whose buffer it lives in (itself, the base of a view,
// or the operand it was written over), and the buffers some step writes.
struct Buffers {
  std::vector<int> roots;
  std::vector<BufferLifetime> lifetimes;
};

// The buffers of `planned` values (values that own the memory a step
// computes into, ascending). `roots[v]` is the value whose buffer v lives in
// as a view (v itself otherwise), `bytes[v]` v's size, `outputs` the graph's
// outputs. A write in place is taken when both values are planned, neither
// buffer holds an output, their sizes are equal, the operand's buffer has
// no reader after the step, the step reads it through that operand only
// (not twice, not through a view too), and no other result of the step
// took it.
Buffers AssignBuffers(absl::Span<const StepAccess> steps, absl::Span<const int> roots,
                      absl::Span<const int64_t> bytes, absl::Span<const int> planned,
                      absl::Span<const int> outputs,
                      int saved_from = std::numeric_limits<int>::max());

struct MemoryPlan {
  static constexpr int64_t kAlignment = 64;

  // Per lifetime given to PlanMemory: its offset in the arena or in the
  // saved region, or -1 for a buffer outside both.
  std::vector<int64_t> offsets;
  int64_t arena_bytes = 0;     // the arena's size: the peak of the buffers in it
  int64_t unshared_bytes = 0;  // what the arena's buffers would take side by side
  int64_t saved_bytes = 0;     // the saved region's size
  int64_t outside_bytes = 0;   // the other buffers outside the arena, aligned

  // "arena 320 bytes (448 unshared), saved 128 bytes, outside 64 bytes",
  // then one line per buffer: "#7 [2, 5] 256 bytes at 0", "... saved at
  // 64" or "... outside".
  std::string ToString(absl::Span<const BufferLifetime> lifetimes) const;
};

int64_t AlignedBytes(int64_t bytes);

MemoryPlan PlanMemory(absl::Span<const BufferLifetime> lifetimes);

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_MEMORY_PLAN_H_
