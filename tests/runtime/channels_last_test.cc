// The out-variant kernels a compiled program hands channels-last tensors
// (batch norm, conv2d with a bias, max and avg pooling, and their backwards),
// called directly on dense NHWC inputs and outputs, and on mixes of NHWC and
// row-major ones, against the eager ops on row-major tensors. Also: channels-
// last batch norm gives the same bits on one thread as on two.
#include <limits>
#include <memory>
#include <vector>

#include "catch2/catch.hpp"
#include "runtime/dispatch.h"
#include "runtime/ops.h"
#include "runtime/threads.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using testing::Random;
using Ints = std::vector<int64_t>;

enum class Layout { kRowMajor, kChannelsLast };
constexpr Layout kLayouts[] = {Layout::kRowMajor, Layout::kChannelsLast};

const char* LayoutName(Layout l) { return l == Layout::kRowMajor ? "row-major" : "channels-last"; }

// An uninitialised output of `shape` in layout `l`.
Tensor Output(const Shape& shape, DType dtype, Layout l) {
  if (l == Layout::kRowMajor) return Tensor::Empty(shape, dtype);
  return Tensor::View(std::make_shared<Storage>(NumElements(shape) * ItemSize(dtype)), dtype, shape,
                      DenseStrides(shape, kChannelsLast), 0);
}

// `t`'s values (rank 4) in layout `l`.
Tensor InLayout(const Tensor& t, Layout l) {
  if (l == Layout::kRowMajor) return t;
  const Tensor nhwc = t.permute({0, 2, 3, 1}).clone().permute({0, 3, 1, 2});
  REQUIRE(nhwc.strides() == DenseStrides(t.shape(), kChannelsLast));
  return nhwc;
}

// Runs `op`'s out-variant on `inputs` into fresh outputs of `out_types`, each
// in the layout given for it.
std::vector<Tensor> RunInto(OpKind op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                            const std::vector<TensorType>& out_types,
                            const std::vector<Layout>& out_layouts) {
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < out_types.size(); ++i) {
    outputs.push_back(Output(out_types[i].shape, out_types[i].dtype, out_layouts[i]));
  }
  const absl::Status status = GetIntoKernel(op)(inputs, attrs, outputs);
  REQUIRE(status.ok());
  return outputs;
}

double Tol(DType dt) { return dt == DType::kF64 ? 1e-12 : 1e-5; }

constexpr DType kDTypes[] = {DType::kF64, DType::kF32};
constexpr double kEps = 1e-5;

// ---- batch norm

const Shape kNormShapes[] = {{2, 3, 4, 5}, {3, 8, 1, 6}, {1, 5, 3, 3}};

TEST_CASE("batch_norm into channels-last and mixed layouts matches the row-major op") {
  const Attrs attrs = {{"eps", kEps}};
  for (const Shape& shape : kNormShapes) {
    for (DType dt : kDTypes) {
      const Shape c = {shape[1]};
      const Tensor x = Random(shape, dt, 1), w = Random(c, dt, 2), b = Random(c, dt, 3);
      const NormResult expected = batch_norm(x, w, b, kEps);
      const Tensor mean = Random(c, dt, 4), var = abs(Random(c, dt, 5)) + 0.1;
      const Tensor expected_inference = batch_norm_inference(x, w, b, mean, var, kEps);
      for (Layout xl : kLayouts) {
        for (Layout yl : kLayouts) {
          INFO(ShapeToString(shape)
               << " " << DTypeName(dt) << ", x " << LayoutName(xl) << ", y " << LayoutName(yl));
          const std::vector<Tensor> out =
              RunInto(OpKind::kBatchNorm, {InLayout(x, xl), w, b}, attrs,
                      {{dt, shape}, {dt, c}, {dt, c}}, {yl, Layout::kRowMajor, Layout::kRowMajor});
          REQUIRE_TENSORS_CLOSE(out[0], expected.y, Tol(dt), Tol(dt));
          REQUIRE_TENSORS_CLOSE(out[1], expected.mean, Tol(dt), Tol(dt));
          REQUIRE_TENSORS_CLOSE(out[2], expected.var, Tol(dt), Tol(dt));
          const std::vector<Tensor> inference =
              RunInto(OpKind::kBatchNormInference, {InLayout(x, xl), w, b, mean, var}, attrs,
                      {{dt, shape}}, {yl});
          REQUIRE_TENSORS_CLOSE(inference[0], expected_inference, Tol(dt), Tol(dt));
        }
      }
    }
  }
}

TEST_CASE("batch_norm_backward into channels-last and mixed layouts matches the row-major op") {
  const Attrs attrs = {{"eps", kEps}};
  for (const Shape& shape : kNormShapes) {
    for (DType dt : kDTypes) {
      const Shape c = {shape[1]};
      const Tensor x = Random(shape, dt, 6), w = Random(c, dt, 7), g = Random(shape, dt, 8);
      const NormResult fwd = batch_norm(x, w, zeros(c, dt), kEps);
      const NormGrads expected = batch_norm_backward(g, x, w, fwd.mean, fwd.var, kEps);
      for (Layout gl : kLayouts) {
        for (Layout xl : kLayouts) {
          for (Layout dxl : kLayouts) {
            INFO(ShapeToString(shape) << " " << DTypeName(dt) << ", grad " << LayoutName(gl)
                                      << ", x " << LayoutName(xl) << ", dx " << LayoutName(dxl));
            const std::vector<Tensor> out = RunInto(
                OpKind::kBatchNormBackward,
                {InLayout(g, gl), InLayout(x, xl), w, fwd.mean, fwd.var}, attrs,
                {{dt, shape}, {dt, c}, {dt, c}}, {dxl, Layout::kRowMajor, Layout::kRowMajor});
            REQUIRE_TENSORS_CLOSE(out[0], expected.x, Tol(dt), Tol(dt));
            REQUIRE_TENSORS_CLOSE(out[1], expected.weight, Tol(dt), Tol(dt));
            REQUIRE_TENSORS_CLOSE(out[2], expected.bias, Tol(dt), Tol(dt));
          }
        }
      }
    }
  }
}

TEST_CASE("channels-last batch norm gives the same bits on one thread and on two") {
  const Shape shape = {8, 16, 32, 32}, c = {16};
  REQUIRE(NumElements(shape) >= kParallelElements);
  const Attrs attrs = {{"eps", kEps}};
  const Tensor x = InLayout(Random(shape, DType::kF32, 9), Layout::kChannelsLast);
  const Tensor g = InLayout(Random(shape, DType::kF32, 10), Layout::kChannelsLast);
  const Tensor w = Random(c, DType::kF32, 11), b = Random(c, DType::kF32, 12);
  const std::vector<Layout> layouts = {Layout::kChannelsLast, Layout::kRowMajor, Layout::kRowMajor};
  const std::vector<TensorType> types = {{DType::kF32, shape}, {DType::kF32, c}, {DType::kF32, c}};
  // Forward then backward: y, mean, var, dx, dw, db.
  auto run = [&] {
    const std::vector<Tensor> fwd = RunInto(OpKind::kBatchNorm, {x, w, b}, attrs, types, layouts);
    const std::vector<Tensor> bwd =
        RunInto(OpKind::kBatchNormBackward, {g, x, w, fwd[1], fwd[2]}, attrs, types, layouts);
    std::vector<std::vector<float>> values;
    for (const std::vector<Tensor>* outs : {&fwd, &bwd}) {
      for (const Tensor& t : *outs) values.push_back(t.to_vector<float>());
    }
    return values;
  };
  const std::vector<std::vector<float>> one = testing::OnThreads(1, run),
                                        two = testing::OnThreads(2, run);
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("output " << i);
    CHECK(one[i] == two[i]);
  }
}

// ---- conv2d with a bias

TEST_CASE("conv2d with a bias into a channels-last y matches conv2d + bias") {
  const Attrs attrs = {{"stride", Ints{2, 1}},
                       {"padding", Ints{1, 1}},
                       {"dilation", Ints{1, 1}},
                       {"groups", int64_t{1}}};
  const Shape xs = {2, 3, 7, 6}, ws = {5, 3, 3, 2}, ys = {2, 5, 4, 7};
  for (DType dt : kDTypes) {
    const Tensor x = Random(xs, dt, 13), w = Random(ws, dt, 14),
                 bias = Random({1, 5, 1, 1}, dt, 15);
    const Tensor expected = conv2d(x, w, {{2, 1}, {1, 1}}) + bias;
    REQUIRE(expected.shape() == ys);
    for (Layout xl : kLayouts) {
      INFO(DTypeName(dt) << ", x " << LayoutName(xl));
      const std::vector<Tensor> y = RunInto(OpKind::kConv2d, {InLayout(x, xl), w, bias}, attrs,
                                            {{dt, ys}}, {Layout::kChannelsLast});
      REQUIRE_TENSORS_CLOSE(y[0], expected, Tol(dt), Tol(dt));
    }
  }
}

// ---- pooling

struct PoolCase {
  const char* name;
  Shape x;
  Pool2dOptions o;
};

// Tiling and not, and more channels than the NHWC loops take at once.
const PoolCase kPoolCases[] = {
    {"2x2 tiles", {2, 3, 6, 8}, {}},
    {"3x2 tiles, rows and columns left over", {2, 4, 7, 9}, {{3, 2}, {3, 2}, {0, 0}}},
    {"2x2 tiles, 130 channels", {1, 130, 4, 4}, {}},
    {"overlapping windows, padding", {2, 3, 5, 6}, {{3, 3}, {1, 1}, {1, 1}}},
    {"stride larger than kernel", {2, 3, 7, 5}, {{2, 1}, {3, 2}, {1, 0}}},
};

Attrs PoolAttrs(const Pool2dOptions& o) {
  return {{"kernel", Ints{o.kernel[0], o.kernel[1]}},
          {"stride", Ints{o.stride[0], o.stride[1]}},
          {"padding", Ints{o.padding[0], o.padding[1]}}};
}

Shape PoolOutShape(const Shape& x, const Pool2dOptions& o) {
  return {x[0], x[1], (x[2] + 2 * o.padding[0] - o.kernel[0]) / o.stride[0] + 1,
          (x[3] + 2 * o.padding[1] - o.kernel[1]) / o.stride[1] + 1};
}

// Inputs with no ties, relu's many tied zeros, and windows all equal.
std::vector<Tensor> PoolInputs(const Shape& shape, DType dt) {
  return {Random(shape, dt, 16), relu(Random(shape, dt, 17)), full(shape, -1.5, dt)};
}

TEST_CASE("max_pool2d from and into channels-last tensors matches the row-major op") {
  for (const PoolCase& c : kPoolCases) {
    const Shape ys = PoolOutShape(c.x, c.o);
    for (DType dt : kDTypes) {
      for (const Tensor& x : PoolInputs(c.x, dt)) {
        const Tensor expected = max_pool2d(x, c.o);
        for (Layout xl : kLayouts) {
          for (Layout yl : kLayouts) {
            INFO(c.name << ", " << DTypeName(dt) << ", x " << LayoutName(xl) << ", y "
                        << LayoutName(yl));
            const std::vector<Tensor> y =
                RunInto(OpKind::kMaxPool2d, {InLayout(x, xl)}, PoolAttrs(c.o), {{dt, ys}}, {yl});
            REQUIRE_TENSORS_CLOSE(y[0], expected, 0, 0);  // a max is exact
          }
        }
      }
    }
  }
}

TEST_CASE("max_pool2d_backward with channels-last tensors gives each window's first maximum") {
  for (const PoolCase& c : kPoolCases) {
    const Shape ys = PoolOutShape(c.x, c.o);
    for (DType dt : kDTypes) {
      const Tensor g = Random(ys, dt, 18);
      for (const Tensor& x : PoolInputs(c.x, dt)) {
        const Tensor expected = max_pool2d_backward(g, x, c.o);
        for (Layout gl : kLayouts) {
          for (Layout xl : kLayouts) {
            for (Layout dxl : kLayouts) {
              INFO(c.name << ", " << DTypeName(dt) << ", grad " << LayoutName(gl) << ", x "
                          << LayoutName(xl) << ", dx " << LayoutName(dxl));
              const std::vector<Tensor> dx =
                  RunInto(OpKind::kMaxPool2dBackward, {InLayout(g, gl), InLayout(x, xl)},
                          PoolAttrs(c.o), {{dt, c.x}}, {dxl});
              REQUIRE_TENSORS_CLOSE(dx[0], expected, Tol(dt), Tol(dt));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("tiled max pooling over channels-last NaNs keeps the row-major loops' choices") {
  const Shape shape = {2, 3, 4, 6}, ys = {2, 3, 2, 3};
  const Pool2dOptions o;  // 2x2 tiles; NaNs first, last and inside windows
  const Ints nan_at[] = {{0, 0, 0, 0}, {0, 1, 1, 3}, {1, 2, 2, 3}, {1, 0, 3, 5}};
  std::vector<double> values = Random(shape, DType::kF64, 21).to_vector<double>();
  for (const Ints& i : nan_at) {
    values[testing::Ravel(i, shape)] = std::numeric_limits<double>::quiet_NaN();
  }
  for (DType dt : kDTypes) {
    const Tensor x = from_vector(values, shape).to(dt);
    const Tensor g = Random(ys, dt, 22);
    const Tensor expected = max_pool2d(x, o), expected_dx = max_pool2d_backward(g, x, o);
    const Tensor x_nhwc = InLayout(x, Layout::kChannelsLast);
    INFO(DTypeName(dt));
    for (Layout yl : kLayouts) {
      INFO("y " << LayoutName(yl));
      const std::vector<Tensor> y =
          RunInto(OpKind::kMaxPool2d, {x_nhwc}, PoolAttrs(o), {{dt, ys}}, {yl});
      REQUIRE_TENSORS_CLOSE(y[0], expected, 0, 0);
    }
    const std::vector<Tensor> dx = RunInto(OpKind::kMaxPool2dBackward, {g, x_nhwc}, PoolAttrs(o),
                                           {{dt, shape}}, {Layout::kChannelsLast});
    REQUIRE_TENSORS_CLOSE(dx[0], expected_dx, 0, 0);
  }
}

TEST_CASE("avg_pool2d and its backward with channels-last tensors match the row-major ops") {
  for (const PoolCase& c : kPoolCases) {
    const Shape ys = PoolOutShape(c.x, c.o);
    for (DType dt : kDTypes) {
      const Tensor x = Random(c.x, dt, 19), g = Random(ys, dt, 20);
      const Tensor expected = avg_pool2d(x, c.o);
      const Tensor expected_dx = avg_pool2d_backward(g, c.x, c.o);
      Attrs backward_attrs = PoolAttrs(c.o);
      backward_attrs.Set("input_shape", c.x);
      for (Layout in : kLayouts) {
        for (Layout out : kLayouts) {
          INFO(c.name << ", " << DTypeName(dt) << ", input " << LayoutName(in) << ", output "
                      << LayoutName(out));
          const std::vector<Tensor> y =
              RunInto(OpKind::kAvgPool2d, {InLayout(x, in)}, PoolAttrs(c.o), {{dt, ys}}, {out});
          REQUIRE_TENSORS_CLOSE(y[0], expected, Tol(dt), Tol(dt));
          const std::vector<Tensor> dx = RunInto(OpKind::kAvgPool2dBackward, {InLayout(g, in)},
                                                 backward_attrs, {{dt, c.x}}, {out});
          REQUIRE_TENSORS_CLOSE(dx[0], expected_dx, Tol(dt), Tol(dt));
        }
      }
    }
  }
}

}  // namespace
}  // namespace tc
