#include "codegen/per_size.h"

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "graph/passes/specialize_symbols.h"
#include "graph/verifier.h"

namespace tc::codegen {
namespace {

// The sizes of one call, in the order of the executable's symbols.
using SizeKey = absl::InlinedVector<int64_t, 4>;

// Where a symbol's size is read: placeholder `arg`, dim `dim`.
struct SymbolSource {
  int64_t symbol;
  int arg, dim;
};

class PerSizeExecutable : public Executable::Impl {
 public:
  static absl::StatusOr<std::shared_ptr<PerSizeExecutable>> Create(const Graph& graph,
                                                                   Compiler inner,
                                                                   const CompileOptions& options,
                                                                   int capacity) {
    auto exe = std::shared_ptr<PerSizeExecutable>(
        new PerSizeExecutable(graph.Clone(), std::move(inner), options, capacity));
    TC_RETURN_IF_ERROR(exe->FindSources());
    SymbolValues hints;
    SizeKey key;
    for (const SymbolSource& s : exe->sources_) {
      const int64_t hint = DimHint(SymbolDim(s.symbol));
      hints[s.symbol] = hint;
      key.push_back(hint);
    }
    const absl::Time start = absl::Now();
    TC_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> first, exe->Plan(hints));
    exe->first_ = first;
    std::lock_guard<std::mutex> lock(exe->mu_);
    exe->stats_.plan_seconds += absl::ToDoubleSeconds(absl::Now() - start);
    exe->Insert(key, std::move(first));
    return exe;
  }

  absl::Status Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const override {
    const std::vector<Value*>& placeholders = graph_.placeholders();
    if (args.size() != placeholders.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected ", placeholders.size(), " arguments, got ", args.size()));
    }
    SizeKey key;
    for (const SymbolSource& s : sources_) {
      const Tensor& t = args[s.arg];
      if (!t.defined() || t.dim() != placeholders[s.arg]->type().rank()) return NoSize(args, s.arg);
      key.push_back(t.size(s.dim));
    }
    TC_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> plan, Find(key, args));
    return plan->Run(args, outputs);
  }

  int num_outputs() const override { return first_->num_outputs(); }
  DimOrder output_order(int i) const override { return first_->output_order(i); }
  PlannedMemory planned_memory() const override { return first_->planned_memory(); }
  PlanCacheStats plan_cache() const override {
    std::lock_guard<std::mutex> lock(mu_);
    PlanCacheStats stats = stats_;
    stats.plans = static_cast<int64_t>(lru_.size());
    return stats;
  }

 private:
  using Lru = std::list<std::pair<SizeKey, std::shared_ptr<const Executable>>>;

  PerSizeExecutable(Graph graph, Compiler inner, CompileOptions options, int capacity)
      : graph_(std::move(graph)),
        inner_(std::move(inner)),
        options_(std::move(options)),
        capacity_(std::max(capacity, 1)) {}

  // Each symbol's first place as a whole dim of a placeholder.
  absl::Status FindSources() {
    absl::flat_hash_set<int64_t> found;
    const std::vector<Value*>& placeholders = graph_.placeholders();
    for (int a = 0; a < static_cast<int>(placeholders.size()); ++a) {
      const Shape& shape = placeholders[a]->type().shape;
      for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
        std::optional<int64_t> symbol = SymbolIndex(shape[d]);
        if (symbol && found.insert(*symbol).second) sources_.push_back({*symbol, a, d});
      }
    }
    for (int64_t symbol : GraphSymbols(graph_)) {
      if (!found.contains(symbol)) {
        return absl::InvalidArgumentError(
            absl::StrCat("the graph's dims mention s", symbol,
                         ", but no placeholder has it as a whole dim: its size cannot be read "
                         "from the arguments"));
      }
    }
    return absl::OkStatus();
  }

  std::vector<ShapeToBind> ToBind(absl::Span<const Tensor> args) const {
    std::vector<ShapeToBind> shapes;
    const std::vector<Value*>& placeholders = graph_.placeholders();
    for (size_t i = 0; i < placeholders.size(); ++i) {
      if (!args[i].defined()) continue;
      shapes.push_back({placeholders[i]->type().shape, args[i].shape(),
                        absl::StrCat("argument ", i, " (%", placeholders[i]->name(), ")")});
    }
    return shapes;
  }

  // Why argument `arg` gives no size: undefined, or of another rank.
  absl::Status NoSize(absl::Span<const Tensor> args, int arg) const {
    const Value* p = graph_.placeholders()[arg];
    return absl::InvalidArgumentError(absl::StrCat(
        "argument ", arg, " (%", p->name(), "): expected ", p->type().ToString(), ", got ",
        args[arg].defined() ? args[arg].type().ToString() : "an undefined tensor"));
  }

  absl::StatusOr<std::shared_ptr<const Executable>> Plan(const SymbolValues& values) const {
    TC_ASSIGN_OR_RETURN(const Graph graph, Specialized(graph_, values));
    TC_RETURN_IF_ERROR(Verify(graph));
    TC_ASSIGN_OR_RETURN(Executable exe, inner_(graph, options_));
    if (first_ != nullptr) {
      for (int i = 0; i < exe.num_outputs(); ++i) {
        if (exe.output_order(i) != first_->output_order(i)) {
          return absl::InternalError(absl::StrCat("the plan of one size gives output ", i,
                                                  " in another layout than the first"));
        }
      }
    }
    return std::make_shared<const Executable>(std::move(exe));
  }

  absl::StatusOr<std::shared_ptr<const Executable>> Find(const SizeKey& key,
                                                         absl::Span<const Tensor> args) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (it->first == key) {
        ++stats_.hits;
        lru_.splice(lru_.begin(), lru_, it);
        return lru_.front().second;
      }
    }
    // A new size: bound in full (the error names a dim that disagrees),
    // planned, kept. Calls wait for it: plans are made rarely.
    TC_ASSIGN_OR_RETURN(const SymbolValues values, BindSymbols(ToBind(args)));
    const absl::Time start = absl::Now();
    TC_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> plan, Plan(values));
    stats_.plan_seconds += absl::ToDoubleSeconds(absl::Now() - start);
    ++stats_.misses;
    Insert(key, plan);
    return plan;
  }

  // With mu_ held.
  void Insert(const SizeKey& key, std::shared_ptr<const Executable> plan) const {
    lru_.emplace_front(key, std::move(plan));
    while (static_cast<int>(lru_.size()) > capacity_) {
      lru_.pop_back();
      ++stats_.evictions;
    }
  }

  const Graph graph_;
  const Compiler inner_;
  const CompileOptions options_;
  const int capacity_;
  std::vector<SymbolSource> sources_;
  std::shared_ptr<const Executable> first_;  // the hints' plan: fixes output layouts
  // Guards lru_ and stats_. A std::mutex rather than absl::Mutex, as
  // codegen/program.h's pool: ThreadSanitizer sees Debian's uninstrumented
  // Abseil locks as no synchronization at all.
  mutable std::mutex mu_;
  mutable Lru lru_;  // most recently used first
  mutable PlanCacheStats stats_;
};

}  // namespace

Compiler PerSize(Compiler inner, PerSizeOptions options) {
  return [inner = std::move(inner), options](
             const Graph& graph,
             const CompileOptions& compile_options) -> absl::StatusOr<Executable> {
    if (!HasSymbolicDims(graph)) return inner(graph, compile_options);
    TC_ASSIGN_OR_RETURN(std::shared_ptr<PerSizeExecutable> exe,
                        PerSizeExecutable::Create(graph, inner, compile_options, options.capacity));
    return Executable(std::move(exe));
  };
}

}  // namespace tc::codegen
