// Intra-op threads: how many threads oneDNN primitives, fused elementwise
// groups and batch norm use (all on OpenMP). The default is OpenMP's:
// OMP_NUM_THREADS, else every core. Work on small tensors runs on one thread
// whatever the setting, since opening a parallel region costs more than the
// work (4-14 us for two threads here).
//
//   tc::SetNumThreads(1);                       // e.g. to benchmark one core
//   { tc::SingleThreaded one; ...small op... }  // what tiny oneDNN calls do
#ifndef TENSORCUT_RUNTIME_THREADS_H_
#define TENSORCUT_RUNTIME_THREADS_H_

#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"

namespace tc {

// Bytes a oneDNN call touches below which it runs on one thread.
inline constexpr int64_t kTinyOpBytes = 64 * 1024;
// Elements below which tensorcut's own loops stay on the calling thread.
inline constexpr int64_t kParallelElements = 64 * 1024;
// Bytes a pass that only converts or moves memory (a bf16 cast) touches
// below which it runs on one thread: on two cores of a Xeon with AMX, a
// second thread made a 384 KB cast 2x slower and a 1.5 MB one no faster.
inline constexpr int64_t kParallelCopyBytes = 2 * 1024 * 1024;

// `threads` >= 1; the setting of the calling thread and those it starts.
void SetNumThreads(int threads);
int NumThreads();

// One elementwise pass over many tensors of `sizes` elements (a
// multi-tensor pass, as an optimizer's update of every parameter): the
// elements of all of them, laid end to end, are split evenly between the
// threads, so a model's few large weights and many small biases share them
// alike. `visit(tensor, begin, end)` covers [begin, end) of one tensor; the
// ranges cover every element once. Below kParallelElements in all, one
// thread. Ranges start on multiples of 16 elements of the whole, so that
// threads rarely write the same cache line.
void ParallelOverTensors(absl::Span<const int64_t> sizes,
                         absl::FunctionRef<void(size_t tensor, int64_t begin, int64_t end)> visit);

// Runs the scope on one thread, then restores the setting.
class SingleThreaded {
 public:
  SingleThreaded();
  ~SingleThreaded();
  SingleThreaded(const SingleThreaded&) = delete;
  SingleThreaded& operator=(const SingleThreaded&) = delete;

 private:
  int saved_;
};

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_THREADS_H_
