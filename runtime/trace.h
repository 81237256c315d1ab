// The tracer: runs ordinary tensor code once and records the op calls it makes
// into a Graph instead of running kernels.
//
//   Tensor w = tc::randn({2, 3}), b = tc::zeros({2});
//   absl::StatusOr<TracedProgram> p = Trace(
//       [&](const Tree<Tensor>& in) {
//         ScopedTraceScope scope("fc");
//         return Tree<Tensor>::MakeLeaf(tc::relu(tc::linear(in.leaf(), w, b)));
//       },
//       Tree<Tensor>::MakeLeaf(tc::randn({4, 3})), {{"fc.weight", w}, {"fc.bias", b}});
//   // ToString(p->graph):
//   //   graph(%p_fc_weight: f32[2,3], %p_fc_bias: f32[2], %arg: f32[4,3]) {
//   //     %0: f32[4,2] = linear(%arg, %p_fc_weight, %p_fc_bias)  # fc
//   //     %1: f32[4,2] = relu(%0)  # fc
//   //     return (%1)
//   //   }
//
// While a Tracer is in scope it is the innermost dispatch hook of its thread.
// An op call with at least one input standing for a value of this trace, and
// every creation op (full, arange), becomes a node; its results are tensors
// with a type and contiguous strides but no storage, whose `trace` slot names
// the node's result. Calls on concrete tensors only run eagerly as usual. A
// concrete tensor used by a recorded op (a randn drawn inside the traced code,
// a constant captured by it) is lifted: it becomes a placeholder of its own,
// and its value is kept beside the graph.
//
// A traced tensor has no data: reading its elements (at, item, to_vector) is
// a bug in the traced code, as the values are not known until the graph runs.
#ifndef TENSORCUT_RUNTIME_TRACE_H_
#define TENSORCUT_RUNTIME_TRACE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/ir.h"
#include "graph/symbolic.h"
#include "graph/tree.h"
#include "runtime/dispatch.h"
#include "runtime/tensor.h"

namespace tc {

// What the `trace` slot of a TensorImpl holds: the graph value the tensor
// stands for, and which tracer made it (so a tensor escaping one trace is
// never read as a value of another).
struct TraceMeta {
  uint64_t tracer_id;
  Value* value;
};

// Pushes one name on this thread's scope stack while in scope. The nn module
// layer opens one per module forward with the module's attribute name, so
// the joined stack is the module's FQN ("encoder.0.linear"); each recorded
// node takes the joined stack as its source. Empty names are skipped. Costs
// little when no tracer is active.
class ScopedTraceScope {
 public:
  explicit ScopedTraceScope(absl::string_view name);
  ~ScopedTraceScope();
  ScopedTraceScope(const ScopedTraceScope&) = delete;
  ScopedTraceScope& operator=(const ScopedTraceScope&) = delete;

 private:
  bool pushed_;
  int uncaught_exceptions_;
};

// The scope stack joined by '.', "" when empty.
std::string CurrentTraceScope();

// Records op calls into graph() while in scope (see the file comment). Most
// users call Trace() below; the joint-graph builder drives a Tracer directly.
class Tracer : public DispatchHook {
 public:
  Tracer();
  // Uninstalls the hook and restores the tensors given to Bind.
  ~Tracer() override;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // A new placeholder and a tensor (without storage) standing for it.
  Tensor AddInput(absl::string_view name, const TensorType& type);
  // A new placeholder for which `tensor` itself stands until the tracer ends
  // (parameters and buffers, which the traced code reads from its captures).
  Value* Bind(absl::string_view name, const Tensor& tensor);
  // The value `tensor` stands for: a traced tensor's own, or for a concrete
  // one its lifted constant placeholder (created on first use).
  absl::StatusOr<Value*> ValueOf(const Tensor& tensor);
  // True if `tensor` stands for a value of this trace.
  bool IsTraced(const Tensor& tensor) const;

  Graph& graph() { return graph_; }
  // The values of the lifted constants, in the order of their placeholders.
  const std::vector<Tensor>& constants() const { return constants_; }
  const std::vector<Value*>& constant_placeholders() const { return constant_placeholders_; }

  absl::StatusOr<TensorList> Dispatch(
      OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs,
      absl::Span<const TensorType> out_types,
      absl::FunctionRef<absl::StatusOr<TensorList>()> next) override;
  // A random op's seed and offset, as traced values: the placeholders
  // "rng_seed" and "rng_offset" (made on first use), the offset plus the
  // counters the trace drew before. `gen` must be the default generator.
  std::optional<RandomState> RandomStateFor(Generator& gen, int64_t n) override;
  // The random inputs' placeholders (nullptr before a random op ran), and
  // how many counters the trace drew (a dim: symbolic over a symbolic batch).
  const Value* random_seed() const { return random_seed_; }
  const Value* random_offset() const { return random_offset_; }
  int64_t random_numbers() const { return random_numbers_; }

 private:
  Tensor MakeTraced(Value* value) const;

  uint64_t id_;
  Graph graph_;
  std::vector<Tensor> constants_;
  std::vector<Value*> constant_placeholders_;
  absl::flat_hash_map<const TensorImpl*, Value*> lifted_;
  Value* random_seed_ = nullptr;
  Value* random_offset_ = nullptr;
  int64_t random_numbers_ = 0;
  // Tensors given to Bind and the trace slot each had before.
  std::vector<std::pair<Tensor, std::shared_ptr<TraceMeta>>> bound_;
  ScopedDispatchHook hook_;  // last: installed once everything else exists
};

// What one placeholder of a traced graph stands for.
struct InputDescriptor {
  // kRandomSeed and kRandomOffset: the default generator's seed and offset at
  // each call, which the traced random ops draw from (i64 scalars).
  enum class Kind { kParameter, kBuffer, kUserInput, kConstant, kRandomSeed, kRandomOffset };
  Kind kind;
  // The parameter or buffer FQN ("fc.weight"), the user input's path in the
  // input tree ("inputs[0][\"x\"]"), for a constant "constant 0", else
  // "random seed" or "random offset".
  std::string name;
  // The constant's index in TracedProgram::constants; -1 for other kinds.
  int constant_index = -1;
};

// A traced graph's random inputs, and what one call of it draws from the
// default generator: as many counters as its random ops' elements, exactly
// as running the traced code eagerly would, so that a call and an eager run
// from the same generator state draw the same numbers.
struct RandomInputs {
  int seed = -1, offset = -1;  // placeholder indices; -1 without random ops
  int64_t numbers = 0;         // a dim: symbolic over a symbolic batch

  // Writes the generator's seed and offset into the call's `args` (i64
  // scalars at the two indices) and advances it by `numbers`, its symbols
  // taking `sizes`; an error names a symbol without one.
  absl::Status Draw(absl::Span<Tensor> args, const SymbolValues& sizes = {}) const;
};

struct TracedProgram {
  // Placeholders: parameters, then buffers (each in the given order), then
  // the flattened user inputs, then the lifted constants and the random
  // inputs, in the order the traced code first used them. Outputs: the
  // flattened tensor leaves of the result.
  Graph graph;
  std::vector<InputDescriptor> inputs;  // one per placeholder
  std::vector<Tensor> constants;        // the lifted constants' values
  TreeSpec in_spec;                     // the example inputs' structure
  TreeSpec out_spec;                    // the result's, scalars and None kept
  RandomInputs random;
};

// Which dims of the user inputs the traced graph makes symbolic
// (graph/symbolic.h), by the input's placeholder name ("arg0", "arg0_x"):
// {{"arg0", {0}}} traces any batch size of input 0. Dims may count from the
// end (-1). Dims whose example sizes are equal share one symbol, so the
// batch of the inputs and of the targets is one s0.
using DynamicDims = absl::flat_hash_map<std::string, std::vector<int64_t>>;

// Traces `fn` on `example_inputs` (see the file comment). Parameters and
// buffers are the tensors `fn` captures, with their FQNs; they become the
// placeholders "p_<fqn>" and "b_<fqn>" ('.' as '_'), user inputs "arg<path>"
// ("arg0_x" for inputs[0]["x"]), constants "c_<index>". Autograd does not
// record while tracing. A tc::Error thrown by `fn` is returned as its status
// with " (at <scope>)" naming the trace scope it was thrown in. `dynamic`
// names an input that does not exist, or a dim out of its range: an error.
absl::StatusOr<TracedProgram> Trace(const std::function<Tree<Tensor>(const Tree<Tensor>&)>& fn,
                                    const Tree<Tensor>& example_inputs,
                                    const std::vector<std::pair<std::string, Tensor>>& params = {},
                                    const std::vector<std::pair<std::string, Tensor>>& buffers = {},
                                    const DynamicDims& dynamic = {});

// Whether a call's tensor of type `got` fits a placeholder of type `want`:
// its dtype and rank, and every dim that is a number (symbolic ones are bound
// afterwards, BindSymbols).
bool FitsPlaceholder(const TensorType& got, const TensorType& want);

// The arguments of one call of `program`'s graph: `params`, `buffers`, the
// flattened `inputs` (checked against in_spec and the placeholder types),
// the constants, and new i64 scalars for the random inputs, which
// program.random.Draw fills. An InvalidArgumentError names the first
// mismatch. Over symbolic dims, the inputs' sizes bind the symbols
// (BindSymbols), written to `sizes` when given.
absl::StatusOr<std::vector<Tensor>> GraphArguments(
    const TracedProgram& program, const Tree<Tensor>& inputs,
    const std::vector<std::pair<std::string, Tensor>>& params = {},
    const std::vector<std::pair<std::string, Tensor>>& buffers = {}, SymbolValues* sizes = nullptr);

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_TRACE_H_
