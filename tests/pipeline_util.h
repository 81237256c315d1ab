// Helpers shared by the tests of the compile stages: running a graph on the
// interpreter, compiling a model stage by stage, and comparing two models'
// parameters, gradients and buffers.
#ifndef TENSORCUT_TESTS_PIPELINE_UTIL_H_
#define TENSORCUT_TESTS_PIPELINE_UTIL_H_

#include <vector>

#include "graph/ir.h"
#include "nn/module.h"
#include "partition/partition.h"
#include "pipeline/compiler_pipeline.h"

namespace tc::testing {

// Runs `graph` on the interpreter; REQUIREs that it compiles and runs.
std::vector<Tensor> RunGraph(const Graph& graph, const std::vector<Tensor>& args);

// The seed's path on a captured pipeline: default decompositions, the given
// partition function, `compiler` for both graphs. `partition_out`, when given,
// receives the partition.
Function CompileStages(CompilerPipeline& pipeline,
                       const partition::PartitionFn& partition_fn = partition::DefaultPartition,
                       partition::PartitionResult* partition_out = nullptr,
                       const codegen::Compiler& compiler = codegen::interpreter());

// Every compiler, by name, for tests that check each gives the same results.
struct NamedCompiler {
  const char* name;
  codegen::Compiler compiler;
};
std::vector<NamedCompiler> AllCompilers();

// REQUIREs equal parameter names, values (and with `grads`, gradients) and
// buffers, within `tol`.
void RequireSameState(const nn::Module& a, const nn::Module& b, double tol, bool grads);

}  // namespace tc::testing

#endif  // TENSORCUT_TESTS_PIPELINE_UTIL_H_
