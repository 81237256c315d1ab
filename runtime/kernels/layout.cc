// Eager kernels of the layout family.
#include "runtime/kernels/registry.h"

namespace tc::kernels {

void RegisterLayoutKernels(KernelTable&) {}

}  // namespace tc::kernels
