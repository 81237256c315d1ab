#include "runtime/threads.h"

#include <omp.h>

#include <algorithm>

namespace tc {

void SetNumThreads(int threads) { omp_set_num_threads(threads); }
int NumThreads() { return omp_get_max_threads(); }

namespace {

// The elements [begin, end) of the tensors laid end to end, tensor by tensor.
void VisitRange(absl::Span<const int64_t> sizes, int64_t begin, int64_t end,
                absl::FunctionRef<void(size_t, int64_t, int64_t)> visit) {
  int64_t offset = 0;  // of tensor i in the whole
  for (size_t i = 0; i < sizes.size() && offset < end; offset += sizes[i++]) {
    const int64_t lo = std::max(begin, offset), hi = std::min(end, offset + sizes[i]);
    if (lo < hi) visit(i, lo - offset, hi - offset);
  }
}

}  // namespace

void ParallelOverTensors(absl::Span<const int64_t> sizes,
                         absl::FunctionRef<void(size_t, int64_t, int64_t)> visit) {
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  const int threads = total < kParallelElements ? 1 : NumThreads();
  if (threads == 1) {
    VisitRange(sizes, 0, total, visit);
    return;
  }
  constexpr int64_t kAlign = 16;
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    const int64_t begin = total * t / count / kAlign * kAlign;
    const int64_t end = t + 1 == count ? total : total * (t + 1) / count / kAlign * kAlign;
    VisitRange(sizes, begin, end, visit);
  }
}

SingleThreaded::SingleThreaded() : saved_(omp_get_max_threads()) {
  if (saved_ > 1) omp_set_num_threads(1);
}
SingleThreaded::~SingleThreaded() {
  if (saved_ > 1) omp_set_num_threads(saved_);
}

}  // namespace tc
