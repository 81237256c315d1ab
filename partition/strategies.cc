#include "partition/strategies.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "partition/accounting.h"
#include "partition/min_cut.h"

namespace tc::partition {
namespace {

using ValueSet = absl::flat_hash_set<const Value*>;

int64_t TotalBytes(absl::Span<Value* const> values) {
  int64_t bytes = 0;
  for (const Value* v : values) bytes += v->type().bytes();
  return bytes;
}

// The FLOPs of the nodes the backward would run to rebuild `value` from the
// values in `available` (and graph inputs).
double RebuildFlops(const Value* value, const ValueSet& available) {
  double flops = 0;
  absl::flat_hash_set<const Node*> seen;
  std::vector<const Value*> stack = {value};
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (v->is_placeholder() || available.contains(v) || !seen.insert(v->producer()).second) {
      continue;
    }
    flops += NodeFlops(*v->producer());
    stack.insert(stack.end(), v->producer()->inputs().begin(), v->producer()->inputs().end());
  }
  return flops;
}

// What BudgetPartition needs at any budget: the cuts at both ends, and the
// values min-cut saves beyond budget 0's in knapsack order (most recompute
// FLOPs avoided per byte first), with their running byte totals.
struct BudgetPlan {
  std::vector<Value*> at_one, at_zero;
  std::vector<const Value*> candidates;
  std::vector<int64_t> prefix_bytes;  // prefix_bytes[k]: bytes of candidates[0, k)
  int64_t span = 0;                   // TotalBytes(at_one) - TotalBytes(at_zero)
};

absl::StatusOr<BudgetPlan> MakeBudgetPlan(const Graph& joint, const JointLayout& layout) {
  BudgetPlan plan;
  TC_ASSIGN_OR_RETURN(plan.at_one, MinCutSavedValues(joint, layout, MinCutOptions{}));
  TC_ASSIGN_OR_RETURN(plan.at_zero,
                      MinCutSavedValues(joint, layout, {.may_recompute = IsRecomputable}));
  plan.span = TotalBytes(plan.at_one) - TotalBytes(plan.at_zero);

  const ValueSet at_zero(plan.at_zero.begin(), plan.at_zero.end());
  std::vector<std::pair<double, const Value*>> by_ratio;  // (FLOPs per byte, value)
  for (const Value* v : plan.at_one) {
    // Pinning a graph input changes nothing: it is never recomputed.
    if (v->is_placeholder() || at_zero.contains(v)) continue;
    const int64_t bytes = v->type().bytes();
    const double flops = RebuildFlops(v, at_zero);
    by_ratio.push_back({bytes == 0 ? std::numeric_limits<double>::infinity() : flops / bytes, v});
  }
  std::stable_sort(by_ratio.begin(), by_ratio.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  plan.prefix_bytes = {0};
  for (const auto& [ratio, v] : by_ratio) {
    plan.candidates.push_back(v);
    plan.prefix_bytes.push_back(plan.prefix_bytes.back() + v->type().bytes());
  }
  return plan;
}

absl::StatusOr<std::vector<Value*>> BudgetSavedValues(const Graph& joint, const JointLayout& layout,
                                                      const BudgetPlan& plan, double budget) {
  if (budget == 1) return plan.at_one;
  if (budget == 0) return plan.at_zero;
  const double capacity = budget * static_cast<double>(plan.span);
  MinCutOptions options{.may_recompute = IsRecomputable};
  for (size_t k = 0; k < plan.candidates.size() && plan.prefix_bytes[k + 1] <= capacity; ++k) {
    options.pinned.insert(plan.candidates[k]);
  }
  return MinCutSavedValues(joint, layout, options);
}

}  // namespace

absl::StatusOr<PartitionResult> RecomputeAllPartition(const Graph& joint,
                                                      const JointLayout& layout) {
  TC_ASSIGN_OR_RETURN(std::vector<Value*> saved,
                      MinCutSavedValues(joint, layout, {.may_recompute = IsRecomputable}));
  return AssemblePartition(joint, layout, saved);
}

absl::StatusOr<PartitionResult> BudgetPartition(const Graph& joint, const JointLayout& layout,
                                                double budget) {
  TC_RETURN_IF_ERROR(CheckActivationMemoryBudget(budget));
  if (budget == 1) return MinCutPartition(joint, layout);
  if (budget == 0) return RecomputeAllPartition(joint, layout);
  TC_ASSIGN_OR_RETURN(BudgetPlan plan, MakeBudgetPlan(joint, layout));
  TC_ASSIGN_OR_RETURN(std::vector<Value*> saved, BudgetSavedValues(joint, layout, plan, budget));
  return AssemblePartition(joint, layout, saved);
}

PartitionFn MemoryBudgetPartitioner(double budget) {
  return [budget](const Graph& joint, const JointLayout& layout) {
    return BudgetPartition(joint, layout, budget);
  };
}

absl::Status CheckActivationMemoryBudget(double budget) {
  if (budget >= 0 && budget <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("activation_memory_budget must be in [0, 1], got %g", budget));
}

absl::StatusOr<int64_t> SavedBytesAtBudget(const Graph& joint, const JointLayout& layout,
                                           double budget) {
  TC_RETURN_IF_ERROR(CheckActivationMemoryBudget(budget));
  TC_ASSIGN_OR_RETURN(const BudgetPlan plan, MakeBudgetPlan(joint, layout));
  return TotalBytes(plan.at_zero) + static_cast<int64_t>(budget * static_cast<double>(plan.span));
}

absl::StatusOr<std::vector<ParetoPoint>> BudgetSweep(const Graph& joint, const JointLayout& layout,
                                                     absl::Span<const double> budgets) {
  for (double budget : budgets) {
    TC_RETURN_IF_ERROR(CheckActivationMemoryBudget(budget));
  }
  TC_ASSIGN_OR_RETURN(BudgetPlan plan, MakeBudgetPlan(joint, layout));
  std::vector<ParetoPoint> points;
  for (double budget : budgets) {
    TC_ASSIGN_OR_RETURN(std::vector<Value*> saved, BudgetSavedValues(joint, layout, plan, budget));
    TC_ASSIGN_OR_RETURN(PartitionResult part, AssemblePartition(joint, layout, saved));
    points.push_back(
        {budget, TotalBytes(saved), SavedActivationBytes(joint, part), Recomputed(part).flops});
  }
  return points;
}

namespace {

struct Registry {
  absl::Mutex mutex;
  std::vector<std::pair<std::string, PartitionerFactory>> factories ABSL_GUARDED_BY(mutex);
};

Registry& Registered() {
  static Registry* registry = new Registry;
  return *registry;
}

const std::vector<std::string>& BuiltInNames() {
  static const std::vector<std::string>* names =
      new std::vector<std::string>{"default", "min_cut", "budget", "recompute_all"};
  return *names;
}

}  // namespace

bool RegisterPartitioner(std::string name, PartitionerFactory factory) {
  const std::vector<std::string>& built_in = BuiltInNames();
  if (std::find(built_in.begin(), built_in.end(), name) != built_in.end()) return false;
  Registry& registry = Registered();
  absl::MutexLock lock(&registry.mutex);
  for (const auto& [known, unused] : registry.factories) {
    if (known == name) return false;
  }
  registry.factories.emplace_back(std::move(name), std::move(factory));
  return true;
}

absl::StatusOr<PartitionFn> PartitionerByName(absl::string_view name, double budget) {
  if (name == "default") return PartitionFn(DefaultPartition);
  if (name == "min_cut") return PartitionFn(MinCutPartition);
  if (name == "recompute_all") return PartitionFn(RecomputeAllPartition);
  if (name == "budget") {
    TC_RETURN_IF_ERROR(CheckActivationMemoryBudget(budget));
    return MemoryBudgetPartitioner(budget);
  }
  {
    Registry& registry = Registered();
    absl::MutexLock lock(&registry.mutex);
    for (const auto& [known, factory] : registry.factories) {
      if (known == name) return factory(budget);
    }
  }
  return absl::InvalidArgumentError(absl::StrFormat("unknown partition strategy \"%s\"; known: %s",
                                                    name, absl::StrJoin(StrategyNames(), ", ")));
}

std::vector<std::string> StrategyNames() {
  std::vector<std::string> names = BuiltInNames();
  Registry& registry = Registered();
  absl::MutexLock lock(&registry.mutex);
  for (const auto& [name, unused] : registry.factories) names.push_back(name);
  return names;
}

}  // namespace tc::partition
