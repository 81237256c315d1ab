// The reduction family's eager kernels against f64 reference loops written
// here: every dim set (all, one, several, negative), keepdim on and off,
// contiguous and strided inputs, size-1 and zero-size dims, each dtype the op
// takes, and every shape error with its exact message.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "runtime/kernels/strided.h"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Attrs ReduceAttrs(std::vector<int64_t> dims, bool keepdim) {
  return {{"dims", std::move(dims)}, {"keepdim", keepdim}};
}

Tensor Run(OpKind op, const Tensor& x, const Attrs& attrs) {
  absl::StatusOr<TensorList> out = Call(op, {x}, attrs);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  return (*out)[0];
}

std::string ErrorOf(OpKind op, const Tensor& x, const Attrs& attrs) {
  return std::string(Call(op, {x}, attrs).status().message());
}

// `t`'s values in a transposed layout: a view whose strides run backwards.
// Built by hand (not with permute) so these tests need only this family.
Tensor Transposed(const Tensor& t) {
  Shape reversed(t.shape().rbegin(), t.shape().rend());
  std::vector<int64_t> strides = ContiguousStrides(reversed);
  std::reverse(strides.begin(), strides.end());
  Tensor base = Tensor::Empty(reversed, t.dtype());
  Tensor view = Tensor::View(base.storage(), t.dtype(), t.shape(), strides, 0);
  kernels::CopyStrided(t, view);
  return view;
}

// `t`'s values at every other element of the last dim of a larger buffer,
// starting one element in (so the view has a gap stride and an offset).
Tensor Strided(const Tensor& t) {
  Shape padded = t.shape();
  padded.back() = 2 * padded.back() + 1;
  std::vector<int64_t> strides = ContiguousStrides(padded);
  strides.back() = 2;
  Tensor base = Tensor::Empty(padded, t.dtype());
  Tensor view = Tensor::View(base.storage(), t.dtype(), t.shape(), strides, 1);
  kernels::CopyStrided(t, view);
  return view;
}

// The same values in three layouts: contiguous, transposed, strided.
std::vector<Tensor> Layouts(const Tensor& t) {
  if (t.dim() == 0) return {t};
  return {t, Transposed(t), Strided(t)};
}

// Row-major multi-index of flat position `flat` in `shape`.
std::vector<int64_t> Unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

// Reference: groups x's values by output slot and calls f on each group, in
// row-major order. `dims` may be negative; [] means every dim.
Tensor RefReduce(const Tensor& x, std::vector<int64_t> dims, bool keepdim,
                 const std::function<double(const std::vector<double>&)>& f) {
  const int64_t rank = x.dim();
  std::vector<bool> reduced(rank, dims.empty());
  for (int64_t d : dims) reduced[(d + rank) % rank] = true;
  Shape kept = x.shape(), out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) kept[d] = 1;
    if (!reduced[d] || keepdim) out_shape.push_back(kept[d]);
  }
  std::vector<std::vector<double>> groups(NumElements(kept));
  const std::vector<double> values = x.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) {
    std::vector<int64_t> index = Unravel(static_cast<int64_t>(i), x.shape());
    int64_t slot = 0;
    for (int64_t d = 0; d < rank; ++d) slot = slot * kept[d] + (reduced[d] ? 0 : index[d]);
    groups[slot].push_back(values[i]);
  }
  Tensor out = Tensor::Empty(out_shape, DType::kF64);
  for (size_t o = 0; o < groups.size(); ++o) out.data<double>()[o] = f(groups[o]);
  return out;
}

double RefSum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double RefMean(const std::vector<double>& v) { return RefSum(v) / v.size(); }
double RefMax(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) m = (std::isnan(x) || x > m) && !std::isnan(m) ? x : m;
  return m;
}
double RefMin(const std::vector<double>& v) {
  double m = kInf;
  for (double x : v) m = (std::isnan(x) || x < m) && !std::isnan(m) ? x : m;
  return m;
}
std::function<double(const std::vector<double>&)> RefVar(int64_t correction) {
  return [correction](const std::vector<double>& v) {
    const double mean = RefMean(v);
    double m2 = 0;
    for (double x : v) m2 += (x - mean) * (x - mean);
    return m2 / std::max<double>(0, static_cast<double>(v.size()) - correction);
  };
}

// Tolerances against the f64 reference: f64 and i64 to rounding, f32 to the
// rounding of a few dozen operations on values of order 1.
double Rtol(DType dtype) { return dtype == DType::kF32 ? 1e-5 : 1e-12; }
double Atol(DType dtype) { return dtype == DType::kF32 ? 1e-5 : 1e-12; }

// The dim sets every reduction is tried with on a rank-3 input.
const std::vector<std::vector<int64_t>> kDimSets = {{},     {0},      {1},      {-1},
                                                    {0, 2}, {-3, -1}, {2, 0, 1}};

// Checks `op` against `ref` for every dtype, dim set, keepdim and layout, on
// ordinary, size-1 and zero-size shapes (zero-size only when `empty_ok`).
void CheckReduction(OpKind op, std::vector<DType> dtypes,
                    const std::function<double(const std::vector<double>&)>& ref,
                    const Attrs& extra = {}, bool empty_ok = true) {
  std::vector<Shape> shapes = {{3, 4, 5}, {2, 1, 3}};
  if (empty_ok) shapes.push_back({2, 0, 3});
  uint64_t seed = 1;
  for (DType dtype : dtypes) {
    for (const Shape& shape : shapes) {
      const Tensor x = testing::Random(shape, dtype, seed++);
      for (const std::vector<int64_t>& dims : kDimSets) {
        for (bool keepdim : {false, true}) {
          Attrs attrs = ReduceAttrs(dims, keepdim);
          for (const auto& [name, value] : extra.entries()) attrs.Set(name, value);
          const Tensor expected = RefReduce(x, dims, keepdim, ref);
          for (const Tensor& in : Layouts(x)) {
            INFO(in.type().ToString()
                 << " strides " << ShapeToString(in.strides()) << " attrs " << attrs.ToString());
            const Tensor out = Run(op, in, attrs);
            CHECK(out.dtype() == dtype);
            REQUIRE_TENSORS_CLOSE(out, expected, Rtol(dtype), Atol(dtype));
          }
        }
      }
    }
  }
}

TEST_CASE("sum") {
  SECTION("random inputs against the reference") {
    CheckReduction(OpKind::kSum, {DType::kF32, DType::kF64, DType::kI64}, RefSum);
  }

  SECTION("a scalar is its own sum") {
    const Tensor x = scalar(2.5, DType::kF64);
    REQUIRE_TENSORS_CLOSE(Run(OpKind::kSum, x, ReduceAttrs({}, false)), x, 0, 0);
    REQUIRE_TENSORS_CLOSE(Run(OpKind::kSum, scalar(2.5), ReduceAttrs({}, true)), x, 0, 0);
  }
  SECTION("the sum of nothing is 0") {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI64}) {
      const Tensor out = Run(OpKind::kSum, zeros({0, 3}, dtype), ReduceAttrs({0}, false));
      REQUIRE_TENSORS_CLOSE(out, zeros({3}, DType::kF64), 0, 0);
    }
  }
  SECTION("f32 sums of many elements stay close to the f64 sum") {
    // Terms near 10, so the running sum dwarfs each term: one f32 accumulator
    // in sequence would be off by ~5e-5 relative at 2^20 terms.
    for (const Shape& shape : {Shape{1 << 20}, Shape{4096, 256}}) {
      const Tensor x = testing::Random(shape, DType::kF32, 7) + 10.0;
      for (std::vector<int64_t> dims : {std::vector<int64_t>{}, {0}}) {
        const Tensor expected = RefReduce(x, dims, false, RefSum);
        for (const Tensor& in : Layouts(x)) {
          INFO(in.type().ToString()
               << " strides " << ShapeToString(in.strides()) << " dims " << ShapeToString(dims));
          REQUIRE_TENSORS_CLOSE(Run(OpKind::kSum, in, ReduceAttrs(dims, false)), expected, 5e-6, 0);
        }
      }
    }
  }
  SECTION("sums and means over leading dims split across threads, with the same bits") {
    // Large enough to split (runtime/threads.h); 300 columns in two uneven ranges.
    const Tensor x = testing::Random({512, 300}, DType::kF32, 8);
    for (OpKind op : {OpKind::kSum, OpKind::kMean}) {
      const auto run = [&] { return Run(op, x, ReduceAttrs({0}, false)); };
      const Tensor one = testing::OnThreads(1, run), two = testing::OnThreads(2, run);
      REQUIRE_TENSORS_CLOSE(two, one, 0, 0);
      REQUIRE_TENSORS_CLOSE(one, RefReduce(x, {0}, false, op == OpKind::kSum ? RefSum : RefMean),
                            1e-5, 1e-5);
    }
  }
  SECTION("errors") {
    const Tensor x = zeros({2, 3});
    CHECK(ErrorOf(OpKind::kSum, x, ReduceAttrs({1, -1}, false)) == "sum: dims [1,-1] repeat a dim");
    CHECK(ErrorOf(OpKind::kSum, x, ReduceAttrs({2}, false)) ==
          "sum: dim 2 out of range for rank 2");
    CHECK(ErrorOf(OpKind::kSum, x, ReduceAttrs({-3}, true)) ==
          "sum: dim -3 out of range for rank 2");
    CHECK(ErrorOf(OpKind::kSum, zeros({2, 3}, DType::kBool), ReduceAttrs({}, false)) ==
          "sum: input must be numeric, got bool[2,3]");
  }
}

TEST_CASE("mean") {
  SECTION("random inputs against the reference") {
    CheckReduction(OpKind::kMean, {DType::kF32, DType::kF64}, RefMean);
  }

  SECTION("the mean of nothing is NaN") {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Tensor out = Run(OpKind::kMean, zeros({0, 3}, dtype), ReduceAttrs({0}, true));
      REQUIRE_TENSORS_CLOSE(out, full({1, 3}, kNan, DType::kF64), 0, 0);
      CHECK(std::isnan(out.to_vector<double>()[0]));
    }
  }
  SECTION("errors") {
    CHECK(ErrorOf(OpKind::kMean, zeros({2, 3}, DType::kI64), ReduceAttrs({}, false)) ==
          "mean: input must be floating point, got i64[2,3]");
    CHECK(ErrorOf(OpKind::kMean, zeros({2, 3}), ReduceAttrs({0, 0}, false)) ==
          "mean: dims [0,0] repeat a dim");
    CHECK(ErrorOf(OpKind::kMean, zeros({2, 3}), ReduceAttrs({5}, false)) ==
          "mean: dim 5 out of range for rank 2");
  }
}

// max and min share their special cases: NaN propagates, infinities are
// values like any other, and an empty dim has no extremum.
void CheckExtremum(OpKind op, const std::function<double(const std::vector<double>&)>& ref) {
  const std::string name(OpName(op));
  SECTION("random inputs against the reference") {
    CheckReduction(op, {DType::kF32, DType::kF64, DType::kI64}, ref, {}, /*empty_ok=*/false);
  }

  SECTION("NaN propagates, infinities do not vanish") {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Tensor x =
          from_vector<double>({1, kNan, 3, -kInf, -kInf, kInf, kInf, 2, 5}, {3, 3}).to(dtype);
      for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0}, {1}, {}}) {
        for (const Tensor& in : Layouts(x)) {
          INFO(name << " " << in.type().ToString() << " dims " << ShapeToString(dims));
          REQUIRE_TENSORS_CLOSE(Run(op, in, ReduceAttrs(dims, false)),
                                RefReduce(x, dims, false, ref), 0, 0);
        }
      }
    }
  }
  SECTION("a zero-size dim that is kept gives an empty result") {
    const Tensor out = Run(op, zeros({0, 3}), ReduceAttrs({1}, true));
    CHECK(out.shape() == Shape{0, 1});
  }
  SECTION("errors") {
    CHECK(ErrorOf(op, zeros({0, 3}), ReduceAttrs({0}, false)) ==
          name + ": reduction over empty dim 0 of f32[0,3]");
    CHECK(ErrorOf(op, zeros({2, 0}, DType::kI64), ReduceAttrs({}, false)) ==
          name + ": reduction over empty dim 1 of i64[2,0]");
    CHECK(ErrorOf(op, zeros({2, 3}), ReduceAttrs({-1, 1}, false)) ==
          name + ": dims [-1,1] repeat a dim");
    CHECK(ErrorOf(op, zeros({2, 3}), ReduceAttrs({-3}, false)) ==
          name + ": dim -3 out of range for rank 2");
    CHECK(ErrorOf(op, zeros({2, 3}, DType::kBool), ReduceAttrs({0}, false)) ==
          name + ": input must be numeric, got bool[2,3]");
  }
}

TEST_CASE("max") { CheckExtremum(OpKind::kMax, RefMax); }

TEST_CASE("min") { CheckExtremum(OpKind::kMin, RefMin); }

Attrs VarAttrs(std::vector<int64_t> dims, bool keepdim, int64_t correction) {
  Attrs attrs = ReduceAttrs(std::move(dims), keepdim);
  attrs.Set("correction", correction);
  return attrs;
}

TEST_CASE("var") {
  SECTION("random inputs against the reference") {
    for (int64_t correction : {0, 1, 2}) {
      INFO("correction " << correction);
      CheckReduction(OpKind::kVar, {DType::kF32, DType::kF64}, RefVar(correction),
                     {{"correction", correction}});
    }
  }

  SECTION("no more elements than the correction: inf, or NaN for 0 / 0") {
    const Tensor x = from_vector<double>({1, 3, 3, 3}, {2, 2});
    for (DType dtype : {DType::kF32, DType::kF64}) {
      // Dim 0 has 2 elements: divisor 2 - 2 = 0 over deviations 1 and 0.
      REQUIRE_TENSORS_CLOSE(Run(OpKind::kVar, x.to(dtype), VarAttrs({0}, false, 2)),
                            from_vector<double>({kInf, kNan}, {2}), 0, 0);
      // A divisor of 2 - 3 clamps to 0, as in PyTorch.
      REQUIRE_TENSORS_CLOSE(Run(OpKind::kVar, x.to(dtype), VarAttrs({0}, true, 3)),
                            from_vector<double>({kInf, kNan}, {1, 2}), 0, 0);
      // One element with correction 1: 0 / 0.
      REQUIRE_TENSORS_CLOSE(Run(OpKind::kVar, ones({1, 2}, dtype), VarAttrs({0}, false, 1)),
                            from_vector<double>({kNan, kNan}, {2}), 0, 0);
    }
  }
  SECTION("large offsets do not cancel") {
    // A naive E[x^2] - E[x]^2 loses every digit here; two passes keep them.
    const Tensor x = from_vector<double>({1e8 + 1, 1e8 + 2, 1e8 + 3}, {3});
    REQUIRE_TENSORS_CLOSE(Run(OpKind::kVar, x, VarAttrs({}, false, 1)), scalar(1, DType::kF64),
                          1e-12, 0);
    const Tensor y = from_vector<float>({1e4 + 1, 1e4 + 2, 1e4 + 3}, {3});
    REQUIRE_TENSORS_CLOSE(Run(OpKind::kVar, y, VarAttrs({}, false, 1)), scalar(1, DType::kF64),
                          1e-6, 0);
  }
  SECTION("errors") {
    CHECK(ErrorOf(OpKind::kVar, zeros({2, 3}, DType::kI64), VarAttrs({}, false, 1)) ==
          "var: input must be floating point, got i64[2,3]");
    CHECK(ErrorOf(OpKind::kVar, zeros({2, 3}), VarAttrs({0, -2}, false, 1)) ==
          "var: dims [0,-2] repeat a dim");
    CHECK(ErrorOf(OpKind::kVar, zeros({2, 3}), VarAttrs({2}, false, 1)) ==
          "var: dim 2 out of range for rank 2");
    CHECK(ErrorOf(OpKind::kVar, zeros({2, 3}), ReduceAttrs({}, false)) ==
          "var: missing attribute 'correction'");
  }
}

// Reference argmax / softmax: apply f to every line of x along `dim`.
// f gets the line's values and returns the values of the output line.
// With `collapse`, each output line has one value, and keeps its dim only with
// `keepdim`.
Tensor RefAlongDim(const Tensor& x, int64_t dim, bool collapse,
                   const std::function<std::vector<double>(const std::vector<double>&)>& f,
                   bool keepdim = true) {
  dim = (dim + x.dim()) % x.dim();
  const std::vector<double> values = x.to_vector<double>();
  Shape out_shape = x.shape();
  if (collapse) out_shape[dim] = 1;
  if (!keepdim) out_shape.erase(out_shape.begin() + dim);
  Tensor out = Tensor::Empty(out_shape, DType::kF64);
  double* op = out.data<double>();
  const int64_t n = x.shape()[dim];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape()[d];
  const int64_t outer = NumElements(x.shape()) / std::max<int64_t>(n * inner, 1);
  const int64_t out_n = collapse ? 1 : n;
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t b = 0; b < inner; ++b) {
      std::vector<double> line;
      for (int64_t k = 0; k < n; ++k) line.push_back(values[(a * n + k) * inner + b]);
      const std::vector<double> result = f(line);
      for (int64_t k = 0; k < out_n; ++k) op[(a * out_n + k) * inner + b] = result[k];
    }
  }
  return out;
}

std::vector<double> RefArgmax(const std::vector<double>& line) {
  size_t best = 0;
  for (size_t k = 1; k < line.size(); ++k) {
    if (std::isnan(line[best])) break;
    if (std::isnan(line[k]) || line[k] > line[best]) best = k;
  }
  return {static_cast<double>(best)};
}

TEST_CASE("argmax") {
  SECTION("random inputs against the reference") {
    uint64_t seed = 100;
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI64}) {
      // i64 values are drawn from [0, 10), so lines have ties: the first wins.
      for (const Shape& shape : {Shape{3, 4, 5}, Shape{2, 1, 6}, Shape{0, 3, 2}}) {
        const Tensor x = testing::Random(shape, dtype, seed++);
        for (int64_t dim : {0, 1, 2, -1, -3}) {
          if (x.shape()[(dim + 3) % 3] == 0) continue;
          for (bool keepdim : {false, true}) {
            const Tensor expected = RefAlongDim(x, dim, true, RefArgmax, keepdim);
            for (const Tensor& in : Layouts(x)) {
              INFO(in.type().ToString() << " strides " << ShapeToString(in.strides()) << " dim "
                                        << dim << " keepdim " << keepdim);
              const Tensor out = Run(OpKind::kArgmax, in, {{"dim", dim}, {"keepdim", keepdim}});
              CHECK(out.dtype() == DType::kI64);
              REQUIRE_TENSORS_CLOSE(out, expected, 0, 0);
            }
          }
        }
      }
    }
  }
  SECTION("ties take the first index; NaN is the maximum") {
    const Tensor x = from_vector<double>({1, 3, 3, 2, kNan, 5, kNan, 1, 7, 7, 7, 7}, {3, 4});
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Tensor out =
          Run(OpKind::kArgmax, x.to(dtype), {{"dim", int64_t{1}}, {"keepdim", false}});
      CHECK(out.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
    }
  }
  SECTION("errors") {
    CHECK(ErrorOf(OpKind::kArgmax, zeros({0, 3}), {{"dim", int64_t{0}}, {"keepdim", false}}) ==
          "argmax: argmax over empty dim 0");
    CHECK(ErrorOf(OpKind::kArgmax, zeros({2, 3}), {{"dim", int64_t{2}}, {"keepdim", false}}) ==
          "argmax: dim 2 out of range for rank 2");
    CHECK(ErrorOf(OpKind::kArgmax, zeros({2, 3}, DType::kBool),
                  {{"dim", int64_t{0}}, {"keepdim", false}}) ==
          "argmax: input must be numeric, got bool[2,3]");
  }
}

std::vector<double> RefSoftmax(const std::vector<double>& line) {
  double sum = 0;
  for (double v : line) sum += std::exp(v);
  std::vector<double> out;
  for (double v : line) out.push_back(std::exp(v) / sum);
  return out;
}

std::vector<double> RefLogSoftmax(const std::vector<double>& line) {
  std::vector<double> out = RefSoftmax(line);
  for (double& v : out) v = std::log(v);
  return out;
}

// The reference exponentiates directly, so keep inputs where that is exact
// enough; the scaled-up case below checks stability against a shifted input.
void CheckSoftmax(OpKind op,
                  const std::function<std::vector<double>(const std::vector<double>&)>& ref) {
  SECTION("random inputs against the reference") {
    uint64_t seed = 200;
    for (DType dtype : {DType::kF32, DType::kF64}) {
      for (const Shape& shape : {Shape{3, 4, 5}, Shape{2, 1, 6}, Shape{2, 0, 3}}) {
        const Tensor x = testing::Random(shape, dtype, seed++);
        for (int64_t dim : {0, 1, 2, -1, -2}) {
          const Tensor expected = RefAlongDim(x, dim, false, ref);
          for (const Tensor& in : Layouts(x)) {
            INFO(OpName(op) << " " << in.type().ToString() << " strides "
                            << ShapeToString(in.strides()) << " dim " << dim);
            const Tensor out = Run(op, in, {{"dim", dim}});
            CHECK(out.dtype() == dtype);
            REQUIRE_TENSORS_CLOSE(out, expected, Rtol(dtype), Atol(dtype));
          }
        }
      }
    }
  }

  SECTION("large inputs: the result is that of the input minus its max") {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      // exp(1000) overflows; the line's max subtracted first keeps it finite.
      const Tensor x = from_vector<double>({1000, 999, 998, -1000, -1001, -1003}, {2, 3});
      const Tensor shifted = from_vector<double>({0, -1, -2, 0, -1, -3}, {2, 3});
      const Tensor out = Run(op, x.to(dtype), {{"dim", int64_t{1}}});
      REQUIRE_TENSORS_CLOSE(out, RefAlongDim(shifted, 1, false, ref), Rtol(dtype), Atol(dtype));
    }
  }
  SECTION("errors") {
    const std::string name(OpName(op));
    CHECK(ErrorOf(op, zeros({2, 3}, DType::kI64), {{"dim", int64_t{0}}}) ==
          name + ": input must be floating point, got i64[2,3]");
    CHECK(ErrorOf(op, zeros({2, 3}), {{"dim", int64_t{-3}}}) ==
          name + ": dim -3 out of range for rank 2");
    CHECK(ErrorOf(op, scalar(1), {{"dim", int64_t{0}}}) ==
          name + ": dim 0 out of range for rank 0");
  }
}

TEST_CASE("softmax") { CheckSoftmax(OpKind::kSoftmax, RefSoftmax); }

TEST_CASE("log_softmax") { CheckSoftmax(OpKind::kLogSoftmax, RefLogSoftmax); }

}  // namespace
}  // namespace tc
