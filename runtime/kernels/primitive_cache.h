// Reusing oneDNN work across calls. Creating a primitive costs 50-475 us and
// executing one 0.2-0.4 us, so a kernel describes its call by a key (op,
// shapes, strides, attributes), builds a OneDnnPlan (primitives, the memories
// between them) the first time it sees the key, and afterwards only binds the
// tensors' data pointers and executes: no primitive is created and nothing is
// allocated by tensorcut after the first call (oneDNN 2.6 itself still builds
// a small argument map inside each execute). Plans are never evicted: code
// calling with ever new shapes keeps one per shape.
//
//   PrimitiveKey key(PrimitiveKey::kMatmul);
//   key.Add(a).Add(b).Add(y);
//   OneDnnPlan& plan = CachedPlan(key, [&](OneDnnPlan& p) {
//     dnnl::matmul::primitive_desc pd(...);
//     p.Add(dnnl::matmul(pd), {{DNNL_ARG_SRC, p.External(0, pd.src_desc())}, ...});
//   });
//   plan.Run({a.raw_data(), b.raw_data(), y.raw_data()});
//
// Plans are per thread, so concurrent eager calls never share memories.
//
// A frozen operand (runtime/tensor.h: a frozen inference program's weight)
// may be packed: reordered once into the layout the primitive prefers
// (format_tag::any) and kept in the plan, which holds the tensor it packed so
// that its storage, and so its address, stays its own. A run that binds
// another tensor there packs again.
#ifndef TENSORCUT_RUNTIME_KERNELS_PRIMITIVE_CACHE_H_
#define TENSORCUT_RUNTIME_KERNELS_PRIMITIVE_CACHE_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/tensor.h"

namespace tc::kernels {

// What identifies a oneDNN call: a kind and up to kCapacity integers, kept
// inline so that building and hashing a key allocates nothing.
class PrimitiveKey {
 public:
  enum Kind : int64_t {
    kMatmul,
    kConvolution,
    kPooling,
    kPoolingBackward,
    kLayerNorm,
    kLayerNormBackward,
    kSoftmax,
    kLogSoftmax,
    kReduction,
    kReorder,
  };
  static constexpr int kCapacity = 96;

  explicit PrimitiveKey(Kind kind) { Add(kind); }

  PrimitiveKey& Add(int64_t v);
  PrimitiveKey& Add(absl::Span<const int64_t> values);  // the count, then the values
  PrimitiveKey& Add(const Tensor& t);                   // dtype, shape and strides

  // False when the call did not fit: such a call is not cached.
  bool fits() const { return size_ <= kCapacity; }

  friend bool operator==(const PrimitiveKey& a, const PrimitiveKey& b) {
    return a.size_ == b.size_ &&
           std::equal(a.values_.begin(), a.values_.begin() + std::min(a.size_, kCapacity),
                      b.values_.begin());
  }
  template <typename H>
  friend H AbslHashValue(H h, const PrimitiveKey& k) {
    return H::combine_contiguous(std::move(h), k.values_.data(), std::min(k.size_, kCapacity));
  }

 private:
  std::array<int64_t, kCapacity> values_{};
  int size_ = 0;
};

// Primitives run in order over memories that are either bound to a caller's
// pointer at each run (external) or owned by the plan (a reorder's output, a
// workspace), allocated once.
class OneDnnPlan {
 public:
  // A memory bound to `pointers[slot]` of each Run. A plan whose external
  // memories are tiny (kTinyOpBytes) runs on one thread.
  dnnl::memory External(int slot, const dnnl::memory::desc& desc);
  // A memory the plan owns, reused by every run.
  dnnl::memory Internal(const dnnl::memory::desc& desc);
  void Add(const dnnl::primitive& primitive, std::vector<std::pair<int, dnnl::memory>> args);
  // A memory of layout `packed` holding the frozen tensor of external
  // `slot` (layout `plain`) reordered, by the run that first binds it. At
  // most one per plan.
  dnnl::memory Packed(int slot, const dnnl::memory::desc& plain, const dnnl::memory::desc& packed);

  // Binds the external memories to `pointers` and executes every primitive;
  // `packed`: the tensor at the packed slot's pointer, when the plan has one.
  void Run(absl::Span<void* const> pointers, const Tensor& packed = Tensor());
  // A plan its builder left empty: the call is not one oneDNN serves well.
  bool empty() const { return steps_.empty(); }

 private:
  struct Step {
    dnnl::primitive primitive;
    std::vector<dnnl_exec_arg_t> args;  // handles of memories kept alive below
  };
  struct Pack {
    dnnl::primitive reorder;
    dnnl::memory from, to;
    Tensor source;  // the tensor last packed, held
  };
  std::optional<Pack> pack_;
  std::vector<std::pair<int, dnnl::memory>> external_;
  int64_t external_bytes_ = 0;
  std::vector<dnnl::memory> memories_;
  std::vector<Step> steps_;
};

// This thread's plan for `key`, built by `build` the first time; a key that
// does not fit gets a fresh plan per call (built, never kept).
OneDnnPlan& CachedPlan(const PrimitiveKey& key, absl::FunctionRef<void(OneDnnPlan&)> build);

// Plans built so far in the process: a compiled step that builds none after its
// first call creates no oneDNN primitive.
int64_t OneDnnPlansBuilt();
// Frozen operands packed so far in the process (see above).
int64_t OneDnnPacks();

// True while some thread is inside a oneDNN execute call, so that an
// allocation counter in a single-threaded caller can tell oneDNN's own
// allocations (on the caller's thread or oneDNN's OpenMP workers) from
// tensorcut's.
bool InOneDnnExecute();

}  // namespace tc::kernels

#endif  // TENSORCUT_RUNTIME_KERNELS_PRIMITIVE_CACHE_H_
