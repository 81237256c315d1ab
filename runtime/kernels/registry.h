// Binds eager kernels to ops, one registration function per family file in
// this folder. A test checks that every op in graph/ops.def has a kernel.
#ifndef TENSORCUT_RUNTIME_KERNELS_REGISTRY_H_
#define TENSORCUT_RUNTIME_KERNELS_REGISTRY_H_

#include <array>

#include "runtime/dispatch.h"

namespace tc::kernels {

using KernelTable = std::array<KernelFn, kNumOps>;

void RegisterElementwiseKernels(KernelTable& table);
void RegisterCreationKernels(KernelTable& table);
void RegisterReductionKernels(KernelTable& table);
void RegisterLayoutKernels(KernelTable& table);
void RegisterMatmulKernels(KernelTable& table);  // called by RegisterLayoutKernels
void RegisterConvPoolKernels(KernelTable& table);
void RegisterNormKernels(KernelTable& table);
void RegisterEmbeddingDropoutKernels(KernelTable& table);  // called by RegisterNormKernels

}  // namespace tc::kernels

#endif  // TENSORCUT_RUNTIME_KERNELS_REGISTRY_H_
