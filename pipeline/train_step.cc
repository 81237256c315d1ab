#include "pipeline/train_step.h"

#include <algorithm>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/cache_folder.h"
#include "base/status_macros.h"
#include "base/version.h"
#include "graph/printer.h"
#include "partition/min_cut.h"
#include "partition/report.h"
#include "pipeline/compiler_pipeline.h"
#include "pipeline/step_cache.h"

namespace tc {
namespace {

// The model and its loss as one module: (inputs, targets) in, the loss out,
// and with `outputs` (loss, the model's outputs detached).
class WithLoss : public nn::Module {
 public:
  WithLoss(nn::Module& model, nn::LossFn loss, bool outputs)
      // Not owned: the caller keeps the model alive (see TrainStep::Create).
      : model_(register_module("model",
                               std::shared_ptr<nn::Module>(std::shared_ptr<nn::Module>(), &model))),
        loss_(std::move(loss)),
        outputs_(outputs) {}

  TensorTree forward(const TensorTree& input) override {
    const TensorTree out = (*model_)(input[0]);
    TensorTree loss = TensorTree::MakeLeaf(loss_(out, input[1]));
    if (!outputs_) return loss;
    return TensorTree::Tuple(
        {std::move(loss), out.Map([](const Tensor& t) { return t.detach(); })});
  }

 private:
  std::shared_ptr<nn::Module> model_;
  nn::LossFn loss_;
  bool outputs_;
};

// A batch leaf's capture path in the words of Create's arguments: the
// capture sees (inputs, targets) as one tuple, "inputs[0]..." and
// "inputs[1]...".
std::string UserWords(absl::string_view path) {
  if (absl::ConsumePrefix(&path, "inputs[0]")) return absl::StrCat("inputs", path);
  if (absl::ConsumePrefix(&path, "inputs[1]")) return absl::StrCat("targets", path);
  return std::string(path);
}

// A parameter's or buffer's name in the user's model: the capture names
// them inside the wrapper ("model.fc.weight").
std::string ModelName(const std::string& name) {
  absl::string_view n = name;
  absl::ConsumePrefix(&n, "model.");
  return std::string(n);
}

// All a step's program depends on besides the model's values: the build
// (its version, compiler and file, so that a rebuilt checkout compiles again),
// the options that shape it and the captured graph with what each
// placeholder stands for (pipeline/step_cache.h).
std::string StepKey(const TracedProgram& captured, const std::vector<std::string>& mutated,
                    const DynamicDims& dynamic, const TrainStepOptions& options) {
  std::string key = absl::StrCat(
      "tensorcut ", version(), " built with ", __VERSION__, "\nbuild ", BuildIdentity(),
      "\nproducts ", codegen::RunsInBf16(options.precision) ? "bf16" : "f32", "\ndecompositions ",
      options.decompositions == nullptr ? "none" : "default", "\nmodel outputs ",
      options.return_outputs ? "returned" : "not returned", "\ninputs");
  for (const InputDescriptor& d : captured.inputs) {
    absl::StrAppend(&key, " ", static_cast<int>(d.kind), ":", d.name, ":", d.constant_index);
  }
  absl::StrAppend(&key, "\nupdated buffers ", absl::StrJoin(mutated, " "), "\nrandom ",
                  captured.random.seed, " ", captured.random.offset, " ",
                  DimToString(captured.random.numbers), "\nsymbolic dims");
  std::vector<std::pair<std::string, std::vector<int64_t>>> dims(dynamic.begin(), dynamic.end());
  std::sort(dims.begin(), dims.end());
  for (const auto& [name, d] : dims) absl::StrAppend(&key, " ", name, ":", absl::StrJoin(d, ","));
  absl::StrAppend(&key, "\nstructures ", ToString(captured.in_spec), " -> ",
                  ToString(captured.out_spec), "\n", ToString(captured.graph));
  return key;
}

}  // namespace

TrainStep::~TrainStep() = default;

absl::StatusOr<std::unique_ptr<TrainStep>> TrainStep::Create(nn::Module& module, nn::LossFn loss,
                                                             const TensorTree& inputs,
                                                             const TensorTree& targets,
                                                             nn::Optimizer& optimizer,
                                                             const TrainStepOptions& options) {
  if (absl::Status s = CheckClipOptions({.clip_grad_value = options.clip_grad_value,
                                         .clip_grad_norm = options.clip_grad_norm,
                                         .clip_norm_type = options.clip_norm_type});
      !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("TrainStep: ", s.message()));
  }
  std::unique_ptr<TrainStep> step(new TrainStep());
  step->wrapper_ = std::make_shared<WithLoss>(module, std::move(loss), options.return_outputs);
  step->optimizer_ = &optimizer;
  step->example_ = TensorTree::Tuple({inputs, targets});
  step->options_ = options;
  TC_RETURN_IF_ERROR(step->Compile(options.dynamic_dims));
  return step;
}

absl::Status TrainStep::Compile(const DynamicDims& dynamic) {
  using Kind = InputDescriptor::Kind;
  TC_ASSIGN_OR_RETURN(CompilerPipeline pipeline,
                      CompilerPipeline::Create(
                          *wrapper_, example_,
                          {.dynamic_dims = dynamic, .plan_cache_size = options_.plan_cache_size}));
  const TracedProgram& captured = pipeline.captured();
  // The model's outputs follow the loss, when returned.
  const int num_outputs = options_.return_outputs ? captured.out_spec[1].num_leaves() : 0;
  if (captured.graph.outputs().size() != 1 + num_outputs + pipeline.mutated_buffers().size() ||
      captured.graph.outputs()[0]->type().shape.size() != 0) {
    return absl::InvalidArgumentError("TrainStep: the loss must be one scalar tensor");
  }
  const DType loss_dtype = captured.graph.outputs()[0]->type().dtype;
  if (loss_dtype != DType::kF32 && loss_dtype != DType::kF64) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrainStep: the loss must be f32 or f64, got ", DTypeName(loss_dtype)));
  }
  // The compile cache holds the programs of the default partition.
  const bool cacheable =
      !options_.partition_fn && options_.backward_rewriter == nullptr &&
      (options_.decompositions == nullptr || options_.decompositions == &DefaultDecompositions());
  const std::optional<StepCache> cache =
      cacheable ? StepCache::ForThisProcess() : std::optional<StepCache>();
  const std::string key =
      cache ? StepKey(captured, pipeline.mutated_buffers(), dynamic, options_) : "";
  std::optional<CachedStep> made = cache ? cache->Find(key) : std::nullopt;
  if (!made) {
    TC_ASSIGN_OR_RETURN(made, MakeProgram(pipeline, num_outputs, dynamic));
    if (cache) cache->Store(key, made->program, made->summary);
  }
  // Parameters, buffers and constants stay bound; the batch's leaves are
  // set at each run.
  TC_ASSIGN_OR_RETURN(
      std::vector<Tensor> bound,
      GraphArguments(captured, example_, wrapper_->named_parameters(), wrapper_->named_buffers()));
  TC_ASSIGN_OR_RETURN(compiled_,
                      CompiledStep::Create(std::move(made->program), std::move(bound), *optimizer_,
                                           {.compiler = options_.compiler,
                                            .plan_cache_size = options_.plan_cache_size,
                                            .clip_grad_value = options_.clip_grad_value,
                                            .clip_grad_norm = options_.clip_grad_norm,
                                            .clip_norm_type = options_.clip_norm_type,
                                            .reduce_gradients = options_.reduce_gradients,
                                            .backward_rewriter = options_.backward_rewriter}));
  // The batch leaves' placeholders, for widening.
  batch_names_.clear();
  batch_types_.clear();
  for (size_t i = 0; i < captured.inputs.size(); ++i) {
    if (captured.inputs[i].kind != InputDescriptor::Kind::kUserInput) continue;
    batch_names_.push_back(captured.graph.placeholders()[i]->name());
    batch_types_.push_back(captured.graph.placeholders()[i]->type());
  }
  summary_ = made->summary;
  dynamic_dims_ = dynamic;
  ++compilations_;
  return absl::OkStatus();
}

absl::StatusOr<CachedStep> TrainStep::MakeProgram(CompilerPipeline& pipeline, int num_outputs,
                                                  const DynamicDims& dynamic) const {
  using Kind = InputDescriptor::Kind;
  const TracedProgram& captured = pipeline.captured();
  TC_RETURN_IF_ERROR(pipeline.generate_ir_for_training(
      {.decompositions = options_.decompositions, .precision = options_.precision}));
  TC_ASSIGN_OR_RETURN(const JointGraph* joint, pipeline.joint_graph());
  const partition::PartitionFn partition_fn =
      options_.partition_fn ? options_.partition_fn
                            : partition::PartitionFn(partition::MinCutPartition);
  TC_ASSIGN_OR_RETURN(partition::PartitionResult part, pipeline.partition(partition_fn, *joint));
  if (options_.backward_rewriter != nullptr) {
    TC_RETURN_IF_ERROR(options_.backward_rewriter->Rewrite(*joint, part));
  }
  const partition::PartitionReport report =
      partition::MakeReport(joint->graph, joint->layout, part);
  CachedStep made{
      .program = {.forward = std::move(part.forward),
                  .backward = std::move(part.backward),
                  .inputs = captured.inputs,
                  .batch_spec = captured.in_spec,
                  .num_outputs = num_outputs,
                  .outputs_spec = options_.return_outputs ? captured.out_spec[1] : TreeSpec(),
                  .num_saved = part.num_fw_outs_saved_for_bw,
                  .gradient_of = joint->layout.grad_primal_indices,
                  .random = captured.random,
                  .dynamic_dims = dynamic},
      .summary = {.joint_nodes = joint->graph.num_nodes(),
                  .forward_nodes = report.fw_nodes,
                  .backward_nodes = report.bw_nodes,
                  .saved_values = static_cast<int>(report.saved.size()),
                  .saved_bytes = report.saved_bytes}};
  // Names in the user's words.
  StepProgram& program = made.program;
  for (InputDescriptor& d : program.inputs) {
    if (d.kind == Kind::kParameter || d.kind == Kind::kBuffer) d.name = ModelName(d.name);
    if (d.kind == Kind::kUserInput) program.batch_words.push_back(UserWords(d.name));
  }
  for (const std::string& name : pipeline.mutated_buffers()) {
    program.mutated_buffers.push_back(ModelName(name));
  }
  return made;
}

absl::StatusOr<TensorTree> TrainStep::outputs() const {
  if (!options_.return_outputs) {
    return absl::FailedPreconditionError(
        "TrainStep: outputs() of a step created without TrainStepOptions::return_outputs");
  }
  return Unflatten(compiled_->outputs(), compiled_->program().outputs_spec);
}

absl::StatusOr<double> TrainStep::Run(absl::Span<const Tensor> batch) {
  if (running_.exchange(true)) {
    return absl::FailedPreconditionError(
        "TrainStep: Run while another Run of this step is in progress; a step runs one batch at "
        "a time (one TrainStep per thread, each with its own module, trains concurrently)");
  }
  absl::Cleanup done = [this] { running_ = false; };
  // A widening that failed is not tried again: the step's own error then
  // says what did not fit, and the failure why.
  absl::Status widening = absl::OkStatus();
  if (options_.automatic_dynamic && batch.size() == batch_names_.size()) {
    std::optional<DynamicDims> dims =
        WidenedDynamicDims(dynamic_dims_, batch_names_, batch_types_, batch);
    if (dims && dims != failed_dims_) {
      if (absl::Status s = Compile(*dims); !s.ok()) {
        failed_dims_ = dims;
        failure_ = s;
      }
    }
    if (dims && dims == failed_dims_) widening = failure_;
  }
  return WithWideningFailure(compiled_->Run(batch), widening);
}

}  // namespace tc
