// Plans per size: a compiler for graphs over symbolic dims (graph/symbolic.h)
// out of a compiler of static graphs.
//
//   codegen::Compiler compiler = codegen::PerSize(codegen::fusing(), {.capacity = 8});
//   Executable exe = compiler(graph_over_s0).value();  // plans the example size
//   exe({x_of_96_rows, w, b});   // binds s0 = 96, plans that size once, runs it
//   exe({x_of_96_rows, w, b});   // runs the plan it keeps: no allocation, no primitive
//   exe.plan_cache();            // {.plans = 2, .hits = 1, .misses = 1, ...}
//
// The executable binds the symbols from its arguments' shapes at each call
// (each symbol must be a whole dim of some placeholder); on the first call
// of a size it specializes the graph to that size (the specialize-symbols
// pass) and compiles it with the inner compiler, keeping the `capacity` most
// recently used plans. At compile time it plans the symbols' hints (the
// example sizes), which fixes its output layouts for every size. A static
// graph goes to the inner compiler unchanged.
#ifndef TENSORCUT_CODEGEN_PER_SIZE_H_
#define TENSORCUT_CODEGEN_PER_SIZE_H_

#include "codegen/executable.h"

namespace tc::codegen {

struct PerSizeOptions {
  int capacity = 8;  // plans kept; at least 1
};

Compiler PerSize(Compiler inner, PerSizeOptions options = {});

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_PER_SIZE_H_
