// Eager kernels of the reduction family.
#include "runtime/kernels/registry.h"

namespace tc::kernels {

void RegisterReductionKernels(KernelTable&) {}

}  // namespace tc::kernels
