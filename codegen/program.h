// Program: a graph lowered once into a fixed sequence of steps over memory
// planned at compile time, so that a run after the first allocates nothing.
//
//   absl::StatusOr<std::shared_ptr<Program>> p = Program::Compile(graph);
//   std::vector<Tensor> out((*p)->num_outputs());
//   absl::Status s = (*p)->Run({x, w, b}, absl::MakeSpan(out));
//   // out[0]: a handle to a buffer the program owns; see "Outputs" below
//
// Lowering. First the lowering passes run over the graph, the verifier after
// each: fold-constants (codegen/fold_constants.h) folds elementwise ops and
// views of constants, fold-conv-bias (codegen/fold_conv_bias.h) gives a
// convolution the bias its only reader adds, fuse-elementwise
// (codegen/fuse_elementwise.h) makes every fusion group a `fused` node,
// assign-layouts (codegen/layout_plan.h) sets each value's memory order,
// fold-post-ops (codegen/fold_post_ops.h) makes the elementwise chain that
// is a kernel's only reader its epilogue, and fuse-sums (codegen/
// fuse_sums.h) moves sums of fused results into their pass; graph() is the
// result, and prints. Then each node becomes one step: a loop region runs
// as one fused kernel (codegen/fused_kernel.h; a lone elementwise node as a
// group of one), an epilogue region as its kernel's call with post-ops
// (runtime/dispatch.h), other nodes through their out-variant kernel, views
// (reshape, permute, slice, expand) as handles whose layout was worked out at
// compile time, a reshape that cannot be a view as one strided copy, and
// constants (`full`) are computed once. An op with none of these runs its
// eager kernel and allocates its results, the one step kind that does.
//
// Memory. The results of computing steps live in one arena: each gets an
// offset from its lifetime (producer to last reader, through the views of it),
// largest first into the lowest free range, so buffers whose lifetimes do not
// overlap share memory, and a fused pass writes a result over an operand that
// dies there (codegen/memory_plan.h). Graph outputs, and values the outputs
// are views of, get buffers of their own outside the arena; the values saved
// for a backward (`saved_outputs_from` on) share one. A collective's wait
// (all_reduce_wait) completes its bucket in place: its result is the memory
// the start packed, so that gradients read out of it as views cost no copy.
//
// Outputs. A run hands out handles to the output buffers. The next run writes
// into them only if the caller let go of every handle and view of one; a
// buffer still held is left to its holder and the run allocates a new one, so
// nothing a caller kept is ever overwritten.
//
// Layouts. Values are row-major unless assign-layouts (codegen/
// layout_plan.h) makes them channels-last: convolutional activations, and
// graph outputs from `free_outputs_from` on when the caller takes any layout
// (a training step's saved values, handed to a backward compiled with
// `argument_orders` to match). An argument in another layout than its
// placeholder's is copied into it first.
//
// Concurrency. A compiled program is immutable: several threads may run it
// at once. Each run takes an execution context (its arena, its value slots,
// its output buffers) from a pool, a new one only when every pooled context
// is in use, and gives it back when it returns; constants are shared. The
// pool keeps every context it made: memory grows to the arena and output
// buffers times the most calls ever run at once.
#ifndef TENSORCUT_CODEGEN_PROGRAM_H_
#define TENSORCUT_CODEGEN_PROGRAM_H_

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codegen/executable.h"
#include "graph/ir.h"
#include "graph/shape.h"
#include "runtime/tensor.h"

namespace tc::codegen {

class Program {
 public:
  // Fails when the graph does not verify or an op has no kernel.
  static absl::StatusOr<std::shared_ptr<Program>> Compile(const Graph& graph,
                                                          const CompileOptions& options = {});
  ~Program();

  // Checks `args` against the placeholders (as the interpreter does), runs
  // every step and sets `outputs[i]` to graph output i. `outputs` must have
  // num_outputs() entries. A kernel error comes back with its op and source.
  // Safe to call from several threads at once.
  absl::Status Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const;
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> args) const;

  int num_outputs() const { return static_cast<int>(output_slots_.size()); }
  // The lowered graph the steps run: the input after the lowering passes.
  const Graph& graph() const { return graph_; }
  // The layout of output i: kChannelsLast, or empty for row-major (or a
  // view in neither layout).
  DimOrder output_order(int i) const;
  // The arena's size, and what the values in it would take without sharing.
  int64_t arena_bytes() const { return planned_.arena_bytes; }
  int64_t unshared_bytes() const { return unshared_bytes_; }
  // The arena, the saved region and the other output buffers: what each
  // execution context holds.
  PlannedMemory planned_memory() const { return planned_; }

 private:
  struct Step;
  struct OwnedBuffer;
  struct Context;
  struct FusedGroup;

  // The kernel of every fused step, by its node; an error for a sum its
  // pass cannot take.
  static absl::StatusOr<absl::flat_hash_map<const Node*, FusedGroup>> FusedGroups(
      const Graph& graph);

  explicit Program(Graph graph);
  absl::Status Lower(const CompileOptions& options);
  // A context with its own arena and output buffers, every slot bound that
  // is bound once.
  std::unique_ptr<Context> NewContext() const;
  // A pooled context, or a new one when none is idle.
  std::unique_ptr<Context> TakeContext() const;
  void ReturnContext(std::unique_ptr<Context> context) const;
  // Binds each argument to its slot, or a copy of it in its placeholder's
  // layout.
  void BindArguments(absl::Span<const Tensor> args, Context& context) const;
  absl::Status RunSteps(Context& context) const;
  absl::Status RunStep(const Step& step, Context& context) const;
  // Gives each output buffer a caller still holds a new storage.
  void RefreshHeldOutputs(Context& context) const;
  // Gives `buffer` a new storage and its slots new handles into it.
  static void BindNewStorage(const OwnedBuffer& buffer, Context& context);

  Graph graph_;
  std::vector<Step> steps_;
  std::vector<OwnedBuffer> owned_;  // outside the arena: output buffers, the saved region
  std::vector<int> output_slots_;
  std::vector<std::vector<int64_t>> argument_strides_;  // per placeholder
  std::vector<bool> channels_last_;                     // per slot
  // Slots a run binds afresh: eager results, and views of arguments or of
  // eager results.
  std::vector<int> eager_slots_, rebound_view_slots_;
  PlannedMemory planned_;
  int64_t unshared_bytes_ = 0;

  // How a new context binds its slots: constants and views of them, the same
  // tensors in every context; planned values at an element offset into the
  // context's arena (the layout's offset); rebound views from their layout.
  int num_slots_ = 0;
  std::vector<std::pair<int, Tensor>> fixed_slots_, arena_slots_, rebound_view_layouts_;
  int max_step_inputs_ = 0, max_step_results_ = 0;

  // Idle contexts. A std::mutex rather than absl::Mutex: ThreadSanitizer
  // sees its synchronisation, which it cannot in the system's uninstrumented
  // Abseil.
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Context>> idle_contexts_;  // guarded by pool_mutex_
};

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_PROGRAM_H_
