#include "runtime/kernels/primitive_cache.h"

#include <atomic>
#include <memory>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "runtime/kernels/onednn.h"
#include "runtime/threads.h"

namespace tc::kernels {
namespace {

std::atomic<int64_t> plans_built{0};
std::atomic<int64_t> packs{0};
std::atomic<int> executes_running{0};

}  // namespace

PrimitiveKey& PrimitiveKey::Add(int64_t v) {
  if (size_ < kCapacity) values_[size_] = v;
  ++size_;
  return *this;
}

PrimitiveKey& PrimitiveKey::Add(absl::Span<const int64_t> values) {
  Add(static_cast<int64_t>(values.size()));
  for (int64_t v : values) Add(v);
  return *this;
}

PrimitiveKey& PrimitiveKey::Add(const Tensor& t) {
  Add(static_cast<int64_t>(t.dtype()));
  Add(t.shape());
  return Add(t.strides());
}

dnnl::memory OneDnnPlan::External(int slot, const dnnl::memory::desc& desc) {
  dnnl::memory m(desc, Engine(), DNNL_MEMORY_NONE);
  external_.emplace_back(slot, m);
  external_bytes_ += desc.get_size();
  return m;
}

dnnl::memory OneDnnPlan::Internal(const dnnl::memory::desc& desc) {
  dnnl::memory m(desc, Engine());
  memories_.push_back(m);
  return m;
}

void OneDnnPlan::Add(const dnnl::primitive& primitive,
                     std::vector<std::pair<int, dnnl::memory>> args) {
  Step step{primitive, {}};
  for (auto& [arg, memory] : args) {
    step.args.push_back({arg, memory.get()});
    memories_.push_back(memory);
  }
  steps_.push_back(std::move(step));
}

dnnl::memory OneDnnPlan::Packed(int slot, const dnnl::memory::desc& plain,
                                const dnnl::memory::desc& packed) {
  const dnnl::memory from = External(slot, plain), to = Internal(packed);
  pack_ = Pack{dnnl::reorder(from, to), from, to, Tensor()};
  return to;
}

void OneDnnPlan::Run(absl::Span<void* const> pointers, const Tensor& packed) {
  for (auto& [slot, memory] : external_) memory.set_data_handle(pointers[slot]);
  std::optional<SingleThreaded> one_thread;
  if (external_bytes_ < kTinyOpBytes) one_thread.emplace();
  ++executes_running;
  // The tensor held since the last pack keeps its address its own: the same
  // address is the same frozen bytes.
  if (pack_ && !(pack_->source.defined() && pack_->source.raw_data() == packed.raw_data())) {
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, pack_->from.get()},
                                    {DNNL_ARG_TO, pack_->to.get()}};
    dnnl_primitive_execute(pack_->reorder.get(), Stream().get(), 2, args);
    pack_->source = packed;
    ++packs;
  }
  for (const Step& step : steps_) {
    dnnl_primitive_execute(step.primitive.get(), Stream().get(), static_cast<int>(step.args.size()),
                           step.args.data());
  }
  --executes_running;
  Stream().wait();
}

OneDnnPlan& CachedPlan(const PrimitiveKey& key, absl::FunctionRef<void(OneDnnPlan&)> build) {
  thread_local absl::flat_hash_map<PrimitiveKey, std::unique_ptr<OneDnnPlan>> plans;
  thread_local std::unique_ptr<OneDnnPlan> uncached;
  auto build_new = [&] {
    auto plan = std::make_unique<OneDnnPlan>();
    build(*plan);
    ++plans_built;
    return plan;
  };
  if (!key.fits()) {
    uncached = build_new();
    return *uncached;
  }
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, build_new()).first;
  return *it->second;
}

int64_t OneDnnPlansBuilt() { return plans_built.load(); }

int64_t OneDnnPacks() { return packs.load(); }

bool InOneDnnExecute() { return executes_running.load(std::memory_order_relaxed) > 0; }

}  // namespace tc::kernels
