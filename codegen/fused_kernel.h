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
//
// A kernel may also sum values of the group over some dims in the same pass
// (FusedSum: a bias gradient, softmax's backward), so that a value read only
// by a sum never reaches memory. Sums add in a fixed order that does not
// depend on the thread count, but not in the order of the eager sum kernel:
// they match it to rounding.
#ifndef TENSORCUT_CODEGEN_FUSED_KERNEL_H_
#define TENSORCUT_CODEGEN_FUSED_KERNEL_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "codegen/fused_ops.h"
#include "codegen/fusion.h"
#include "runtime/tensor.h"

namespace tc::codegen {

// A sum of one of the group's values (f32 or f64) over `dims` of `shape`:
// the group's shape, or that of a reshape of the value when the kernel runs
// row-major.
struct FusedSum {
  const Value* of;
  Shape shape;
  std::vector<int> dims;  // ascending
};

class FusedKernel {
 public:
  static constexpr int64_t kBlockSize = 256;

  // `sums`: values of the group summed in the pass; each must pass CanSum
  // in the order the kernel runs in.
  static FusedKernel Compile(const FusionGroup& group, absl::Span<const FusedSum> sums = {});

  // Whether a sum over `dims` of a value of `shape`, iterated in `order`
  // (empty: row-major), can run in the pass: the summed dims are the
  // outermost of the iteration order (then at least 16 elements are kept)
  // or its innermost (then their element count divides kBlockSize or is a
  // multiple of it, and not 0), and the kept dims iterate in their row-major
  // order.
  static bool CanSum(const Shape& shape, absl::Span<const int> order, absl::Span<const int> dims);

  // One tensor per group input (its type, any strides) in; `outputs`:
  // tensors of the group's output types, dense in `order` (graph/shape.h's
  // DimOrder; row-major when empty), every element written in that memory
  // order, then one contiguous tensor per sum. Groups of kParallelElements or more split their
  // blocks over the intra-op threads (runtime/threads.h). Allocates nothing once each thread's
  // block buffers have grown to the program's size (up to 8 inputs and 32 registers).
  void RunInto(absl::Span<const Tensor> inputs, absl::Span<const Tensor> outputs,
               absl::Span<const int> order = {}) const;

  // The {input, output} pairs whose tensors may share memory: the program
  // reads the input for the last time at or before the instruction writing
  // the output. Each block of an input read in place (dense in the
  // iteration order, of the group's shape) is then read before that block
  // of the output is written; the caller checks that layout, that the two
  // have one element size, and that no other input reads the same memory.
  std::vector<std::pair<int, int>> InPlacePairs() const;

  // The program, one instruction per line, then "return (r5, r7)" (a sum
  // as "sum(r6, [0])").
  std::string ToString() const;

 private:
  struct Sum {
    int reg;
    DType dtype;
    Shape shape;
    std::vector<int> dims;
  };
  Shape shape_;
  int num_inputs_ = 0;
  int num_registers_ = 0;
  std::vector<FusedInstr> program_;
  std::vector<int> output_registers_;
  std::vector<DType> output_dtypes_;
  std::vector<Sum> sums_;
};

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_FUSED_KERNEL_H_
