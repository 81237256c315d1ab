#include "runtime/tensor.h"

#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/check.h"
#include "runtime/autograd_meta.h"
#include "runtime/bf16.h"
#include "runtime/error.h"
#include "runtime/ops.h"

namespace tc {

namespace {
constexpr int64_t kAlignment = 64;

// Large buffers freed by one Storage are kept for the next of the same size:
// a training step allocates the same activation sizes every time, and fresh
// large allocations come from mmap, whose pages fault in on first touch.
class BufferCache {
 public:
  static constexpr int64_t kMinBytes = 64 << 10;   // smaller ones malloc serves well
  static constexpr int64_t kMaxBytes = 256 << 20;  // cached in total

  static BufferCache& Get() {
    static BufferCache* cache = new BufferCache;
    return *cache;
  }

  void* Take(int64_t bytes) {
    if (bytes < kMinBytes) return nullptr;
    absl::MutexLock lock(&mu_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= bytes;
    return p;
  }

  int64_t Release() {
    absl::MutexLock lock(&mu_);
    for (auto& [bytes, buffers] : free_) {
      for (void* p : buffers) std::free(p);
    }
    free_.clear();
    return std::exchange(cached_, 0);
  }

  // Keeps `p` (of `bytes`) or frees it when the cache is full.
  void Give(void* p, int64_t bytes) {
    if (bytes >= kMinBytes) {
      absl::MutexLock lock(&mu_);
      if (cached_ + bytes <= kMaxBytes) {
        free_[bytes].push_back(p);
        cached_ += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<int64_t, std::vector<void*>> free_ ABSL_GUARDED_BY(mu_);
  int64_t cached_ ABSL_GUARDED_BY(mu_) = 0;
};

int64_t Rounded(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

int64_t ReleaseCachedBuffers() { return BufferCache::Get().Release(); }

Storage::Storage(int64_t bytes, bool zeroed) : bytes_(bytes) {
  if (bytes > 0) {
    const int64_t rounded = Rounded(bytes);
    data_ = BufferCache::Get().Take(rounded);
    if (data_ == nullptr) data_ = std::aligned_alloc(kAlignment, rounded);
    if (data_ == nullptr) {
      throw Error(
          absl::ResourceExhaustedError(absl::StrCat("out of memory allocating ", bytes, " bytes")));
    }
    if (zeroed) std::memset(data_, 0, rounded);
  }
}

Storage::~Storage() {
  if (data_ != nullptr) BufferCache::Get().Give(data_, Rounded(bytes_));
}

namespace {

Tensor NewContiguous(absl::Span<const int64_t> shape, DType dtype, bool zeroed) {
  // A symbolic size (a traced batch) has no value to allocate: random
  // tensors and other data made inside traced code need numbers.
  if (HasSymbolic(shape)) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("a tensor of symbolic shape ", ShapeToString(shape),
                     " has no data: traced code creates data of number sizes only")));
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = dtype;
  impl->shape.assign(shape.begin(), shape.end());
  impl->strides = ContiguousStrides(shape);
  impl->storage = std::make_shared<Storage>(NumElements(shape) * ItemSize(dtype), zeroed);
  return Tensor(std::move(impl));
}

}  // namespace

Tensor Tensor::Empty(absl::Span<const int64_t> shape, DType dtype) {
  return NewContiguous(shape, dtype, /*zeroed=*/true);
}

Tensor Tensor::Uninitialized(absl::Span<const int64_t> shape, DType dtype) {
  return NewContiguous(shape, dtype, /*zeroed=*/false);
}

Tensor Tensor::View(std::shared_ptr<Storage> storage, DType dtype, Shape shape,
                    std::vector<int64_t> strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->dtype = dtype;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  return Tensor(std::move(impl));
}

int64_t Tensor::size(int64_t d) const { return impl_->shape[d < 0 ? d + dim() : d]; }

bool Tensor::is_contiguous() const { return IsContiguous(impl_->shape, impl_->strides); }

bool Tensor::is_channels_last() const { return IsChannelsLast(impl_->shape, impl_->strides); }

void* Tensor::raw_data() const {
  if (impl_->storage == nullptr && impl_->trace != nullptr) {
    throw Error(absl::FailedPreconditionError(
        absl::StrCat("cannot read the elements of traced tensor ", type().ToString(),
                     ": its values are only known when the graph runs")));
  }
  if (impl_->storage == nullptr || impl_->storage->data() == nullptr) return nullptr;
  return static_cast<char*>(impl_->storage->data()) + impl_->offset * ItemSize(impl_->dtype);
}

void Tensor::CheckDType(DType expected) const {
  TC_CHECK(impl_ != nullptr, "access to an undefined tensor");
  TC_CHECK(impl_->dtype == expected, "element access as ", DTypeName(expected), " on a ",
           type().ToString(), " tensor");
}

int64_t Tensor::ElementOffset(std::initializer_list<int64_t> index) const {
  if (static_cast<int64_t>(index.size()) != dim()) {
    throw Error(absl::OutOfRangeError(
        absl::StrCat("index of rank ", index.size(), " into tensor ", type().ToString())));
  }
  int64_t offset = 0, d = 0;
  for (int64_t i : index) {
    if (i < 0 || i >= impl_->shape[d]) {
      throw Error(absl::OutOfRangeError(
          absl::StrCat("index ", i, " out of range for dim ", d, " of ", type().ToString())));
    }
    offset += i * impl_->strides[d++];
  }
  return offset;
}

template <typename T>
T Tensor::item() const {
  if (numel() != 1) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("item() needs a one-element tensor, got ", type().ToString())));
  }
  return data<T>()[0];
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = cast(*this, DTypeOf<T>()).contiguous();
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}

template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template int32_t Tensor::item<int32_t>() const;
template bool Tensor::item<bool>() const;
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;

Tensor Tensor::clone() const { return cast(*this, dtype()); }

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::reshape(absl::Span<const int64_t> shape) const {
  return tc::reshape(*this, std::vector<int64_t>(shape.begin(), shape.end()));
}
Tensor Tensor::permute(absl::Span<const int64_t> dims) const {
  return tc::permute(*this, std::vector<int64_t>(dims.begin(), dims.end()));
}
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  return tc::transpose(*this, dim0, dim1);
}
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  return tc::slice(*this, dim, start, end, step);
}
Tensor Tensor::expand(absl::Span<const int64_t> shape) const {
  return tc::expand(*this, std::vector<int64_t>(shape.begin(), shape.end()));
}
Tensor Tensor::to(DType dtype) const { return dtype == this->dtype() ? *this : cast(*this, dtype); }

bool Tensor::requires_grad() const {
  return impl_->autograd != nullptr && impl_->autograd->requires_grad;
}

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  if (requires_grad && !IsFloating(dtype())) {
    throw Error(absl::InvalidArgumentError(absl::StrCat(
        "requires_grad_: only floating-point tensors can require grad, got ", type().ToString())));
  }
  TC_CHECK(!requires_grad || GetGradRecorder() != nullptr,
           "requires_grad_ without autograd: link //autodiff");
  if (!is_leaf()) {
    throw Error(absl::InvalidArgumentError(
        "requires_grad_: only leaf tensors can change requires_grad; use detach()"));
  }
  if (impl_->autograd == nullptr) impl_->autograd = std::make_shared<AutogradMeta>();
  impl_->autograd->requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const { return impl_->autograd ? impl_->autograd->grad : Tensor(); }

void Tensor::set_grad(const Tensor& grad) const {
  if (impl_->autograd == nullptr) impl_->autograd = std::make_shared<AutogradMeta>();
  impl_->autograd->grad = grad;
}

bool Tensor::is_leaf() const {
  return impl_->autograd == nullptr || impl_->autograd->grad_fn == nullptr;
}

Tensor Tensor::detach() const {
  // A traced tensor's cut must be in the graph: a copy of its handle would
  // stand for the same value, and the compiled gradient would flow through.
  if (impl_->trace != nullptr && IsFloating(dtype())) return stop_gradient(*this);
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->autograd = nullptr;
  return Tensor(std::move(impl));
}

namespace {

thread_local bool grad_mode_enabled = true;
GradRecorder grad_recorder = nullptr;

}  // namespace

bool GradMode::IsEnabled() { return grad_mode_enabled; }
void GradMode::SetEnabled(bool enabled) { grad_mode_enabled = enabled; }
void SetGradRecorder(GradRecorder recorder) { grad_recorder = recorder; }
GradRecorder GetGradRecorder() { return grad_recorder; }

namespace {

void PrintElement(std::ostream& os, const Tensor& t, int64_t offset) {
  const char* base = static_cast<const char*>(t.raw_data());
  switch (t.dtype()) {
    case DType::kF32:
      os << reinterpret_cast<const float*>(base)[offset];
      break;
    case DType::kF64:
      os << reinterpret_cast<const double*>(base)[offset];
      break;
    case DType::kI64:
      os << reinterpret_cast<const int64_t*>(base)[offset];
      break;
    case DType::kI32:
      os << reinterpret_cast<const int32_t*>(base)[offset];
      break;
    case DType::kBool:
      os << (reinterpret_cast<const bool*>(base)[offset] ? "true" : "false");
      break;
    case DType::kBF16:
      os << FromBf16(reinterpret_cast<const uint16_t*>(base)[offset]);
      break;
  }
}

// Prints dim `d` onwards; long dims show their first and last three entries.
void PrintDim(std::ostream& os, const Tensor& t, int64_t d, int64_t offset) {
  if (d == t.dim()) {
    PrintElement(os, t, offset);
    return;
  }
  const int64_t n = t.shape()[d];
  os << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (n > 8 && i == 3) {
      os << "..., ";
      i = n - 3;
    }
    PrintDim(os, t, d + 1, offset + i * t.strides()[d]);
    if (i + 1 < n) os << (d + 1 == t.dim() ? ", " : ",\n ");
  }
  os << "]";
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  if (t.storage() == nullptr && t.impl()->trace != nullptr) {
    return os << "Tensor(" << t.type().ToString() << ", traced)";
  }
  os << "Tensor(" << t.type().ToString() << ",\n ";
  const auto flags = os.flags();
  const auto precision = os.precision(6);
  PrintDim(os, t, 0, 0);
  os.precision(precision);
  os.flags(flags);
  return os << ")";
}

}  // namespace tc
