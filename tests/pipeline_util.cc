#include "tests/pipeline_util.h"

#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "codegen/interpreter.h"
#include "graph/decompositions.h"
#include "tests/test_util.h"

namespace tc::testing {

std::vector<Tensor> RunGraph(const Graph& graph, const std::vector<Tensor>& args) {
  absl::StatusOr<codegen::Executable> exe = codegen::Interpret(graph);
  INFO(exe.status().ToString());
  REQUIRE(exe.ok());
  absl::StatusOr<std::vector<Tensor>> out = (*exe)(args);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  return *std::move(out);
}

Function CompileStages(CompilerPipeline& pipeline, const partition::PartitionFn& partition_fn,
                       partition::PartitionResult* partition_out,
                       const codegen::Compiler& compiler) {
  REQUIRE(pipeline.generate_ir_for_training({.decompositions = &DefaultDecompositions()}).ok());
  absl::StatusOr<partition::PartitionResult> part =
      pipeline.partition(partition_fn, *pipeline.joint_graph().value());
  INFO(part.status().message());
  REQUIRE(part.ok());
  CompiledForward fw = pipeline.fw_compile(compiler, *part).value();
  CompiledBackward bw = pipeline.bw_compile(compiler, *part, fw).value();
  Function fn = pipeline.make_autograd_function(fw, bw, *part).value();
  if (partition_out != nullptr) *partition_out = *std::move(part);
  return fn;
}

std::vector<NamedCompiler> AllCompilers() {
  return {{"interpreter", codegen::interpreter()}, {"fusing", codegen::fusing()}};
}

void RequireSameState(const nn::Module& a, const nn::Module& b, double tol, bool grads) {
  const nn::NamedTensors pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].first);
    REQUIRE(pa[i].first == pb[i].first);
    REQUIRE_TENSORS_CLOSE(pa[i].second, pb[i].second, tol, tol);
    if (grads) REQUIRE_TENSORS_CLOSE(pa[i].second.grad(), pb[i].second.grad(), tol, tol);
  }
  const nn::NamedTensors ba = a.named_buffers(), bb = b.named_buffers();
  REQUIRE(ba.size() == bb.size());
  for (size_t i = 0; i < ba.size(); ++i) {
    INFO(ba[i].first);
    REQUIRE_TENSORS_CLOSE(ba[i].second, bb[i].second, tol, tol);
  }
}

}  // namespace tc::testing
