// `tensorcut graph`: a reference model's graph at one stage of the pipeline
// (captured, joint, or the forward or backward half of a partition, the
// backward with its data-parallel all-reduce when asked) as IR text,
// optionally as Graphviz DOT.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "dist/data_parallel.h"
#include "dist/process_group.h"
#include "graph/decompositions.h"
#include "graph/dot.h"
#include "graph/pass.h"
#include "graph/printer.h"
#include "nn/models/models.h"
#include "partition/strategies.h"
#include "pipeline/compiler_pipeline.h"
#include "tools/cli.h"
#include "tools/flags.h"
#include "tools/subcommands.h"
#include "tools/training.h"

namespace tc {
namespace {

// Inputs green (tangents khaki), ops blue, ops computing a graph output
// outlined.
DotStyle StageStyle(int num_primals) {
  DotStyle style;
  style.placeholder = [num_primals](const Value&, int index, DotItem& item) {
    item.attrs = index < num_primals ? "fillcolor=palegreen" : "fillcolor=khaki";
  };
  style.node = [](const Node& node, DotItem& item) {
    item.attrs = "fillcolor=lightblue";
    for (const Value* r : node.results()) {
      if (r->is_output()) {
        absl::StrAppend(&item.label, "\noutput");
        absl::StrAppend(&item.attrs, ", penwidth=3");
        return;
      }
    }
  };
  return style;
}

absl::Status Run() {
  const std::string stage = absl::GetFlag(FLAGS_stage);
  if (stage != "captured" && stage != "joint" && stage != "forward" && stage != "backward") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown --stage \"", stage, "\"; known stages: captured, joint, forward, backward"));
  }
  TC_ASSIGN_OR_RETURN(nn::ModelSpec spec,
                      nn::MakeModel(absl::GetFlag(FLAGS_model), absl::GetFlag(FLAGS_seed)));
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline,
                      CompilerPipeline::Create(*spec.module, spec.inputs));
  if (absl::GetFlag(FLAGS_dynamic_batch)) {
    // Captured again, dim 0 of each input (found by its placeholder) a symbol.
    CaptureOptions dynamic;
    const TracedProgram& captured = pipeline.captured();
    for (size_t i = 0; i < captured.inputs.size(); ++i) {
      const Value* p = captured.graph.placeholders()[i];
      if (captured.inputs[i].kind == InputDescriptor::Kind::kUserInput && p->type().rank() > 0) {
        dynamic.dynamic_dims[p->name()] = {0};
      }
    }
    TC_ASSIGN_OR_RETURN(pipeline, CompilerPipeline::Create(*spec.module, spec.inputs, dynamic));
  }
  const bool decompose = absl::GetFlag(FLAGS_decompose);
  const bool data_parallel = absl::GetFlag(FLAGS_data_parallel);
  if (data_parallel && stage != "backward") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data_parallel shows the backward's all-reduce: it takes --stage backward, not ", stage));
  }

  std::string text;
  Graph graph;
  int num_primals = 0;
  if (stage == "captured") {
    graph = pipeline.captured().graph.Clone();
    if (decompose) {
      TC_RETURN_IF_ERROR(RunPasses(graph, {Decompose(DefaultDecompositions())}).status());
    }
    text = ToString(graph);
    num_primals = static_cast<int>(graph.placeholders().size());
  } else {
    IrOptions options;
    if (decompose) options.decompositions = &DefaultDecompositions();
    TC_RETURN_IF_ERROR(pipeline.generate_ir_for_training(options));
    const JointGraph& joint = **pipeline.joint_graph();
    if (stage == "joint") {
      graph = joint.graph.Clone();
      text = ToString(joint);
      num_primals = joint.layout.num_primals;
    } else {
      TC_ASSIGN_OR_RETURN(const double budget, BudgetFraction());
      TC_ASSIGN_OR_RETURN(const partition::PartitionFn partition_fn,
                          PipelinePartitioner(absl::GetFlag(FLAGS_strategy), budget, pipeline,
                                              absl::GetFlag(FLAGS_milp_seconds)));
      TC_ASSIGN_OR_RETURN(partition::PartitionResult part, pipeline.partition(partition_fn, joint));
      if (data_parallel) {
        TC_ASSIGN_OR_RETURN(dist::ProcessGroup * group, dist::ProcessGroup::World());
        TC_RETURN_IF_ERROR(dist::BackwardAllReduce::Insert(*group, joint, part).status());
      }
      graph = std::move(stage == "forward" ? part.forward : part.backward);
      text = ToString(graph);
      // The backward's inputs: the saved values, then the tangents.
      num_primals = stage == "forward" ? static_cast<int>(graph.placeholders().size())
                                       : static_cast<int>(part.saved.size());
    }
  }
  std::printf("%s", text.c_str());
  const std::string dot = absl::GetFlag(FLAGS_dot);
  if (!dot.empty()) {
    const std::string path = OutputPath(dot);
    TC_RETURN_IF_ERROR(WriteTextFile(path, GraphDot(graph, StageStyle(num_primals), stage)));
    std::fprintf(stderr, "wrote %s\n", path.c_str());
  }
  return absl::OkStatus();
}

}  // namespace

int GraphCommand() { return ExitCode("graph", Run()); }

}  // namespace tc
