// Binds eager kernels to ops, one registration function per family file in
// this folder. A test checks that every op in graph/ops.def has a kernel.
#ifndef TENSORCUT_RUNTIME_KERNELS_REGISTRY_H_
#define TENSORCUT_RUNTIME_KERNELS_REGISTRY_H_

#include <array>

#include "base/status_macros.h"
#include "runtime/dispatch.h"

namespace tc::kernels {

// The eager kernels and, for ops that write fresh outputs, their out-variants.
struct KernelTable {
  std::array<KernelFn, kNumOps> eager{};
  std::array<IntoKernelFn, kNumOps> into{};
  std::array<PostOpKernelFn, kNumOps> post_op{};
};

// The eager kernel of an out-variant: allocates the outputs, then runs `Into`.
template <IntoKernelFn Into>
absl::StatusOr<TensorList> AllocateAndRun(absl::Span<const Tensor> inputs, const Attrs& attrs,
                                          absl::Span<const TensorType> out_types) {
  TensorList outputs;
  outputs.reserve(out_types.size());
  for (const TensorType& t : out_types) outputs.push_back(Tensor::Uninitialized(t.shape, t.dtype));
  TC_RETURN_IF_ERROR(Into(inputs, attrs, outputs));
  return outputs;
}

// Binds `op` to an out-variant and to the eager kernel made from it.
template <IntoKernelFn Into>
void BindInto(KernelTable& table, OpKind op) {
  table.into[static_cast<int>(op)] = Into;
  table.eager[static_cast<int>(op)] = &AllocateAndRun<Into>;
}

// Binds `op`'s out-variant with post-ops; the chains it takes are the op
// table's (OpDef::epilogue).
template <PostOpKernelFn Kernel>
void BindPostOps(KernelTable& table, OpKind op) {
  table.post_op[static_cast<int>(op)] = Kernel;
}

void RegisterElementwiseKernels(KernelTable& table);
void RegisterCreationKernels(KernelTable& table);
void RegisterReductionKernels(KernelTable& table);
void RegisterLayoutKernels(KernelTable& table);
void RegisterMatmulKernels(KernelTable& table);  // called by RegisterLayoutKernels
void RegisterConvPoolKernels(KernelTable& table);
void RegisterNormKernels(KernelTable& table);
void RegisterAttentionKernels(KernelTable& table);
void RegisterEmbeddingDropoutKernels(KernelTable& table);  // called by RegisterNormKernels
void RegisterCollectiveKernels(KernelTable& table);

}  // namespace tc::kernels

#endif  // TENSORCUT_RUNTIME_KERNELS_REGISTRY_H_
