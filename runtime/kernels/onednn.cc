#include "runtime/kernels/onednn.h"

#include "absl/strings/str_cat.h"

namespace tc::kernels {

dnnl::engine& Engine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::stream& Stream() {
  static dnnl::stream* stream = new dnnl::stream(Engine());
  return *stream;
}

namespace {

dnnl::memory::data_type DataType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return dnnl::memory::data_type::f32;
    case DType::kBF16:
      return dnnl::memory::data_type::bf16;
    default:
      return dnnl::memory::data_type::undef;
  }
}

}  // namespace

dnnl::memory::desc PlainDesc(DType dtype, absl::Span<const int64_t> shape,
                             absl::Span<const int64_t> strides) {
  dnnl::memory::dims dims(shape.begin(), shape.end());
  dnnl::memory::dims st(strides.begin(), strides.end());
  if (dims.empty()) {  // oneDNN has no 0-d memory: a scalar is [1]
    dims = {1};
    st = {1};
  }
  return dnnl::memory::desc(dims, DataType(dtype), st);
}

dnnl::memory::desc PlainDesc(const Tensor& t) {
  return PlainDesc(t.dtype(), t.shape(), t.strides());
}

dnnl::memory Memory(const dnnl::memory::desc& desc, const Tensor& t) {
  return dnnl::memory(desc, Engine(), t.raw_data());
}

bool OneDnnRunsBf16() { return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core; }

absl::Status CheckBf16Runs(absl::Span<const Tensor> in, absl::string_view op) {
  if (in[0].dtype() != DType::kBF16) return absl::OkStatus();
  if (!OneDnnRunsBf16()) {
    return absl::FailedPreconditionError(
        absl::StrCat(op, ": bf16 operands need a CPU with AVX-512 (oneDNN has no bf16 kernels for ",
                     OneDnnIsa(), "); this one runs f32 only"));
  }
  for (const Tensor& t : in) {
    if (t.numel() == 0) {
      return absl::UnimplementedError(
          absl::StrCat(op, ": bf16 operands with no elements, ", t.type().ToString()));
    }
  }
  return absl::OkStatus();
}

std::string OneDnnIsa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return absl::StrCat("isa#", static_cast<int>(dnnl::get_effective_cpu_isa()));
  }
}

}  // namespace tc::kernels
