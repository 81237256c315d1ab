// What a compiler makes of a graph, and the compilers' common shape.
//
//   codegen::Compiler compiler = codegen::fusing();         // or interpreter(), or your own
//   absl::StatusOr<Executable> exe = compiler(graph, {.free_outputs_from = 1});
//   absl::StatusOr<std::vector<Tensor>> out = (*exe)({x, w, b});
//   absl::Status s = exe->Run({x, w, b}, absl::MakeSpan(out_vector));  // into the caller's
//   DimOrder order = exe->output_order(1);  // output 1 may come channels-last
//
// An Executable takes one tensor per placeholder and gives one per graph
// output. It is immutable and may be called from several threads at once.
// CompileOptions carry what a caller knows that the graph does not say: the
// layouts its arguments come in and which outputs it takes in any layout (a
// training step hands the forward's saved values to the backward as they
// are). A compiler may ignore them; then its arguments are read through their
// strides and its outputs are row-major.
#ifndef TENSORCUT_CODEGEN_EXECUTABLE_H_
#define TENSORCUT_CODEGEN_EXECUTABLE_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/ir.h"
#include "graph/shape.h"
#include "runtime/tensor.h"

namespace tc::codegen {

struct CompileOptions {
  // Per placeholder, the layout its arguments come in; empty: all row-major.
  std::vector<DimOrder> argument_orders;
  // Outputs from this index on may be in any layout; earlier ones are row-major.
  int free_outputs_from = std::numeric_limits<int>::max();
  // Outputs from this index on are values saved for a backward: a program
  // gives them one storage together (codegen/memory_plan.h's saved region),
  // so a call allocates one buffer for them, not one each.
  int saved_outputs_from = std::numeric_limits<int>::max();
};

// The memory a compiled graph's plan reserves for a call (codegen/
// memory_plan.h), held from call to call: a program keeps its arena and
// its output buffers in its execution context and reuses them.
struct PlannedMemory {
  int64_t arena_bytes = 0;    // working memory: values that die within the call
  int64_t saved_bytes = 0;    // the saved region: values kept for a backward
  int64_t outside_bytes = 0;  // the other output buffers, each apart
  int64_t total_bytes() const { return arena_bytes + saved_bytes + outside_bytes; }
};

// What an executable over symbolic dims (codegen/per_size.h) keeps: how many
// per-size plans it holds, and how its calls found them.
struct PlanCacheStats {
  int64_t plans = 0;        // held now, at most the cache's capacity
  int64_t hits = 0;         // calls of a size already planned
  int64_t misses = 0;       // calls that planned their size
  int64_t evictions = 0;    // plans dropped, least recently used first
  double plan_seconds = 0;  // spent specializing and compiling sizes, the first included
};

class Executable {
 public:
  // What a compiled graph implements.
  class Impl {
   public:
    virtual ~Impl() = default;
    // Sets outputs[i] to graph output i; `outputs` has one entry per output.
    virtual absl::Status Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const = 0;
    virtual int num_outputs() const = 0;
    virtual DimOrder output_order(int i) const { return {}; }
    virtual PlannedMemory planned_memory() const { return {}; }
    virtual PlanCacheStats plan_cache() const { return {}; }
  };
  using Fn = std::function<absl::StatusOr<std::vector<Tensor>>(absl::Span<const Tensor> args)>;

  Executable() = default;
  explicit Executable(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  // A function of the arguments (a compiler of one's own), returning
  // `num_outputs` row-major tensors.
  Executable(Fn fn, int num_outputs);

  absl::StatusOr<std::vector<Tensor>> operator()(absl::Span<const Tensor> args) const;
  // Into the caller's tensors: "expected room for 2 outputs, got 1" when
  // `outputs` does not have num_outputs() entries.
  absl::Status Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const;
  int num_outputs() const { return impl_->num_outputs(); }
  // The layout output i always comes in (kChannelsLast), or empty when the
  // compiler fixed none (row-major, or whatever its kernels return). A
  // compiler given an argument in another layout than it was told copies it.
  DimOrder output_order(int i) const { return impl_->output_order(i); }
  // The memory planned at compile time (all zero when none is: an
  // interpreter, a function of one's own); over symbolic dims, at the hints.
  PlannedMemory planned_memory() const { return impl_->planned_memory(); }
  // The per-size plans of an executable over symbolic dims; all zero for a
  // static one.
  PlanCacheStats plan_cache() const { return impl_->plan_cache(); }
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// `inner` with its last placeholders bound to `bound`: it takes the others'
// arguments and appends these. The caller may write the bound tensors between
// calls (a data-parallel backward's gradient weight, codegen/insert_all_reduce.h).
Executable WithTrailingArguments(Executable inner, std::vector<Tensor> bound);

// A compiler turns a graph into an executable, or says why it cannot. Any
// function of (graph, options) or of the graph alone is one:
//
//   codegen::Compiler counting = [&](const Graph& g) { ++n; return codegen::Interpret(g); };
class Compiler {
 public:
  using Fn = std::function<absl::StatusOr<Executable>(const Graph&, const CompileOptions&)>;

  template <typename F, std::enable_if_t<std::is_invocable_r_v<absl::StatusOr<Executable>, F&,
                                                               const Graph&, const CompileOptions&>,
                                         int> = 0>
  Compiler(F fn) : fn_(std::move(fn)) {}  // NOLINT: implicit, as std::function's
  // One that takes no options.
  template <typename F,
            std::enable_if_t<std::is_invocable_r_v<absl::StatusOr<Executable>, F&, const Graph&> &&
                                 !std::is_invocable_v<F&, const Graph&, const CompileOptions&>,
                             int> = 0>
  Compiler(F fn)  // NOLINT
      : fn_([fn = std::move(fn)](const Graph& g, const CompileOptions&) mutable { return fn(g); }) {
  }

  absl::StatusOr<Executable> operator()(const Graph& graph,
                                        const CompileOptions& options = {}) const {
    return fn_(graph, options);
  }

 private:
  Fn fn_;
};

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_EXECUTABLE_H_
