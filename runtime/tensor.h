// Tensor: a shared handle to an n-dimensional array.
//
// A Tensor is a view (dtype, shape, strides, offset) over a reference-counted,
// 64-byte-aligned Storage. Copying a Tensor copies the handle, not the data;
// views (reshape of a contiguous tensor, permute/transpose, slice, expand)
// share storage with their base. Ops on tensors live in runtime/ops.h.
//
//   tc::Tensor x = tc::randn({4, 3});
//   tc::Tensor y = x.transpose(0, 1);      // a view: no copy
//   float v = y.at<float>({2, 1});          // == x.at<float>({1, 2})
//   std::cout << y.contiguous() << "\n";
#ifndef TENSORCUT_RUNTIME_TENSOR_H_
#define TENSORCUT_RUNTIME_TENSOR_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <vector>

#include "absl/types/span.h"
#include "graph/dtype.h"
#include "graph/shape.h"

namespace tc {

// An owned, 64-byte-aligned byte buffer, zero-initialised unless `zeroed` is
// false. Freed buffers of 64 KiB and more are kept (up to 256 MiB in all) for
// the next Storage of the same size: a training step allocates the same
// sizes every time.
//
// A frozen storage is one whose bytes never change again: a frozen
// inference program's weights (codegen/freeze.h). Kernels may keep work
// derived from a frozen operand across calls (oneDNN's reordered weights);
// whoever freezes a storage promises that nothing writes it afterwards.
class Storage {
 public:
  // Throws tc::Error (ResourceExhausted) when the memory cannot be had.
  explicit Storage(int64_t bytes, bool zeroed = true);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  int64_t bytes() const { return bytes_; }
  void Freeze() { frozen_ = true; }
  bool frozen() const { return frozen_; }

 private:
  void* data_ = nullptr;
  int64_t bytes_ = 0;
  bool frozen_ = false;
};

// Frees the buffers kept for reuse and returns their bytes: before measuring
// the memory something takes, or to give memory back between phases.
int64_t ReleaseCachedBuffers();

struct AutogradMeta;  // defined by autodiff/; runtime only holds the slot
struct TraceMeta;     // defined by the tracer; marks a tensor standing for a graph value

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<int64_t> strides;  // in elements
  int64_t offset = 0;            // in elements
  std::shared_ptr<AutogradMeta> autograd;
  std::shared_ptr<TraceMeta> trace;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: holds nothing
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A new contiguous, zero-filled tensor.
  static Tensor Empty(absl::Span<const int64_t> shape, DType dtype = DType::kF32);
  // A new contiguous tensor whose elements are unspecified: for kernel outputs
  // that are written in full, where zero-filling would be wasted.
  static Tensor Uninitialized(absl::Span<const int64_t> shape, DType dtype = DType::kF32);
  // A view over `storage`; the caller guarantees the bounds.
  static Tensor View(std::shared_ptr<Storage> storage, DType dtype, Shape shape,
                     std::vector<int64_t> strides, int64_t offset);

  bool defined() const { return impl_ != nullptr; }
  DType dtype() const { return impl_->dtype; }
  const Shape& shape() const { return impl_->shape; }
  int64_t dim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t size(int64_t d) const;  // d may be negative
  const std::vector<int64_t>& strides() const { return impl_->strides; }
  int64_t offset() const { return impl_->offset; }
  int64_t numel() const { return NumElements(impl_->shape); }
  int64_t bytes() const { return DimMul(numel(), ItemSize(dtype())); }
  TensorType type() const { return {dtype(), shape()}; }
  bool is_contiguous() const;
  // Dense NHWC strides on a rank-4 [N, C, H, W] (graph/shape.h's IsChannelsLast).
  bool is_channels_last() const;
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  // Whether its storage is frozen (see Storage).
  bool is_frozen() const { return impl_->storage != nullptr && impl_->storage->frozen(); }
  TensorImpl* impl() const { return impl_.get(); }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }
  // How many handles share this tensor (1: this one alone).
  long handle_count() const { return impl_.use_count(); }

  // Pointer to the first element (storage base + offset). T must match dtype.
  template <typename T>
  T* data() const;
  void* raw_data() const;

  // Element access by index, for tests and small programs; T must match dtype.
  template <typename T>
  T at(std::initializer_list<int64_t> index) const;
  template <typename T>
  void set(std::initializer_list<int64_t> index, T value) const;
  // The single element of a one-element tensor.
  template <typename T>
  T item() const;
  // Elements in row-major order, converted to T.
  template <typename T>
  std::vector<T> to_vector() const;

  // A contiguous tensor with the same values (this one if already contiguous).
  Tensor contiguous() const;
  // A contiguous copy that shares nothing with this tensor. Goes through the op
  // table (a same-dtype cast), so autograd and the tracer see it.
  Tensor clone() const;

  // Views and layout (see runtime/ops.h for the rest of the op set).
  Tensor reshape(absl::Span<const int64_t> shape) const;  // one dim may be -1
  Tensor permute(absl::Span<const int64_t> dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor expand(absl::Span<const int64_t> shape) const;
  Tensor to(DType dtype) const;

  // Autograd (see runtime/autograd_meta.h; the engine lives in autodiff/).
  bool requires_grad() const;
  // Marks a floating-point leaf as one whose gradient is wanted; returns *this.
  const Tensor& requires_grad_(bool requires_grad = true) const;
  // The gradient accumulated by backward() (undefined until then).
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  // True for tensors not computed by a recorded op.
  bool is_leaf() const;
  // A tensor sharing this one's data, cut from the backward graph. Of a
  // traced floating tensor (a bound parameter's included): a stop_gradient
  // node, so the cut is in the graph; its result, like any traced result,
  // has no data to read.
  Tensor detach() const;
  // Runs the backward graph from this tensor, accumulating into the .grad of
  // the leaves that require grad. A non-scalar needs `grad_output`. Defined in
  // autodiff/engine.cc (link //autodiff). Throws tc::Error on misuse.
  void backward(const Tensor& grad_output = Tensor(), bool retain_graph = false) const;

 private:
  int64_t ElementOffset(std::initializer_list<int64_t> index) const;
  void CheckDType(DType expected) const;

  std::shared_ptr<TensorImpl> impl_;
};

template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() {
  return DType::kF32;
}
template <>
constexpr DType DTypeOf<double>() {
  return DType::kF64;
}
template <>
constexpr DType DTypeOf<int64_t>() {
  return DType::kI64;
}
template <>
constexpr DType DTypeOf<int32_t>() {
  return DType::kI32;
}
template <>
constexpr DType DTypeOf<bool>() {
  return DType::kBool;
}

template <typename T>
T* Tensor::data() const {
  CheckDType(DTypeOf<T>());
  return static_cast<T*>(raw_data());
}

template <typename T>
T Tensor::at(std::initializer_list<int64_t> index) const {
  return data<T>()[ElementOffset(index)];
}

template <typename T>
void Tensor::set(std::initializer_list<int64_t> index, T value) const {
  data<T>()[ElementOffset(index)] = value;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_TENSOR_H_
