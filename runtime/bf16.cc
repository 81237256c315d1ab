#include "runtime/bf16.h"

#include "oneapi/dnnl/dnnl.hpp"

namespace tc {

bool CpuHasBf16() {
  // oneDNN's ISA order puts every level with bf16 instructions (avx512_core_bf16,
  // then the AMX levels) at or above avx512_core_bf16.
  static const bool has = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_bf16;
  return has;
}

}  // namespace tc
