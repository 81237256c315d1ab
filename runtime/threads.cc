#include "runtime/threads.h"

#include <omp.h>

namespace tc {

void SetNumThreads(int threads) { omp_set_num_threads(threads); }
int NumThreads() { return omp_get_max_threads(); }

SingleThreaded::SingleThreaded() : saved_(omp_get_max_threads()) {
  if (saved_ > 1) omp_set_num_threads(1);
}
SingleThreaded::~SingleThreaded() {
  if (saved_ > 1) omp_set_num_threads(saved_);
}

}  // namespace tc
