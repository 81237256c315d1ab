#include "codegen/program.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "codegen/fold_constants.h"
#include "codegen/fold_conv_bias.h"
#include "codegen/fold_post_ops.h"
#include "codegen/fuse_elementwise.h"
#include "codegen/fuse_sums.h"
#include "codegen/fused_kernel.h"
#include "codegen/fusion.h"
#include "codegen/graph_runner.h"
#include "codegen/layout_plan.h"
#include "codegen/layout_templates.h"
#include "codegen/loop_region.h"
#include "codegen/memory_plan.h"
#include "codegen/step_profile.h"
#include "graph/passes/strip_stop_gradients.h"
#include "runtime/dispatch.h"
#include "runtime/error.h"
#include "runtime/kernels/strided.h"

namespace tc::codegen {
namespace {

enum class StepKind { kFused, kInto, kView, kCopy, kConstant, kEager };

// Copies `src` (strides `src_strides`) into contiguous `dst` of `shape`.
template <typename T>
void CopyTo(const Tensor& src, absl::Span<const int64_t> shape,
            absl::Span<const int64_t> src_strides, absl::Span<const int64_t> dst_strides,
            const Tensor& dst) {
  const T* s = static_cast<const T*>(src.raw_data());
  T* d = static_cast<T*>(dst.raw_data());
  kernels::ForEachOffset<2>(shape, {dst_strides, src_strides},
                            [&](int64_t o, int64_t i) { d[o] = s[i]; });
}

// Whether `t` is laid out with `strides` (any stride along a size-1 dim).
bool SameDenseLayout(const Tensor& t, absl::Span<const int64_t> strides) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.shape()[d] != 1 && t.strides()[d] != strides[d]) return false;
  }
  return true;
}

}  // namespace

// A fused step's kernel: a loop region's fusible nodes (codegen/
// loop_region.h; a lone fusible node is a group of one), the sums its pass
// computes, the order it runs in, and the values of the program's graph its
// inputs and results are: the group's outputs, then the sums.
struct Program::FusedGroup {
  FusionGroup group;
  std::vector<FusedSum> sums;
  DimOrder order;
  std::vector<const Value*> inputs, results;
};

absl::StatusOr<absl::flat_hash_map<const Node*, Program::FusedGroup>> Program::FusedGroups(
    const Graph& graph) {
  absl::flat_hash_map<const Node*, FusedGroup> groups;
  for (const Node* node : graph.nodes()) {
    FusedGroup g;
    if (const Graph* body = node->body(); body != nullptr && EpilogueKernel(*node) == nullptr) {
      g.group.inputs.assign(body->placeholders().begin(), body->placeholders().end());
      g.inputs.assign(node->inputs().begin(), node->inputs().end());
      std::vector<const Value*> summed;  // per sum, its result
      for (const Node* n : body->nodes()) {
        if (n->def().Has(kTraitFusible)) {
          if (g.group.nodes.empty()) {
            g.group.shape = n->result(0)->type().shape;
            g.order = n->result(0)->layout();
          }
          g.group.nodes.push_back(n);
        } else if (n->op() == OpKind::kSum) {
          const Value* in = n->input(0);
          const Value* of =
              in->producer()->op() == OpKind::kReshape ? in->producer()->input(0) : in;
          FusedSum sum{of, in->type().shape, ReducedDimsOf(n->attrs(), in->type().rank())};
          if (!FusedKernel::CanSum(sum.shape, of == in ? g.order : DimOrder(), sum.dims)) {
            return AtSource(
                *node, absl::InvalidArgumentError(absl::StrCat(
                           "fused: its pass cannot sum %", in->name(), " ", in->type().ToString(),
                           " over dims [", absl::StrJoin(sum.dims, ", "), "]")));
          }
          g.sums.push_back(std::move(sum));
          summed.push_back(n->result(0));
        }
      }
      for (size_t i = 0; i < body->outputs().size(); ++i) {
        const Value* out = body->outputs()[i];
        if (!out->producer()->def().Has(kTraitFusible)) continue;
        g.group.outputs.push_back(out);
        g.results.push_back(node->result(i));
      }
      for (const Value* s : summed) {
        const auto& outs = body->outputs();
        g.results.push_back(node->result(std::find(outs.begin(), outs.end(), s) - outs.begin()));
      }
    } else if (IsFusible(*node)) {
      g.group = GroupOf(*node);
      g.order = node->result(0)->layout();
      g.inputs = g.group.inputs;
      g.results = g.group.outputs;
    } else {
      continue;
    }
    groups[node] = std::move(g);
  }
  return groups;
}

struct Program::Step {
  StepKind kind;
  const Node* node;    // the step's node
  const Node* kernel;  // whose kernel an into step calls: node, or its epilogue region's kernel
  std::optional<FusedKernel> fused;
  IntoKernelFn into = nullptr;
  PostOpKernelFn post_op_kernel = nullptr;  // an epilogue region's, running `post_ops` too
  std::vector<PostOp> post_ops;
  DimOrder order;                        // a fused step's iteration (its outputs' memory) order
  std::vector<int> inputs, results;      // slots
  std::vector<TensorType> result_types;  // of an eager node
  // A view of an argument or of an eager result is rebound every run: its
  // offset from input 0's, per result. Other views are bound once.
  bool rebind = false;
  std::vector<int64_t> offset_deltas;
  // A copy step's source layout (its input's), and its destination's strides.
  std::vector<int64_t> copy_strides, copy_dst_strides;
};

// A storage outside the arena: an output's buffer, or the saved region; the
// values living in it, each with its own handle in a context's slots.
struct Program::OwnedBuffer {
  int64_t bytes = 0;
  std::vector<int> slots;
  std::vector<Tensor> layouts;  // per slot: shape, strides and offset
};

// What one run works on. Planned values' handles point into the context's
// arena or its owned buffers; constants are the program's, shared.
struct Program::Context {
  std::shared_ptr<Storage> arena;
  // One handle per value; placeholders first. Planned values keep theirs.
  std::vector<Tensor> slots;
  // Arguments in another layout than their placeholder's, copied.
  std::vector<Tensor> staged_args;
  // The handles a step passes to its kernel, filled from the slots.
  std::vector<Tensor> input_handles, result_handles;
};

Program::Program(Graph graph) : graph_(std::move(graph)) {}
Program::~Program() = default;

absl::StatusOr<std::shared_ptr<Program>> Program::Compile(const Graph& graph,
                                                          const CompileOptions& options) {
  TC_RETURN_IF_ERROR(CheckCompilable(graph, "program"));
  const std::vector<DimOrder>& orders = options.argument_orders;
  if (!orders.empty() && orders.size() != graph.placeholders().size()) {
    return absl::InvalidArgumentError(absl::StrCat("program: expected ",
                                                   graph.placeholders().size(),
                                                   " argument orders, got ", orders.size()));
  }
  for (size_t i = 0; i < orders.size(); ++i) {
    if (!orders[i].empty() && orders[i].size() != graph.placeholders()[i]->type().shape.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "program: argument ", i, " has rank ", graph.placeholders()[i]->type().rank(),
          ", its order has ", orders[i].size(), " dims"));
    }
  }
  std::shared_ptr<Program> program(new Program(graph.Clone()));
  const std::vector<Pass> lowering = {
      StripStopGradients(),    // stop_gradient has done its work in autodiff
      FoldConstants(),         // elementwise ops and views of constants, computed now
      FoldConvolutionBias(),   // a convolution's bias add into the convolution
      FuseElementwise(),       // elementwise chains into fused nodes
      AssignLayouts(options),  // channels-last activations between convolutions
      FoldPostOps(),           // a kernel's elementwise reader into its epilogue
      FuseSums(),              // sums of fused results into their pass
  };
  // Folding constants and lowering allocate: a graph too large for memory
  // is an error (tc::Error from Storage), not the end of the process.
  absl::Status status;
  try {
    status = RunPasses(program->graph_, lowering).status();
    if (status.ok()) status = program->Lower(options);
  } catch (const Error& e) {
    status = e.status();
  }
  TC_RETURN_IF_ERROR(status);
  return program;
}

absl::Status Program::Lower(const CompileOptions& options) {
  // Slots: the placeholders, then every node result in graph order.
  absl::flat_hash_map<const Value*, int> slot;
  std::vector<const Value*> values;
  for (const Value* p : graph_.placeholders()) {
    slot[p] = values.size();
    values.push_back(p);
  }
  for (const Node* node : graph_.nodes()) {
    for (const Value* r : node->results()) {
      slot[r] = values.size();
      values.push_back(r);
    }
  }
  const int num_values = values.size();
  num_slots_ = num_values;

  // Layout templates: every value's shape, strides and offset from the start
  // of the buffer it lives in.
  const LayoutTemplates templates(graph_);
  std::vector<Tensor> layout(num_values);
  for (size_t i = 0; i < graph_.placeholders().size(); ++i) {
    const Value* p = graph_.placeholders()[i];
    layout[slot[p]] = templates.Dense(
        p, options.argument_orders.empty() ? DimOrder() : options.argument_orders[i]);
    argument_strides_.push_back(layout[slot[p]].strides());
  }

  // Where each value's memory comes from: the slot of the value owning its
  // buffer (itself for computed values, arguments and eager results).
  std::vector<int> root(num_values);
  for (int i = 0; i < num_values; ++i) root[i] = i;
  enum class Origin { kArgument, kPlanned, kEager, kConstant };
  std::vector<Origin> origin(num_values, Origin::kArgument);

  TC_ASSIGN_OR_RETURN(const auto group_of, FusedGroups(graph_));
  // Nodes whose result the graph returns, directly or through views of it:
  // such a constant is recomputed every run, since its caller may write it.
  absl::flat_hash_set<const Node*> returned_nodes;
  for (const Value* out : graph_.outputs()) {
    const Value* v = out;
    while (!v->is_placeholder() && GetOpDef(v->producer()->op()).Has(kTraitView)) {
      v = v->producer()->input(0);
    }
    if (!v->is_placeholder()) returned_nodes.insert(v->producer());
  }

  auto slots_of = [&](auto values) {
    std::vector<int> s;
    for (const Value* v : values) s.push_back(slot.at(v));
    return s;
  };
  auto layouts_of = [&](const std::vector<int>& slots) {
    std::vector<Tensor> l;
    for (int s : slots) l.push_back(layout[s]);
    return l;
  };
  for (const Node* node : graph_.nodes()) {
    Step step{StepKind::kInto, node, node};
    const OpDef& def = GetOpDef(node->op());
    DimOrder order;  // of the results of a fused step, of the first of an into step
    auto g = group_of.find(node);
    if (g != group_of.end()) {
      const FusedGroup& fused = g->second;
      step.kind = StepKind::kFused;
      step.fused = FusedKernel::Compile(fused.group, fused.sums);
      step.inputs = slots_of(fused.inputs);
      step.results = slots_of(fused.results);
      step.order = order = fused.order;
    } else if (const Node* kernel = EpilogueKernel(*node); kernel != nullptr) {
      step.kernel = kernel;
      step.post_op_kernel = GetPostOpKernel(kernel->op());
      const std::vector<Node*> chain = node->body()->nodes();
      for (size_t i = 1; i < chain.size(); ++i) {
        step.post_ops.push_back(
            {chain[i]->op(), ElementwiseAttrsOf(chain[i]->op(), chain[i]->attrs())});
      }
      step.inputs = slots_of(node->inputs());
      step.results = slots_of(node->results());
      order = node->result(0)->layout();
    } else {
      step.inputs = slots_of(node->inputs());
      step.results = slots_of(node->results());
      for (const Value* r : node->results()) step.result_types.push_back(r->type());
      if (def.Has(kTraitCreation) && !def.Has(kTraitRandom) && !returned_nodes.contains(node)) {
        step.kind = StepKind::kConstant;
      } else if (node->op() == OpKind::kAllReduceWait && !node->input(0)->is_placeholder() &&
                 node->input(0)->producer()->op() == OpKind::kAllReduceStart &&
                 origin[step.inputs[0]] == Origin::kPlanned &&
                 root[step.inputs[0]] == step.inputs[0]) {
        // The wait completes its bucket where the start wrote it: its
        // result is that memory, and the bucket's readers keep it alive.
        step.into = GetIntoKernel(node->op());
        root[step.results[0]] = root[step.inputs[0]];
      } else if (GetIntoKernel(node->op()) != nullptr) {
        step.kind = StepKind::kInto;
        step.into = GetIntoKernel(node->op());
        order = node->result(0)->layout();
      } else if (def.Has(kTraitView)) {
        const std::vector<Tensor> in = layouts_of(step.inputs);
        TC_ASSIGN_OR_RETURN(const std::optional<TensorList> views, templates.View(*node, in));
        if (views) {
          const TensorList& out = *views;
          step.kind = StepKind::kView;
          const int base = root[step.inputs[0]];
          step.rebind = origin[base] == Origin::kArgument || origin[base] == Origin::kEager;
          for (size_t r = 0; r < out.size(); ++r) {
            layout[step.results[r]] = out[r];
            root[step.results[r]] = base;
            origin[step.results[r]] = origin[base];
            step.offset_deltas.push_back(out[r].offset() - in[0].offset());
          }
        } else if (node->op() == OpKind::kReshape) {
          step.kind = StepKind::kCopy;
          step.copy_strides = in[0].strides();
          step.copy_dst_strides = ContiguousStrides(in[0].shape());
        } else {
          step.kind = StepKind::kEager;
        }
      } else {
        step.kind = StepKind::kEager;
      }
    }
    if (step.kind != StepKind::kView) {
      for (size_t r = 0; r < step.results.size(); ++r) {
        const int s = step.results[r];
        // An into step's order is its first result's; a fused step's, all
        // but its sums'.
        const bool ordered =
            step.kind == StepKind::kFused ? r < g->second.group.outputs.size() : r == 0;
        layout[s] = templates.Dense(values[s], ordered ? order : DimOrder());
        origin[s] = step.kind == StepKind::kEager      ? Origin::kEager
                    : step.kind == StepKind::kConstant ? Origin::kConstant
                                                       : Origin::kPlanned;
      }
    }
    steps_.push_back(std::move(step));
  }
  output_slots_ = slots_of(graph_.outputs());
  for (const Tensor& l : layout) {  // undefined for values inside fused groups
    channels_last_.push_back(l.defined() && l.is_channels_last());
  }
  // Constants are computed now, once, and shared by every context.
  absl::flat_hash_map<int, Tensor> constants;
  for (Step& step : steps_) {
    if (step.kind != StepKind::kConstant) continue;
    TC_ASSIGN_OR_RETURN(const TensorList out, RunNodeKernel(*step.node, {}, step.result_types));
    for (size_t r = 0; r < out.size(); ++r) {
      constants[step.results[r]] = out[r];
      fixed_slots_.emplace_back(step.results[r], out[r]);
    }
  }

  // Buffers of planned values: graph outputs outside the arena (the values
  // saved for a backward in one region), the others at the offsets the
  // memory plan gives them; a fused pass may write a result over an operand
  // in its layout.
  std::vector<std::vector<std::pair<int, int>>> in_place(steps_.size());
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (step.kind != StepKind::kFused) continue;
    for (const auto& [input, output] : step.fused->InPlacePairs()) {
      const Tensor &from = layout[step.inputs[input]], &to = layout[step.results[output]];
      if (from.shape() == to.shape() && from.strides() == to.strides() && from.offset() == 0 &&
          ItemSize(from.dtype()) == ItemSize(to.dtype())) {
        in_place[i].emplace_back(step.inputs[input], step.results[output]);
      }
    }
  }
  std::vector<StepAccess> access;
  for (size_t i = 0; i < steps_.size(); ++i) {
    access.push_back({steps_[i].inputs, steps_[i].results, in_place[i]});
  }
  std::vector<int64_t> bytes(num_values);
  std::vector<int> planned;
  for (int v = 0; v < num_values; ++v) {
    bytes[v] = values[v]->type().bytes();
    if (origin[v] == Origin::kPlanned && root[v] == v) planned.push_back(v);
  }
  const Buffers buffers =
      AssignBuffers(access, root, bytes, planned, output_slots_, options.saved_outputs_from);
  root = buffers.roots;
  const MemoryPlan plan = PlanMemory(buffers.lifetimes);
  planned_ = {plan.arena_bytes, plan.saved_bytes, plan.outside_bytes};
  unshared_bytes_ = plan.unshared_bytes;
  // Per buffer outside the arena, its owned buffer and its offset in it.
  absl::flat_hash_map<int, std::pair<int, int64_t>> owned_at;
  absl::flat_hash_map<int, int64_t> arena_offset;
  int saved_region = -1;  // in owned_
  for (size_t i = 0; i < buffers.lifetimes.size(); ++i) {
    const BufferLifetime& b = buffers.lifetimes[i];
    switch (b.place) {
      case BufferPlace::kOutside:
        owned_at[b.value] = {owned_.size(), 0};
        owned_.push_back({AlignedBytes(b.bytes), {}, {}});
        break;
      case BufferPlace::kSaved:
        if (saved_region < 0) {
          saved_region = owned_.size();
          owned_.push_back({plan.saved_bytes, {}, {}});
        }
        owned_at[b.value] = {saved_region, plan.offsets[i]};
        break;
      case BufferPlace::kArena:
        arena_offset[b.value] = plan.offsets[i];
        break;
    }
  }

  // Handles of planned values: into the arena, or into an owned buffer.
  for (int v = 0; v < num_values; ++v) {
    if (origin[v] != Origin::kPlanned) continue;
    const Tensor& l = layout[v];
    if (auto owner = owned_at.find(root[v]); owner != owned_at.end()) {
      const auto [index, offset] = owner->second;
      OwnedBuffer& buffer = owned_[index];
      buffer.slots.push_back(v);
      buffer.layouts.push_back(Tensor::View(nullptr, l.dtype(), l.shape(), l.strides(),
                                            offset / ItemSize(l.dtype()) + l.offset()));
    } else if (auto offset = arena_offset.find(root[v]); offset != arena_offset.end()) {
      const int64_t element_offset = offset->second / ItemSize(l.dtype());
      arena_slots_.emplace_back(
          v, Tensor::View(nullptr, l.dtype(), l.shape(), l.strides(), element_offset + l.offset()));
    }
  }
  for (const Step& step : steps_) {
    if (step.kind != StepKind::kView) continue;
    for (int s : step.results) {
      const Tensor& l = layout[s];
      if (step.rebind) {  // bound every run; starts from its layout
        rebound_view_layouts_.emplace_back(
            s, Tensor::View(nullptr, l.dtype(), l.shape(), l.strides(), 0));
      } else if (origin[root[s]] == Origin::kConstant) {  // bound once
        const Tensor& base = constants.at(root[s]);
        fixed_slots_.emplace_back(s, Tensor::View(base.storage(), l.dtype(), l.shape(), l.strides(),
                                                  base.offset() + l.offset()));
      }
    }
  }
  for (const Step& step : steps_) {
    max_step_inputs_ = std::max<int>(max_step_inputs_, step.inputs.size());
    max_step_results_ = std::max<int>(max_step_results_, step.results.size());
  }
  for (const Step& step : steps_) {
    std::vector<int>* per_run = step.kind == StepKind::kEager                 ? &eager_slots_
                                : step.kind == StepKind::kView && step.rebind ? &rebound_view_slots_
                                                                              : nullptr;
    if (per_run != nullptr)
      per_run->insert(per_run->end(), step.results.begin(), step.results.end());
  }
  return absl::OkStatus();
}

std::unique_ptr<Program::Context> Program::NewContext() const {
  auto context = std::make_unique<Context>();
  context->arena =
      std::make_shared<Storage>(std::max<int64_t>(planned_.arena_bytes, 64), /*zeroed=*/false);
  context->slots.resize(num_slots_);
  context->staged_args.resize(argument_strides_.size());
  context->input_handles.resize(max_step_inputs_);
  context->result_handles.resize(max_step_results_);
  for (const auto& [s, t] : fixed_slots_) context->slots[s] = t;
  for (const auto& [s, l] : arena_slots_) {
    context->slots[s] = Tensor::View(context->arena, l.dtype(), l.shape(), l.strides(), l.offset());
  }
  for (const auto& [s, l] : rebound_view_layouts_) {
    context->slots[s] = Tensor::View(nullptr, l.dtype(), l.shape(), l.strides(), 0);
  }
  for (const OwnedBuffer& buffer : owned_) BindNewStorage(buffer, *context);
  return context;
}

std::unique_ptr<Program::Context> Program::TakeContext() const {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!idle_contexts_.empty()) {
      std::unique_ptr<Context> context = std::move(idle_contexts_.back());
      idle_contexts_.pop_back();
      return context;
    }
  }
  return NewContext();
}

void Program::ReturnContext(std::unique_ptr<Context> context) const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  idle_contexts_.push_back(std::move(context));
}

void Program::RefreshHeldOutputs(Context& context) const {
  for (const OwnedBuffer& buffer : owned_) {
    // The context's handles are one per slot; any other handle, or a view
    // made from one, belongs to a caller.
    const std::vector<Tensor>& slots = context.slots;
    bool held =
        slots[buffer.slots[0]].storage().use_count() > static_cast<long>(buffer.slots.size());
    for (int s : buffer.slots) held = held || slots[s].handle_count() > 1;
    if (held) BindNewStorage(buffer, context);
  }
}

void Program::BindNewStorage(const OwnedBuffer& buffer, Context& context) {
  auto storage = std::make_shared<Storage>(buffer.bytes, /*zeroed=*/false);
  for (size_t i = 0; i < buffer.slots.size(); ++i) {
    const Tensor& l = buffer.layouts[i];
    context.slots[buffer.slots[i]] =
        Tensor::View(storage, l.dtype(), l.shape(), l.strides(), l.offset());
  }
}

absl::Status Program::RunSteps(Context& context) const {
  StepProfile* profile = ActiveStepProfile();
  if (profile == nullptr) {
    for (const Step& step : steps_) TC_RETURN_IF_ERROR(RunStep(step, context));
    return absl::OkStatus();
  }
  for (const Step& step : steps_) {
    const auto start = std::chrono::steady_clock::now();
    TC_RETURN_IF_ERROR(RunStep(step, context));
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    switch (step.kind) {
      case StepKind::kCopy:
        profile->Add("copy", StepGroup::kCopies, took.count());
        break;
      case StepKind::kView:
      case StepKind::kConstant:
        profile->Add("view", StepGroup::kCopies, took.count());
        break;
      default:
        profile->Add(StepName(*step.node), StepGroupOf(*step.node), took.count());
    }
  }
  return absl::OkStatus();
}

absl::Status Program::RunStep(const Step& step, Context& context) const {
  std::vector<Tensor>& slots = context.slots;
  const absl::Span<Tensor> inputs =
      absl::MakeSpan(context.input_handles.data(), step.inputs.size());
  const absl::Span<Tensor> results =
      absl::MakeSpan(context.result_handles.data(), step.results.size());
  // Whatever happens, let go of what the step was handed: arguments stay the
  // caller's, and a held output would look taken to the next run.
  struct Release {
    absl::Span<Tensor> inputs, results;
    ~Release() {
      for (Tensor& t : inputs) t = Tensor();
      for (Tensor& t : results) t = Tensor();
    }
  } release{inputs, results};
  switch (step.kind) {
    case StepKind::kConstant:
      break;
    case StepKind::kView: {
      if (!step.rebind) break;
      const Tensor& base = slots[step.inputs[0]];
      for (size_t r = 0; r < step.results.size(); ++r) {
        Tensor& view = slots[step.results[r]];
        if (view.handle_count() > 1) {  // returned last run and still held
          view = Tensor::View(nullptr, view.dtype(), view.shape(), view.strides(), 0);
        }
        view.impl()->storage = base.storage();
        view.impl()->offset = base.offset() + step.offset_deltas[r];
      }
      break;
    }
    case StepKind::kCopy: {
      const Tensor& src = slots[step.inputs[0]];
      const Tensor& dst = slots[step.results[0]];
      kernels::VisitElementBits(src.dtype(), [&](auto bits) {
        CopyTo<decltype(bits)>(src, src.shape(), step.copy_strides, step.copy_dst_strides, dst);
      });
      break;
    }
    case StepKind::kEager: {
      for (size_t i = 0; i < step.inputs.size(); ++i) inputs[i] = slots[step.inputs[i]];
      TC_ASSIGN_OR_RETURN(TensorList out, RunNodeKernel(*step.node, inputs, step.result_types));
      for (size_t r = 0; r < step.results.size(); ++r) slots[step.results[r]] = std::move(out[r]);
      break;
    }
    case StepKind::kFused:
    case StepKind::kInto: {
      for (size_t i = 0; i < step.inputs.size(); ++i) inputs[i] = slots[step.inputs[i]];
      for (size_t r = 0; r < step.results.size(); ++r) results[r] = slots[step.results[r]];
      absl::Status s;
      if (step.kind == StepKind::kFused) {
        step.fused->RunInto(inputs, results, step.order);
      } else if (step.post_op_kernel != nullptr) {
        s = step.post_op_kernel(inputs, step.kernel->attrs(), step.post_ops, results);
      } else {
        s = step.into(inputs, step.kernel->attrs(), results);
      }
      if (!s.ok()) {
        return AtSource(*step.node, absl::Status(s.code(), absl::StrCat(OpName(step.kernel->op()),
                                                                        ": ", s.message())));
      }
      break;
    }
  }
  return absl::OkStatus();
}

absl::Status Program::Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const {
  if (outputs.size() != output_slots_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected room for ", output_slots_.size(), " outputs, got ", outputs.size()));
  }
  TC_RETURN_IF_ERROR(CheckArguments(graph_.placeholders(), args));
  std::unique_ptr<Context> context;
  try {
    context = TakeContext();  // a new context allocates its arena
  } catch (const Error& e) {
    return e.status();
  }
  std::vector<Tensor>& slots = context->slots;
  absl::Status status;
  try {  // allocations beyond memory are errors (tc::Error from Storage)
    BindArguments(args, *context);
    // The caller's last outputs, let go (after binding the arguments, which
    // may be those very tensors).
    for (Tensor& t : outputs) t = Tensor();
    RefreshHeldOutputs(*context);
    status = RunSteps(*context);
  } catch (const Error& e) {
    status = e.status();
  }
  if (status.ok()) {
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = slots[output_slots_[i]];
  }
  // Let go of the caller's tensors: arguments, views of them and eager
  // results. A rebound view's handle is kept (unless its caller holds it),
  // only its storage dropped, so the next run allocates no handle.
  for (size_t i = 0; i < args.size(); ++i) slots[i] = Tensor();
  for (int s : eager_slots_) slots[s] = Tensor();
  for (int s : rebound_view_slots_) {
    if (slots[s].handle_count() == 1) slots[s].impl()->storage.reset();
  }
  ReturnContext(std::move(context));
  return status;
}

void Program::BindArguments(absl::Span<const Tensor> args, Context& context) const {
  for (size_t i = 0; i < args.size(); ++i) {
    if (SameDenseLayout(args[i], argument_strides_[i])) {
      context.slots[i] = args[i];
      continue;
    }
    Tensor& staged = context.staged_args[i];
    // A staged copy returned last run (the graph returns its argument) and
    // still held stays its holder's.
    if (!staged.defined() || staged.handle_count() > 1 || staged.storage().use_count() > 1) {
      staged = Tensor::View(std::make_shared<Storage>(std::max<int64_t>(args[i].bytes(), 1),
                                                      /*zeroed=*/false),
                            args[i].dtype(), args[i].shape(), argument_strides_[i], 0);
    }
    kernels::CopyStrided(args[i], staged);
    context.slots[i] = staged;
  }
}

absl::StatusOr<std::vector<Tensor>> Program::Run(absl::Span<const Tensor> args) const {
  std::vector<Tensor> outputs(output_slots_.size());
  TC_RETURN_IF_ERROR(Run(args, absl::MakeSpan(outputs)));
  return outputs;
}

DimOrder Program::output_order(int i) const {
  return channels_last_[output_slots_[i]] ? kChannelsLast : DimOrder();
}

}  // namespace tc::codegen
