// The thin layer between tensors and oneDNN: one CPU engine and stream for the
// process, memory descriptors that keep a tensor's strides (so a transposed
// view feeds a matmul without a copy), and a check for "can oneDNN take this".
#ifndef TENSORCUT_RUNTIME_KERNELS_ONEDNN_H_
#define TENSORCUT_RUNTIME_KERNELS_ONEDNN_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/tensor.h"

namespace tc::kernels {

dnnl::engine& Engine();
dnnl::stream& Stream();

// oneDNN handles f32 (and bf16 in mixed-precision products); f64 runs on
// reference loops.
inline bool OneDnnSupports(DType dtype) { return dtype == DType::kF32; }
// Whether oneDNN has bf16 kernels here: AVX-512 and up, emulating bf16
// where the CPU has no bf16 instructions (tc::CpuHasBf16).
bool OneDnnRunsBf16();
// The error of `op` on bf16 operands (`in[0]` bf16) where oneDNN has no
// bf16 kernels, or of bf16 operands with no elements (which no kernel
// takes); else OK.
absl::Status CheckBf16Runs(absl::Span<const Tensor> in, absl::string_view op);

// A plain (strided) memory descriptor of `t`, or of `t` seen with `shape`/`strides`.
dnnl::memory::desc PlainDesc(const Tensor& t);
dnnl::memory::desc PlainDesc(DType dtype, absl::Span<const int64_t> shape,
                             absl::Span<const int64_t> strides);
// A memory object over the tensor's own data (no copy).
dnnl::memory Memory(const dnnl::memory::desc& desc, const Tensor& t);

// The ISA oneDNN dispatches to on this machine, e.g. "avx512_core_bf16".
std::string OneDnnIsa();

}  // namespace tc::kernels

#endif  // TENSORCUT_RUNTIME_KERNELS_ONEDNN_H_
