#include "codegen/fused_kernel.h"

#include <omp.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/threads.h"

namespace tc::codegen {
namespace {

// Reads one input, broadcast to the group's shape, in blocks of the
// iteration order (the outputs' memory order: dims in `order`, outermost
// first).
class InputReader {
 public:
  InputReader(const Tensor& t, const Shape& shape, absl::Span<const int> order)
      : base_(static_cast<const char*>(t.raw_data())), item_(ItemSize(t.dtype())) {
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
    switch (item_) {
      case 1:
        Gather(start, len, static_cast<uint8_t*>(buffer));
        break;
      case 4:
        Gather(start, len, static_cast<uint32_t*>(buffer));
        break;
      default:
        Gather(start, len, static_cast<uint64_t*>(buffer));
        break;
    }
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
  int64_t item_;
  absl::InlinedVector<int64_t, 8> dims_, strides_;
  bool in_place_ = false;
  bool same_every_block_ = false;
};

}  // namespace

FusedKernel FusedKernel::Compile(const FusionGroup& group) {
  FusedKernel kernel;
  kernel.shape_ = group.shape;
  kernel.num_inputs_ = static_cast<int>(group.inputs.size());
  absl::flat_hash_map<const Value*, int> reg;
  for (int i = 0; i < kernel.num_inputs_; ++i) reg[group.inputs[i]] = i;
  int next = kernel.num_inputs_;
  const absl::flat_hash_set<const Value*> outputs(group.outputs.begin(), group.outputs.end());
  // Registers of inputs and outputs are kept; the others are reused after the
  // last instruction reading them.
  absl::flat_hash_map<const Value*, int> last_read;
  for (int i = 0; i < static_cast<int>(group.nodes.size()); ++i) {
    for (const Value* in : group.nodes[i]->inputs()) last_read[in] = i;
  }
  auto reusable = [&](const Value* v) {
    return reg.at(v) >= kernel.num_inputs_ && !outputs.contains(v);
  };
  std::vector<int> free;
  for (int i = 0; i < static_cast<int>(group.nodes.size()); ++i) {
    const Node& node = *group.nodes[i];
    const Value* result = node.result(0);
    FusedInstr instr{node.op(),
                     node.input(node.op() == OpKind::kWhere ? 1 : 0)->type().dtype,
                     result->type().dtype,
                     -1,
                     {-1, -1, -1}};
    if (node.op() == OpKind::kPow) instr.exponent = node.attrs().Float("exponent");
    if (node.op() == OpKind::kGelu || node.op() == OpKind::kGeluBackward) {
      instr.tanh_form = node.attrs().Str("approximate") == "tanh";
    }
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
    if (!outputs.contains(result) && !last_read.contains(result)) free.push_back(instr.dst);
    kernel.program_.push_back(instr);
  }
  kernel.num_registers_ = next;
  for (const Value* out : group.outputs) {
    kernel.output_registers_.push_back(reg.at(out));
    kernel.output_dtypes_.push_back(out->type().dtype);
  }
  return kernel;
}

void FusedKernel::RunInto(absl::Span<const Tensor> inputs, absl::Span<const Tensor> outputs,
                          absl::Span<const int> order) const {
  const int64_t n = NumElements(shape_);
  if (n == 0) return;
  absl::InlinedVector<int, 8> dims(order.begin(), order.end());
  if (dims.empty()) {
    for (int d = 0; d < static_cast<int>(shape_.size()); ++d) dims.push_back(d);
  }
  absl::InlinedVector<InputReader, 8> readers;
  for (const Tensor& t : inputs) readers.emplace_back(t, shape_, dims);
  absl::InlinedVector<char*, 8> out_base;
  for (const Tensor& t : outputs) out_base.push_back(static_cast<char*>(t.raw_data()));
  // Blocks [first, last) on the calling thread: registers point at this
  // thread's block buffers, kept per thread so that a run allocates nothing
  // once they have grown (8-byte slots: wide enough for every dtype).
  auto run_blocks = [&](int64_t first, int64_t last) {
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
      for (size_t o = 0; o < out_base.size(); ++o) {
        regs[output_registers_[o]] = out_base[o] + start * ItemSize(output_dtypes_[o]);
      }
      for (const FusedInstr& instr : program_) EvalInstr(instr, regs.data(), len);
    }
  };
  const int64_t blocks = (n + kBlockSize - 1) / kBlockSize;
  // Each thread takes one contiguous range of blocks; a small group stays on
  // the calling thread, where a parallel region would cost more than it saves.
  const int threads = n < kParallelElements ? 1 : std::min<int64_t>(NumThreads(), blocks);
  if (threads == 1) {
    run_blocks(0, blocks);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), count = omp_get_num_threads();
    run_blocks(blocks * t / count, blocks * (t + 1) / count);
  }
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
    if (instr.op == OpKind::kPow) absl::StrAppend(&s, " exponent=", instr.exponent);
    if (instr.tanh_form) absl::StrAppend(&s, " tanh");
    s += "\n";
  }
  std::vector<std::string> outs;
  for (int o : output_registers_) outs.push_back(r(o));
  absl::StrAppend(&s, "  return (", absl::StrJoin(outs, ", "), ")\n}\n");
  return s;
}

}  // namespace tc::codegen
