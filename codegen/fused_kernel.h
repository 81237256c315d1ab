// Runs a fusion group (codegen/fusion.h) in one pass over memory: the group
// becomes a small register program, evaluated on blocks of kBlockSize
// elements, so values inside the group live only in block-sized registers.
//
//   FusedKernel kernel = FusedKernel::Compile(group);
//   std::cout << kernel.ToString();
//   //   fused[4,3](r0, r1, r2) {
//   //     r3: f32 = mul(r0, r1)
//   //     r4: f32 = add(r3, r2)
//   //     r5: f32 = relu(r4)
//   //     return (r4, r5)
//   //   }
//   kernel.RunInto({x, w, b}, {h, y});  // h, y: row-major outputs
//
// Registers r0..r{k-1} hold the group's inputs, read through their strides
// (broadcast to the group's shape; an input dense in the iteration order is
// read in place). The registers of output values point into the outputs;
// the other registers are block buffers, reused once their value is dead.
// Each op evaluates its eager kernel's formula (runtime/kernels/
// elementwise_math.h), so results are bitwise equal to the interpreter's.
#ifndef TENSORCUT_CODEGEN_FUSED_KERNEL_H_
#define TENSORCUT_CODEGEN_FUSED_KERNEL_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "codegen/fused_ops.h"
#include "codegen/fusion.h"
#include "runtime/tensor.h"

namespace tc::codegen {

class FusedKernel {
 public:
  static constexpr int64_t kBlockSize = 256;

  static FusedKernel Compile(const FusionGroup& group);

  // One tensor per group input (its type, any strides) in; `outputs`:
  // tensors of the group's output types, dense in `order` (graph/shape.h's
  // DimOrder; row-major when empty), every element written in that memory
  // order. Groups of kParallelElements or more split their blocks over the
  // intra-op threads (runtime/threads.h). Allocates nothing once each
  // thread's block buffers have grown to the program's size (up to 8 inputs
  // and 32 registers).
  void RunInto(absl::Span<const Tensor> inputs, absl::Span<const Tensor> outputs,
               absl::Span<const int> order = {}) const;

  // The program, one instruction per line, then "return (r5, r7)".
  std::string ToString() const;

 private:
  Shape shape_;
  int num_inputs_ = 0;
  int num_registers_ = 0;
  std::vector<FusedInstr> program_;
  std::vector<int> output_registers_;
  std::vector<DType> output_dtypes_;
};

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FUSED_KERNEL_H_
