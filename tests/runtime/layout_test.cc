// The layout kernels (permute, reshape, expand, slice, slice_backward, concat,
// pad) against f64 references written here as index arithmetic over row-major
// values, on every dtype, contiguous and non-contiguous inputs, size-1 and
// zero-size dims; views are checked to share their input's storage.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using testing::Index;
using testing::Ravel;
using testing::Reference;
using testing::Unravel;
using testing::Values;

const DType kAllDTypes[] = {DType::kF32, DType::kF64, DType::kI64, DType::kBool};

// A random input, stored non-contiguously when asked.
Tensor Input(const Shape& shape, DType dtype, bool contiguous, uint64_t seed) {
  Tensor t = testing::Random(shape, dtype, seed);
  return contiguous ? t : testing::NonContiguous(t);
}

std::string ErrorOf(OpKind op, std::vector<Tensor> inputs, const Attrs& attrs) {
  return std::string(Call(op, inputs, attrs).status().message());
}

bool SharesStorage(const Tensor& a, const Tensor& b) { return a.storage() == b.storage(); }

// x permuted by the definition: y[i] = x[j] where j[dims[k]] = i[k].
Tensor ReferencePermute(const Tensor& x, const Index& dims) {
  const int64_t rank = x.dim();
  Shape shape;
  for (int64_t d : dims) shape.push_back(x.shape()[(d + rank) % rank]);
  const Values xv(x);
  return Reference(shape, [&](const Index& i) {
    Index j(rank);
    for (int64_t k = 0; k < rank; ++k) j[(dims[k] + rank) % rank] = i[k];
    return xv[j];
  });
}

TEST_CASE("permute is a view with permuted dims") {
  for (DType dtype : kAllDTypes) {
    for (bool contiguous : {true, false}) {
      INFO(DTypeName(dtype) << (contiguous ? " contiguous" : " non-contiguous"));
      const Tensor x = Input({2, 3, 4}, dtype, contiguous, 1);
      for (const Index& dims : {Index{2, 0, 1}, Index{-1, 1, 0}, Index{0, 1, 2}}) {
        const Tensor y = permute(x, dims);
        CHECK(SharesStorage(x, y));
        REQUIRE_TENSORS_CLOSE(y, ReferencePermute(x, dims), 0, 0);
      }
    }
  }
  CHECK(permute(zeros({2, 0, 3}), {2, 1, 0}).shape() == Shape{3, 0, 2});
  CHECK(permute(scalar(2.5), {}).item<float>() == 2.5f);

  const Tensor x = zeros({2, 3});
  const auto dims = [](Index d) { return Attrs{{"dims", std::move(d)}}; };
  CHECK(ErrorOf(OpKind::kPermute, {x}, dims({0})) == "permute: dims [0] do not match rank 2");
  CHECK(ErrorOf(OpKind::kPermute, {x}, dims({0, 0})) == "permute: dims [0,0] repeat a dim");
  CHECK(ErrorOf(OpKind::kPermute, {x}, dims({0, 2})) == "permute: dim 2 out of range for rank 2");
}

TEST_CASE("reshape keeps row-major order, as a view whenever the strides allow") {
  const auto check = [](const Tensor& x, const Shape& shape, bool view) {
    INFO(x.type().ToString() << " strides " << ShapeToString(x.strides()) << " -> "
                             << ShapeToString(shape));
    const Tensor y = reshape(x, shape);
    CHECK(SharesStorage(x, y) == view);
    REQUIRE_TENSORS_CLOSE(y, from_vector<double>(x.to_vector<double>(), shape), 0, 0);
  };
  for (DType dtype : kAllDTypes) {
    INFO(DTypeName(dtype));
    const Tensor x = Input({2, 3, 4}, dtype, true, 2);
    check(x, {4, 6}, true);
    check(x, {24}, true);
    check(x, {2, 1, 12, 1}, true);
    check(Input({2, 3, 4}, dtype, false, 2), {6, 4}, false);
  }
  // A transposed [6,4] (strides [1,6]) splits either dim in place but cannot merge them.
  const Tensor t = Input({4, 6}, DType::kF32, true, 3).transpose(0, 1);
  check(t, {3, 2, 4}, true);
  check(t, {6, 2, 2}, true);
  check(t, {1, 6, 4, 1}, true);
  check(t, {24}, false);
  check(t, {2, 12}, false);
  // Cutting the last dim leaves dims 0 and 1 contiguous with each other only.
  const Tensor s = Input({2, 3, 4}, DType::kF64, true, 4).slice(2, 0, 2);
  check(s, {6, 2}, true);
  check(s, {2, 3, 1, 2}, true);
  check(s, {2, 6}, false);
  check(s, {12}, false);
  // Size-1 and zero-size dims, scalars.
  check(Input({1, 3, 1}, DType::kF32, true, 5).expand({2, 3, 4}).slice(0, 0, 1), {3, 4}, true);
  check(zeros({2, 0, 3}), {0, 6}, true);
  check(zeros({3, 0}).transpose(0, 1), {3, 0, 1}, true);
  check(scalar(1.5), {1, 1}, true);
  check(full({1, 1}, 3), {}, true);
  CHECK(reshape(zeros({2, 3, 4}), {-1, 4}).shape() == Shape{6, 4});

  const Tensor x = zeros({2, 3});
  CHECK(ErrorOf(OpKind::kReshape, {x}, {{"shape", Index{4, 2}}}) ==
        "reshape: cannot reshape f32[2,3] (6 elements) to [4,2]");
  CHECK(ErrorOf(OpKind::kReshape, {x}, {{"shape", Index{-2, -3}}}) ==
        "reshape: cannot reshape f32[2,3] to [-2,-3]");
  CHECK_THROWS_WITH(reshape(x, {-1, -1}), "reshape: more than one -1 in [-1,-1]");
  CHECK_THROWS_WITH(reshape(x, {-1, 4}), "reshape: cannot reshape f32[2,3] to [-1,4]");
}

TEST_CASE("expand is a view with stride 0 along broadcast dims") {
  for (DType dtype : kAllDTypes) {
    for (bool contiguous : {true, false}) {
      INFO(DTypeName(dtype) << (contiguous ? " contiguous" : " non-contiguous"));
      const Tensor x = Input({3, 1, 2}, dtype, contiguous, 6);
      const Values xv(x);
      const Tensor y = expand(x, {2, 3, 4, -1});
      CHECK(SharesStorage(x, y));
      CHECK(y.strides()[0] == 0);
      CHECK(y.strides()[2] == 0);
      const Tensor expected = Reference({2, 3, 4, 2}, [&](const Index& i) {
        return xv[{i[1], 0, i[3]}];
      });
      REQUIRE_TENSORS_CLOSE(y, expected, 0, 0);
    }
  }
  CHECK(expand(zeros({3, 1}), {3, 0}).shape() == Shape{3, 0});
  CHECK(expand(zeros({0, 1}), {2, 0, 5}).shape() == Shape{2, 0, 5});
  CHECK(expand(scalar(4), {2, 2}).to_vector<float>() == std::vector<float>(4, 4.0f));

  const Tensor x = zeros({2, 3});
  CHECK(ErrorOf(OpKind::kExpand, {x}, {{"shape", Index{3}}}) ==
        "expand: cannot expand f32[2,3] to fewer dims [3]");
  CHECK(ErrorOf(OpKind::kExpand, {x}, {{"shape", Index{4, 3}}}) ==
        "expand: cannot expand f32[2,3] to [4,3]");
  CHECK(ErrorOf(OpKind::kExpand, {x}, {{"shape", Index{-1, 2, 3}}}) ==
        "expand: cannot expand f32[2,3] to [-1,2,3]");
}

// Python's slice bounds, written out again for the references.
struct Bounds {
  int64_t start, length;
};
Bounds PySlice(int64_t size, int64_t start, int64_t end, int64_t step) {
  const auto clamp = [&](int64_t i) {
    return std::min(std::max(i < 0 ? i + size : i, int64_t{0}), size);
  };
  const int64_t s = clamp(start), e = clamp(end);
  int64_t length = 0;
  for (int64_t i = s; i < e; i += step) ++length;
  return {s, length};
}

struct SliceCase {
  int64_t dim, start, end, step;
};
const SliceCase kSlices[] = {{0, 1, 4, 1},    {1, -4, 100, 2}, {2, 0, 4, 3},
                             {-1, -1, -5, 1}, {1, -100, 3, 1}, {0, 5, 9, 2}};

Attrs SliceAttrs(const SliceCase& c) {
  return {{"dim", c.dim}, {"start", c.start}, {"end", c.end}, {"step", c.step}};
}

TEST_CASE("slice is a view with Python bounds and any positive step") {
  for (DType dtype : kAllDTypes) {
    for (bool contiguous : {true, false}) {
      const Tensor x = Input({5, 6, 4}, dtype, contiguous, 7);
      const Values xv(x);
      for (const SliceCase& c : kSlices) {
        INFO(DTypeName(dtype) << (contiguous ? " contiguous " : " non-contiguous ")
                              << SliceAttrs(c).ToString());
        const Tensor y = slice(x, c.dim, c.start, c.end, c.step);
        CHECK(SharesStorage(x, y));
        const int64_t dim = (c.dim + 3) % 3;
        const Bounds b = PySlice(x.shape()[dim], c.start, c.end, c.step);
        Shape shape = x.shape();
        shape[dim] = b.length;
        const Tensor expected = Reference(shape, [&](Index i) {
          i[dim] = b.start + i[dim] * c.step;
          return xv[i];
        });
        REQUIRE_TENSORS_CLOSE(y, expected, 0, 0);
      }
    }
  }
  // A slice of a slice, and slices of zero-size tensors.
  const Tensor x = Input({8, 3}, DType::kF64, true, 8);
  REQUIRE_TENSORS_CLOSE(x.slice(0, 1, 8, 2).slice(0, 1, 4, 2), x.slice(0, 3, 8, 4), 0, 0);
  CHECK(slice(zeros({0, 3}), 0, 0, 5).shape() == Shape{0, 3});
  CHECK(slice(zeros({2, 0}), 0, 1, 2).shape() == Shape{1, 0});

  const Attrs step0{
      {"dim", int64_t{0}}, {"start", int64_t{0}}, {"end", int64_t{1}}, {"step", int64_t{0}}};
  CHECK(ErrorOf(OpKind::kSlice, {zeros({2, 3})}, step0) ==
        "slice: slice step must be positive, got 0");
  CHECK(ErrorOf(OpKind::kSlice, {zeros({2, 3})}, SliceAttrs({2, 0, 1, 1})) ==
        "slice: dim 2 out of range for rank 2");
}

TEST_CASE("slice_backward writes grad into the sliced positions of zeros") {
  const Shape input_shape{5, 6, 4};
  for (DType dtype : kAllDTypes) {
    for (bool contiguous : {true, false}) {
      for (const SliceCase& c : kSlices) {
        INFO(DTypeName(dtype) << (contiguous ? " contiguous " : " non-contiguous ")
                              << SliceAttrs(c).ToString());
        const int64_t dim = (c.dim + 3) % 3;
        const Bounds b = PySlice(input_shape[dim], c.start, c.end, c.step);
        Shape grad_shape = input_shape;
        grad_shape[dim] = b.length;
        const Tensor grad = Input(grad_shape, dtype, contiguous, 9);
        const Values gv(grad);
        const Tensor y = slice_backward(grad, input_shape, c.dim, c.start, c.end, c.step);
        const Tensor expected = Reference(input_shape, [&](Index i) {
          const int64_t k = i[dim] - b.start;  // position within the slice, in steps
          if (k < 0 || k % c.step != 0 || k / c.step >= b.length) return 0.0;
          i[dim] = k / c.step;
          return gv[i];
        });
        REQUIRE_TENSORS_CLOSE(y, expected, 0, 0);
      }
    }
  }
  CHECK(slice_backward(zeros({0, 3}), {0, 3}, 0, 0, 1, 1).shape() == Shape{0, 3});

  Attrs attrs = SliceAttrs({0, 0, 1, 1});
  attrs.Set("input_shape", Index{4, 3});
  CHECK(ErrorOf(OpKind::kSliceBackward, {zeros({2, 3})}, attrs) ==
        "slice_backward: grad f32[2,3] does not match the slice of [4,3] (f32[1,3])");
  attrs.Set("step", int64_t{-1});
  CHECK(ErrorOf(OpKind::kSliceBackward, {zeros({1, 3})}, attrs) ==
        "slice_backward: slice step must be positive, got -1");
}

TEST_CASE("concat joins inputs along a dim") {
  for (DType dtype : kAllDTypes) {
    for (int64_t dim : {1, -2}) {
      INFO(DTypeName(dtype) << " dim " << dim);
      const std::vector<Tensor> xs = {
          Input({2, 1, 3}, dtype, true, 10), Input({2, 4, 3}, dtype, false, 11),
          Input({2, 0, 3}, dtype, true, 12), Input({2, 2, 6}, dtype, true, 13).slice(2, 0, 6, 2)};
      std::vector<Values> values;
      for (const Tensor& x : xs) values.emplace_back(x);
      const Tensor expected = Reference({2, 7, 3}, [&](Index i) {
        size_t k = 0;  // the input holding position i[1]
        while (i[1] >= xs[k].shape()[1]) i[1] -= xs[k++].shape()[1];
        return values[k][i];
      });
      REQUIRE_TENSORS_CLOSE(concat(xs, dim), expected, 0, 0);
    }
  }
  const Tensor x = Input({3, 2}, DType::kF64, false, 14);
  const Tensor one = concat({x}, 0);
  CHECK_FALSE(SharesStorage(one, x));
  REQUIRE_TENSORS_CLOSE(one, x, 0, 0);
  CHECK(concat({zeros({0, 2}), zeros({0, 3})}, 1).shape() == Shape{0, 5});

  const Tensor a = zeros({2, 3});
  const Attrs dim0{{"dim", int64_t{0}}};
  CHECK(ErrorOf(OpKind::kConcat, {a, zeros({2, 4})}, dim0) ==
        "concat: input 1 f32[2,4] does not fit input 0 f32[2,3] along dim 0");
  CHECK(ErrorOf(OpKind::kConcat, {a, zeros({2})}, {{"dim", int64_t{1}}}) ==
        "concat: input 1 f32[2] does not fit input 0 f32[2,3] along dim 1");
  CHECK(ErrorOf(OpKind::kConcat, {a, zeros({2, 3}, DType::kF64)}, dim0) ==
        "concat: dtypes differ: f32[2,3] vs f64[2,3]");
  CHECK(ErrorOf(OpKind::kConcat, {a, a}, {{"dim", int64_t{2}}}) ==
        "concat: dim 2 out of range for rank 2");
}

TEST_CASE("pad surrounds the input with a constant") {
  for (DType dtype : kAllDTypes) {
    for (bool contiguous : {true, false}) {
      INFO(DTypeName(dtype) << (contiguous ? " contiguous" : " non-contiguous"));
      const Tensor x = Input({2, 3}, dtype, contiguous, 15);
      const Values xv(x);
      const double value = dtype == DType::kBool ? 1 : dtype == DType::kI64 ? 7 : 1.5;
      const Index pads{1, 2, 0, 3};
      const Tensor expected = Reference({5, 6}, [&](Index i) {
        i[0] -= pads[0];
        i[1] -= pads[2];
        const bool inside = i[0] >= 0 && i[0] < 2 && i[1] >= 0 && i[1] < 3;
        return inside ? xv[i] : value;
      });
      REQUIRE_TENSORS_CLOSE(pad(x, pads, value), expected, 0, 0);
    }
  }
  REQUIRE_TENSORS_CLOSE(pad(zeros({0, 3}), {1, 1, 1, 0}, 2), full({2, 4}, 2), 0, 0);
  REQUIRE_TENSORS_CLOSE(pad(zeros({2, 3}), {0, 0, 0, 0}, 2), zeros({2, 3}), 0, 0);
  REQUIRE_TENSORS_CLOSE(pad(scalar(3), {}, 2), scalar(3), 0, 0);

  const Tensor x = zeros({2, 3});
  const auto pads = [](Index p) { return Attrs{{"pads", std::move(p)}, {"value", 0.0}}; };
  CHECK(ErrorOf(OpKind::kPad, {x}, pads({1, 1})) ==
        "pad: pads [1,1] must have 2 entries per dim of f32[2,3]");
  CHECK(ErrorOf(OpKind::kPad, {x}, pads({0, -1, 0, 0})) ==
        "pad: pads must be non-negative, got [0,-1,0,0]");
}

}  // namespace
}  // namespace tc
