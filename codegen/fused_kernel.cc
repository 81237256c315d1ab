#include "codegen/fused_kernel.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/kernels/strided.h"
#include "runtime/threads.h"

namespace tc::codegen {
namespace {

// Reads one input, broadcast to the group's shape, in blocks of the
// iteration order (the outputs' memory order: dims in `order`, outermost
// first).
class InputReader {
 public:
  InputReader(const Tensor& t, const Shape& shape, absl::Span<const int> order)
      : base_(static_cast<const char*>(t.raw_data())),
        dtype_(t.dtype()),
        item_(ItemSize(t.dtype())) {
    // Coalesce dims as ForEachOffset does: a contiguous input becomes one dim
    // of stride 1, a bias broadcast over rows [rows (stride 0), cols (stride 1)].
    const int64_t lead = static_cast<int64_t>(shape.size()) - t.dim();
    for (const int d : order) {
      if (shape[d] == 1) continue;
      // t's stride along d, 0 where t is broadcast (a missing or size-1 dim).
      const int64_t td = static_cast<int64_t>(d) - lead;
      const int64_t stride = td < 0 || t.shape()[td] == 1 ? 0 : t.strides()[td];
      if (!dims_.empty() && strides_.back() == stride * shape[d]) {
        dims_.back() *= shape[d];
        strides_.back() = stride;
      } else {
        dims_.push_back(shape[d]);
        strides_.push_back(stride);
      }
    }
    if (dims_.empty()) dims_ = {NumElements(shape)}, strides_ = {0};  // one element
    in_place_ = dims_.size() == 1 && strides_[0] == 1;
    // Broadcast along every dim but a last one of stride 1 (or 0) whose size
    // divides the block: every full block reads the same elements.
    const int last = static_cast<int>(dims_.size()) - 1;
    same_every_block_ =
        !in_place_ && strides_[last] <= 1 && FusedKernel::kBlockSize % dims_[last] == 0;
    for (int d = 0; d < last; ++d) same_every_block_ = same_every_block_ && strides_[d] == 0;
  }

  // Whether every full block reads the same elements: a scalar, or a
  // per-channel vector broadcast over channels-last rows.
  bool same_every_block() const { return same_every_block_; }

  // Elements [start, start + len) of the input: in place when contiguous,
  // else gathered into `buffer`.
  const void* Read(int64_t start, int64_t len, void* buffer) const {
    if (in_place_) return base_ + start * item_;
    kernels::VisitElementBits(
        dtype_, [&](auto bits) { Gather(start, len, static_cast<decltype(bits)*>(buffer)); });
    return buffer;
  }

 private:
  template <typename U>
  void Gather(int64_t start, int64_t len, U* out) const {
    const U* base = reinterpret_cast<const U*>(base_);
    const int last = static_cast<int>(dims_.size()) - 1;
    absl::InlinedVector<int64_t, 8> index(dims_.size());
    int64_t row = 0;  // the offset of `index` with its last coordinate 0
    int64_t rest = start;
    for (int d = last; d >= 0; --d) {
      index[d] = rest % dims_[d];
      rest /= dims_[d];
      if (d < last) row += index[d] * strides_[d];
    }
    const int64_t inner = dims_[last], step = strides_[last];
    int64_t col = index[last];
    for (int64_t k = 0;;) {
      const int64_t run = std::min(inner - col, len - k);
      if (step == 0) {  // broadcast along the row: a fill, which vectorises
        std::fill_n(out + k, run, base[row]);
      } else {
        for (int64_t j = 0; j < run; ++j) out[k + j] = base[row + (col + j) * step];
      }
      k += run;
      if (k == len) return;
      col = 0;
      for (int d = last - 1; d >= 0; --d) {
        row += strides_[d];
        if (++index[d] < dims_[d]) break;
        row -= dims_[d] * strides_[d];
        index[d] = 0;
      }
    }
  }

  const char* base_;
  DType dtype_;
  int64_t item_;
  absl::InlinedVector<int64_t, 8> dims_, strides_;
  bool in_place_ = false;
  bool same_every_block_ = false;
};

// How a sum runs in an iteration order: over its outermost dims (each of
// the innermost `kept` elements accumulates one output) or its innermost
// (each row of `reduced` elements sums into one output).
struct SumShape {
  bool valid = false;
  bool inner = false;
  int64_t kept = 1, reduced = 1;
};

SumShape ClassifySum(const Shape& shape, absl::Span<const int> order, absl::Span<const int> dims) {
  SumShape sum;
  absl::InlinedVector<int, 8> iteration(order.begin(), order.end());
  if (iteration.empty()) {
    for (int d = 0; d < static_cast<int>(shape.size()); ++d) iteration.push_back(d);
  }
  int transitions = 0, last_kept = -1;
  bool first = true, previous_reduced = false;
  for (const int d : iteration) {
    if (shape[d] == 1) continue;
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!first && reduced != previous_reduced) ++transitions;
    if (first) sum.inner = !reduced;
    first = false;
    previous_reduced = reduced;
    if (reduced) {
      sum.reduced *= shape[d];
    } else {
      if (d < last_kept) return sum;  // the output is row-major over kept dims
      last_kept = d;
      sum.kept *= shape[d];
    }
  }
  if (sum.reduced == 1 || transitions > 1) return sum;
  if (transitions == 0) sum.inner = true;  // every dim summed: one row
  sum.valid = true;
  return sum;
}

// Calls f(T{}) with T the sum's element type (f32 or f64).
template <typename F>
void VisitSumDType(DType dtype, F&& f) {
  if (dtype == DType::kF32) {
    f(float{});
  } else {
    f(double{});
  }
}

// Sums v[0, len) in a fixed order: 16 lanes, then the lanes in order, so
// that the compiler can vectorise it and the bits do not depend on threads.
template <typename T>
T LaneSum(const T* v, int64_t len) {
  constexpr int kLanes = 16;
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += v[i + l];
  }
  for (int l = 0; i < len; ++i, ++l) lanes[l] += v[i];
  T total = 0;
  for (int l = 0; l < kLanes; ++l) total += lanes[l];
  return total;
}

// acc[(start + i) % kept] += v[i] for i in [0, len), in runs that vectorise.
template <typename T>
void AccumulateOuter(const T* v, int64_t start, int64_t len, int64_t kept, T* acc) {
  int64_t k = start % kept;
  for (int64_t i = 0; i < len;) {
    const int64_t run = std::min(len - i, kept - k);
    for (int64_t j = 0; j < run; ++j) acc[k + j] += v[i + j];
    i += run;
    k = 0;
  }
}

// Adds block [start, start + len) of a summed value, v, to its sum: to the
// chunk's accumulators `acc` (outer) or to the output's rows (inner; a row
// longer than a block continues where the block before it left off).
template <typename T>
void AddBlockToSum(const SumShape& sum, const T* v, int64_t start, int64_t len, T* acc, T* out) {
  if (!sum.inner) {
    AccumulateOuter(v, start, len, sum.kept, acc);
  } else if (sum.reduced <= FusedKernel::kBlockSize) {
    for (int64_t i = 0; i < len; i += sum.reduced) {
      out[(start + i) / sum.reduced] = LaneSum(v + i, sum.reduced);
    }
  } else {
    const T part = LaneSum(v, len);
    T& o = out[start / sum.reduced];
    o = start % sum.reduced == 0 ? part : o + part;
  }
}

}  // namespace

bool FusedKernel::CanSum(const Shape& shape, absl::Span<const int> order,
                         absl::Span<const int> dims) {
  const SumShape sum = ClassifySum(shape, order, dims);
  if (!sum.valid) return false;
  if (!sum.inner) return sum.kept >= 16;
  // Summing no elements per result (an empty inner dim) is left to the sum
  // kernel, which writes the zeros.
  return sum.reduced > 0 && (kBlockSize % sum.reduced == 0 || sum.reduced % kBlockSize == 0);
}

FusedKernel FusedKernel::Compile(const FusionGroup& group, absl::Span<const FusedSum> sums) {
  FusedKernel kernel;
  kernel.shape_ = group.shape;
  kernel.num_inputs_ = static_cast<int>(group.inputs.size());
  absl::flat_hash_map<const Value*, int> reg;
  for (int i = 0; i < kernel.num_inputs_; ++i) reg[group.inputs[i]] = i;
  int next = kernel.num_inputs_;
  const absl::flat_hash_set<const Value*> outputs(group.outputs.begin(), group.outputs.end());
  // Registers of inputs, outputs and summed values are kept; the others are
  // reused after the last instruction reading them.
  absl::flat_hash_set<const Value*> kept = outputs;
  for (const FusedSum& sum : sums) kept.insert(sum.of);
  absl::flat_hash_map<const Value*, int> last_read;
  for (int i = 0; i < static_cast<int>(group.nodes.size()); ++i) {
    for (const Value* in : group.nodes[i]->inputs()) last_read[in] = i;
  }
  auto reusable = [&](const Value* v) {
    return reg.at(v) >= kernel.num_inputs_ && !kept.contains(v);
  };
  std::vector<int> free;
  for (int i = 0; i < static_cast<int>(group.nodes.size()); ++i) {
    const Node& node = *group.nodes[i];
    const Value* result = node.result(0);
    FusedInstr instr{node.op(),
                     node.input(node.op() == OpKind::kWhere ? 1 : 0)->type().dtype,
                     result->type().dtype,
                     -1,
                     {-1, -1, -1},
                     ElementwiseAttrsOf(node.op(), node.attrs())};
    for (int j = 0; j < node.num_inputs(); ++j) instr.src[j] = reg.at(node.input(j));
    // Operands dead after this instruction are freed: before choosing its
    // destination when their elements are at least as wide as the result's
    // (writing element k then only overwrites elements <= k, already read),
    // else after it.
    std::vector<int> free_after;
    for (const Value* in : node.inputs()) {
      auto it = last_read.find(in);
      if (it == last_read.end() || it->second != i || !reusable(in)) continue;
      const bool in_place = ItemSize(in->type().dtype) >= ItemSize(result->type().dtype);
      (in_place ? free : free_after).push_back(reg.at(in));
      last_read.erase(it);  // an operand read twice is freed once
    }
    if (outputs.contains(result) || free.empty()) {
      instr.dst = next++;
    } else {
      instr.dst = free.back();
      free.pop_back();
    }
    free.insert(free.end(), free_after.begin(), free_after.end());
    reg[result] = instr.dst;
    if (!kept.contains(result) && !last_read.contains(result)) free.push_back(instr.dst);
    kernel.program_.push_back(instr);
  }
  kernel.num_registers_ = next;
  for (const Value* out : group.outputs) {
    kernel.output_registers_.push_back(reg.at(out));
    kernel.output_dtypes_.push_back(out->type().dtype);
  }
  for (const FusedSum& sum : sums) {
    kernel.sums_.push_back({reg.at(sum.of), sum.of->type().dtype, sum.shape, sum.dims});
  }
  return kernel;
}

void FusedKernel::RunInto(absl::Span<const Tensor> inputs, absl::Span<const Tensor> outputs,
                          absl::Span<const int> order) const {
  const int64_t n = NumElements(shape_);
  const size_t num_outputs = output_registers_.size();
  if (n == 0) {  // sums of nothing are zero
    for (size_t s = 0; s < sums_.size(); ++s) {
      const Tensor& out = outputs[num_outputs + s];
      if (out.numel() > 0) std::memset(out.raw_data(), 0, out.bytes());
    }
    return;
  }
  absl::InlinedVector<int, 8> dims(order.begin(), order.end());
  if (dims.empty()) {
    for (int d = 0; d < static_cast<int>(shape_.size()); ++d) dims.push_back(d);
  }
  absl::InlinedVector<InputReader, 8> readers;
  for (const Tensor& t : inputs) readers.emplace_back(t, shape_, dims);
  absl::InlinedVector<char*, 8> out_base;
  for (size_t o = 0; o < num_outputs; ++o) {
    out_base.push_back(static_cast<char*>(outputs[o].raw_data()));
  }
  // Blocks [first, last) on the calling thread, each handed to `visit` with
  // the registers after the program ran: registers point at this thread's
  // block buffers, kept per thread so that a run allocates nothing once they
  // have grown (8-byte slots: wide enough for every dtype).
  auto run_blocks = [&](int64_t first, int64_t last, auto&& visit) {
    thread_local std::vector<uint64_t> scratch;
    if (scratch.size() < static_cast<size_t>(num_registers_ * kBlockSize)) {
      scratch.resize(num_registers_ * kBlockSize);
    }
    absl::InlinedVector<void*, 32> buffers(num_registers_), regs(num_registers_);
    for (int r = 0; r < num_registers_; ++r) buffers[r] = regs[r] = &scratch[r * kBlockSize];
    for (int64_t block = first; block < last; ++block) {
      const int64_t start = block * kBlockSize, len = std::min(kBlockSize, n - start);
      for (int i = 0; i < num_inputs_; ++i) {
        if (!readers[i].same_every_block() || block == first) {
          regs[i] = const_cast<void*>(readers[i].Read(start, len, buffers[i]));
        }
      }
      for (size_t o = 0; o < num_outputs; ++o) {
        regs[output_registers_[o]] = out_base[o] + start * ItemSize(output_dtypes_[o]);
      }
      for (const FusedInstr& instr : program_) EvalInstr(instr, regs.data(), len, start);
      visit(start, len, regs.data());
    }
  };
  const int64_t blocks = (n + kBlockSize - 1) / kBlockSize;
  // A small group stays on the calling thread, where a parallel region would
  // cost more than it saves.
  const int max_threads = n < kParallelElements ? 1 : NumThreads();
  if (sums_.empty()) {
    // Each thread takes one contiguous range of blocks.
    const int threads = std::min<int64_t>(max_threads, blocks);
    auto nothing = [](int64_t, int64_t, void* const*) {};
    if (threads == 1) {
      run_blocks(0, blocks, nothing);
      return;
    }
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), count = omp_get_num_threads();
      run_blocks(blocks * t / count, blocks * (t + 1) / count, nothing);
    }
    return;
  }

  // With sums, blocks go in kSumChunks fixed chunks of whole units (an inner
  // sum's rows longer than a block span several blocks), whatever the thread
  // count. An outer sum accumulates per chunk, then adds the chunks in order;
  // an inner sum's rows each lie in one chunk and are summed there.
  constexpr int64_t kSumChunks = 64;
  absl::InlinedVector<SumShape, 4> shapes;
  int64_t unit = 1;  // blocks
  int64_t accumulators = 0;
  for (const Sum& sum : sums_) {
    // A sum over a reshape sees the elements in the same (row-major) order.
    shapes.push_back(sum.shape == shape_ ? ClassifySum(shape_, dims, sum.dims)
                                         : ClassifySum(sum.shape, {}, sum.dims));
    if (shapes.back().inner && shapes.back().reduced > kBlockSize) {
      unit = std::lcm(unit, shapes.back().reduced / kBlockSize);
    }
    if (!shapes.back().inner) accumulators += shapes.back().kept;
  }
  const int64_t units = (blocks + unit - 1) / unit;
  const int64_t chunks = std::min(kSumChunks, units);
  // Per chunk, every outer sum's accumulators in 8-byte slots (a float sum
  // uses the first half of its slots), zeroed bytewise.
  thread_local std::vector<double> partials;
  if (partials.size() < static_cast<size_t>(chunks * accumulators)) {
    partials.resize(chunks * accumulators);
  }
  double* const partial = partials.data();  // the caller's, also for the workers
  auto run_chunk = [&](int64_t c) {
    double* chunk = partial + c * accumulators;
    // Only inner sums: no accumulators, and `partial` may be null.
    if (accumulators > 0) std::memset(chunk, 0, accumulators * sizeof(double));
    run_blocks(std::min(blocks, units * c / chunks * unit),
               std::min(blocks, units * (c + 1) / chunks * unit),
               [&](int64_t start, int64_t len, void* const* regs) {
                 double* acc = chunk;
                 for (size_t s = 0; s < sums_.size(); ++s) {
                   VisitSumDType(sums_[s].dtype, [&](auto zero) {
                     using T = decltype(zero);
                     AddBlockToSum(shapes[s], static_cast<const T*>(regs[sums_[s].reg]), start, len,
                                   reinterpret_cast<T*>(acc), outputs[num_outputs + s].data<T>());
                   });
                   if (!shapes[s].inner) acc += shapes[s].kept;
                 }
               });
  };
  const int threads = std::min<int64_t>(max_threads, chunks);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t c = 0; c < chunks; ++c) run_chunk(c);
  const double* acc = partial;
  for (size_t s = 0; s < sums_.size(); ++s) {
    if (shapes[s].inner) continue;
    const int64_t kept = shapes[s].kept;
    VisitSumDType(sums_[s].dtype, [&](auto zero) {
      using T = decltype(zero);
      T* out = outputs[num_outputs + s].data<T>();
      for (int64_t k = 0; k < kept; ++k) {
        T total = 0;
        for (int64_t c = 0; c < chunks; ++c) {
          total += reinterpret_cast<const T*>(acc + c * accumulators)[k];
        }
        out[k] = total;
      }
    });
    acc += kept;
  }
}

std::vector<std::pair<int, int>> FusedKernel::InPlacePairs() const {
  std::vector<int> last_read(num_inputs_, -1), written(output_registers_.size(), -1);
  for (int i = 0; i < static_cast<int>(program_.size()); ++i) {
    for (int r : program_[i].src) {
      if (r >= 0 && r < num_inputs_) last_read[r] = i;
    }
    for (size_t o = 0; o < output_registers_.size(); ++o) {
      if (program_[i].dst == output_registers_[o]) written[o] = i;
    }
  }
  std::vector<std::pair<int, int>> pairs;
  for (int in = 0; in < num_inputs_; ++in) {
    for (size_t o = 0; o < written.size(); ++o) {
      if (last_read[in] <= written[o]) pairs.emplace_back(in, o);
    }
  }
  return pairs;
}

std::string FusedKernel::ToString() const {
  auto r = [](int reg) { return absl::StrCat("r", reg); };
  std::vector<std::string> ins;
  for (int i = 0; i < num_inputs_; ++i) ins.push_back(r(i));
  std::string s =
      absl::StrCat("fused", ShapeToString(shape_), "(", absl::StrJoin(ins, ", "), ") {\n");
  for (const FusedInstr& instr : program_) {
    std::vector<std::string> src;
    for (int x : instr.src) {
      if (x >= 0) src.push_back(r(x));
    }
    absl::StrAppend(&s, "  ", r(instr.dst), ": ", DTypeName(instr.result_dtype), " = ",
                    OpName(instr.op), "(", absl::StrJoin(src, ", "), ")");
    if (instr.op == OpKind::kPow) absl::StrAppend(&s, " exponent=", instr.attrs.exponent);
    if (instr.op == OpKind::kDropout) absl::StrAppend(&s, " p=", instr.attrs.p);
    if (instr.attrs.approximation == GeluApproximation::kTanh) absl::StrAppend(&s, " tanh");
    s += "\n";
  }
  std::vector<std::string> outs;
  for (int o : output_registers_) outs.push_back(r(o));
  for (const Sum& sum : sums_) {
    outs.push_back(absl::StrCat("sum(", r(sum.reg), ", [", absl::StrJoin(sum.dims, ","), "])"));
  }
  absl::StrAppend(&s, "  return (", absl::StrJoin(outs, ", "), ")\n}\n");
  return s;
}

}  // namespace tc::codegen
