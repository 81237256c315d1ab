// matmul and linear against f64 references written here as sums over the
// definition: 2-D and batched products with NumPy batch broadcasting,
// transposed, sliced and expanded operands, size-1 and zero-size dims; f64
// exactly (up to rounding order), f32 within a tolerance, on each gemm
// candidate (runtime/gemm.h): forced to oneDNN, forced to OpenBLAS, and
// chosen per shape.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "runtime/gemm.h"
#include "runtime/kernels/primitive_cache.h"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using testing::Index;
using testing::Ravel;
using testing::Reference;
using testing::Unravel;
using testing::Values;

// The batch part of the index into an operand of shape `s` that the output
// index `i` reads: leading dims dropped, size-1 dims broadcast.
Index OperandIndex(const Index& i, const Shape& s) {
  Index out(s.size());
  const size_t lead = i.size() - s.size();
  for (size_t d = 0; d + 2 < s.size(); ++d) out[d] = s[d] == 1 ? 0 : i[lead + d];
  return out;
}

// a @ b by the definition, batch dims broadcast as in NumPy.
Tensor ReferenceMatmul(const Tensor& a, const Tensor& b) {
  const Shape &as = a.shape(), &bs = b.shape();
  const size_t ra = as.size(), rb = bs.size(), r = std::max(ra, rb);
  Shape shape(r);
  for (size_t d = 0; d + 2 < r; ++d) {
    const int64_t da = d + ra < r ? 1 : as[d + ra - r], db = d + rb < r ? 1 : bs[d + rb - r];
    shape[d] = da == 1 ? db : da;
  }
  shape[r - 2] = as[ra - 2];
  shape[r - 1] = bs[rb - 1];
  const Values av(a), bv(b);
  return Reference(shape, [&](const Index& i) {
    Index ai = OperandIndex(i, as), bi = OperandIndex(i, bs);
    ai[ra - 2] = i[r - 2];
    bi[rb - 1] = i[r - 1];
    double sum = 0;
    for (int64_t k = 0; k < as[ra - 1]; ++k) {
      ai[ra - 1] = bi[rb - 2] = k;
      sum += av[ai] * bv[bi];
    }
    return sum;
  });
}

// x w^T + b by the definition.
Tensor ReferenceLinear(const Tensor& x, const Tensor& w, const Tensor& b) {
  Shape shape = x.shape();
  shape.back() = w.shape()[0];
  const Values xv(x), wv(w), bv(b);
  return Reference(shape, [&](const Index& i) {
    Index xi = i;
    const int64_t o = i.back();
    double sum = bv[{o}];
    for (int64_t k = 0; k < w.shape()[1]; ++k) {
      xi.back() = k;
      sum += xv[xi] * wv[{o, k}];
    }
    return sum;
  });
}

// Checks a result against its f64 reference: f64 up to rounding order, f32
// within what float accumulation over a few dozen terms gives.
void CheckClose(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() == DType::kF64) {
    REQUIRE_TENSORS_CLOSE(actual, expected, 1e-12, 1e-12);
  } else {
    REQUIRE_TENSORS_CLOSE(actual, expected, 1e-5, 1e-4);
  }
}

// `v` (1-D) as a view with stride 2 into a larger buffer.
Tensor Stride2(const Tensor& v) {
  const int64_t n = v.shape()[0];
  return pad(v.reshape({n, 1}), {0, 0, 0, 1}).slice(1, 0, 1).reshape({n});
}

std::string ErrorOf(OpKind op, std::vector<Tensor> inputs) {
  return std::string(Call(op, inputs, {}).status().message());
}

const DType kFloatDTypes[] = {DType::kF32, DType::kF64};

// The test case runs once per gemm choice (a Catch2 generator), each run
// under that choice.
class EachGemmChoice {
 public:
  EachGemmChoice()
      : choice_(GENERATE(GemmChoice::kAuto, GemmChoice::kOneDnn, GemmChoice::kOpenBlas)) {
    REQUIRE(SetGemmChoice(choice_).ok());
  }
  ~EachGemmChoice() { (void)SetGemmChoice(GemmChoice::kAuto); }
  absl::string_view name() const { return GemmChoiceName(choice_); }

 private:
  GemmChoice choice_;
};

TEST_CASE("matmul multiplies matrices, batch dims broadcast") {
  const EachGemmChoice gemm;
  INFO("gemm " << gemm.name());
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4, 3}, {3, 5}},          {{1, 3}, {3, 1}},
      {{1, 1}, {1, 1}},          {{3, 33, 64}, {64, 17}},
      {{2, 1, 4, 3}, {5, 3, 2}}, {{4, 3}, {2, 3, 5}},
      {{2, 3, 4, 3}, {3, 2}},    {{3, 1, 2, 4}, {1, 4, 4, 2}},
      {{0, 3}, {3, 5}},          {{4, 0}, {0, 5}},
      {{2, 0, 4, 3}, {3, 2}},    {{4, 3}, {3, 0}},
      {{2, 4, 0}, {1, 0, 3}}};
  for (DType dtype : kFloatDTypes) {
    for (const auto& [as, bs] : shapes) {
      const Tensor a = testing::Random(as, dtype, 1), b = testing::Random(bs, dtype, 2);
      for (bool contiguous : {true, false}) {
        INFO(DTypeName(dtype) << ShapeToString(as) << " x " << ShapeToString(bs)
                              << (contiguous ? " contiguous" : " non-contiguous"));
        const Tensor ai = contiguous ? a : testing::NonContiguous(a);
        const Tensor bi = contiguous ? b : testing::NonContiguous(b);
        CheckClose(matmul(ai, bi), ReferenceMatmul(a, b));
      }
    }
  }
}

TEST_CASE("matmul takes transposed, sliced and expanded operands") {
  const EachGemmChoice gemm;
  INFO("gemm " << gemm.name());
  for (DType dtype : kFloatDTypes) {
    INFO(DTypeName(dtype));
    const auto random = [&](const Shape& shape, uint64_t seed) {
      return testing::Random(shape, dtype, seed);
    };
    const std::vector<std::pair<Tensor, Tensor>> operands = {
        // transposed: column-major matrices
        {random({3, 4}, 3).transpose(0, 1), random({5, 3}, 4).transpose(0, 1)},
        {random({2, 3, 4}, 5).transpose(1, 2), random({2, 5, 3}, 6).permute({0, 2, 1})},
        // batch dims in a permuted order
        {random({4, 2, 3}, 7).permute({1, 0, 2}), random({3, 2, 5}, 8).permute({1, 0, 2})},
        // non-unit strides along both matrix dims and the batch dim
        {random({4, 6}, 9).slice(1, 0, 6, 2), random({6, 5}, 10).slice(0, 1, 6, 2)},
        {random({4, 8, 3}, 11).slice(0, 0, 4, 2).slice(1, 1, 8, 2), random({3, 5}, 12)},
        // expanded: stride 0 along a batch dim, and along a matrix dim
        {random({5, 4, 3}, 13), random({1, 3, 2}, 14).expand({5, 3, 2})},
        {random({1, 4, 3}, 15).expand({5, 4, 3}), random({5, 3, 2}, 16)},
        {random({1, 3}, 17).expand({4, 3}), random({3, 5}, 18)},
        {random({4, 3}, 19), random({3, 1}, 20).expand({3, 5})},
        // a large K-major a (a weight gradient's g^T), which oneDNN's plan
        // may reorder row-major before the product
        {random({512, 256}, 21).transpose(0, 1), random({512, 64}, 22)},
        // large enough for auto to time its candidates: both operands
        // transposed, batched with a broadcast b, and a row stride past the
        // row's end (a slice of columns)
        {random({256, 128}, 23).transpose(0, 1), random({96, 256}, 24).transpose(0, 1)},
        {random({4, 128, 64}, 25), random({1, 64, 160}, 26).expand({4, 64, 160})},
        {random({200, 300}, 27).slice(1, 0, 256), random({256, 64}, 28)},
    };
    for (const auto& [a, b] : operands) {
      INFO(a.type().ToString() << " strides " << ShapeToString(a.strides()) << " x "
                               << b.type().ToString() << " strides " << ShapeToString(b.strides()));
      CheckClose(matmul(a, b), ReferenceMatmul(a, b));
    }
  }
}

TEST_CASE("matmul shape errors") {
  const auto f32 = [](const Shape& shape) { return zeros(shape); };
  CHECK(ErrorOf(OpKind::kMatmul, {f32({4, 3}), f32({2, 5})}) ==
        "matmul: inner dims differ: [4,3] x [2,5]");
  CHECK(ErrorOf(OpKind::kMatmul, {f32({3}), f32({3, 2})}) ==
        "matmul: operands must have rank >= 2, got f32[3] x f32[3,2]");
  CHECK(ErrorOf(OpKind::kMatmul, {f32({2, 3}), f32({})}) ==
        "matmul: operands must have rank >= 2, got f32[2,3] x f32[]");
  CHECK(ErrorOf(OpKind::kMatmul, {f32({2, 4, 3}), f32({3, 3, 2})}) ==
        "matmul: batch dims: shapes [2] and [3] do not broadcast");
  CHECK(ErrorOf(OpKind::kMatmul, {f32({2, 3}), zeros({3, 2}, DType::kF64)}) ==
        "matmul: dtypes differ: f32[2,3] vs f64[3,2]");
  CHECK(ErrorOf(OpKind::kMatmul, {zeros({2, 3}, DType::kI64), zeros({3, 2}, DType::kI64)}) ==
        "matmul: operands must be floating point, got i64[2,3]");
}

TEST_CASE("auto times each new product shape once and keeps the verdict") {
  REQUIRE(GetGemmChoice() == GemmChoice::kAuto);
  const Tensor a = testing::Random({160, 96}, DType::kF32, 31);
  const Tensor b = testing::Random({96, 112}, DType::kF32, 32);
  const GemmShapesTimed before = GetGemmShapesTimed();
  const Tensor first = matmul(a, b);
  const GemmShapesTimed after = GetGemmShapesTimed();
  CHECK(after.shapes == before.shapes + 1);
  // The same shape again: no timing, the same kernel, the same bits.
  REQUIRE_TENSORS_CLOSE(matmul(a, b), first, 0, 0);
  CHECK(GetGemmShapesTimed().shapes == after.shapes);
  CheckClose(first, ReferenceMatmul(a, b));
  // Below kMinTimedMacs a product is not timed.
  matmul(testing::Random({8, 8}, DType::kF32, 33), testing::Random({8, 8}, DType::kF32, 34));
  CHECK(GetGemmShapesTimed().shapes == after.shapes);
}

TEST_CASE("a frozen weight matrix is packed once, and a new one again") {
  const Tensor a = testing::Random({24, 64}, DType::kF32, 41);
  Tensor b = testing::Random({64, 48}, DType::kF32, 42);
  b.storage()->Freeze();
  const Tensor expected = ReferenceMatmul(a, b);
  const int64_t before = kernels::OneDnnPacks();
  CheckClose(matmul(a, b), expected);
  // One reorder, where oneDNN prefers another layout for this shape.
  const int64_t packs = kernels::OneDnnPacks() - before;
  CHECK(packs <= 1);
  CheckClose(matmul(a, b), expected);
  CHECK(kernels::OneDnnPacks() - before == packs);
  // Another frozen matrix of the same shape is packed anew.
  Tensor c = testing::Random({64, 48}, DType::kF32, 43);
  c.storage()->Freeze();
  CheckClose(matmul(a, c), ReferenceMatmul(a, c));
  CHECK(kernels::OneDnnPacks() - before == 2 * packs);
  // linear's weight is read transposed: packed as well.
  Tensor w = testing::Random({48, 64}, DType::kF32, 44);
  w.storage()->Freeze();
  const Tensor bias = testing::Random({48}, DType::kF32, 45);
  CheckClose(linear(a, w, bias), ReferenceLinear(a, w, bias));
  const int64_t with_linear = kernels::OneDnnPacks();
  CHECK(with_linear - before - 2 * packs <= 1);
  CheckClose(linear(a, w, bias), ReferenceLinear(a, w, bias));
  CHECK(kernels::OneDnnPacks() == with_linear);
}

TEST_CASE("gemm choices parse by name, and a bad name says what is expected") {
  for (GemmChoice c : {GemmChoice::kAuto, GemmChoice::kOneDnn, GemmChoice::kOpenBlas}) {
    REQUIRE(ParseGemmChoice(GemmChoiceName(c)).value() == c);
  }
  CHECK(ParseGemmChoice("mkl").status().message() ==
        "gemm: expected auto, onednn or openblas, got \"mkl\"");
  // tools/setup.sh installs OpenBLAS; its configuration names the kernels.
  CHECK(absl::StartsWith(OpenBlasConfig(), "OpenBLAS "));
}

TEST_CASE("linear computes x w^T + b over the last dim") {
  const EachGemmChoice gemm;
  INFO("gemm " << gemm.name());
  struct Case {
    Shape x;
    int64_t out;
  };
  const Case cases[] = {{{4, 3}, 5},       {{2, 3, 4}, 6}, {{3}, 5},    {{1, 1}, 1},
                        {{2, 40, 64}, 33}, {{0, 3}, 5},    {{4, 0}, 5}, {{4, 3}, 0}};
  for (DType dtype : kFloatDTypes) {
    for (const Case& c : cases) {
      const Tensor x = testing::Random(c.x, dtype, 21);
      const Tensor w = testing::Random({c.out, c.x.back()}, dtype, 22);
      const Tensor b = testing::Random({c.out}, dtype, 23);
      const Tensor expected = ReferenceLinear(x, w, b);
      INFO(DTypeName(dtype) << ShapeToString(c.x) << " -> " << c.out);
      CheckClose(linear(x, w, b), expected);
      CheckClose(linear(testing::NonContiguous(x), testing::NonContiguous(w), b), expected);
      // w stored transposed (as w^T, contiguous), b with stride 2.
      const Tensor wt = w.transpose(0, 1).clone().transpose(0, 1);
      CheckClose(linear(x, wt, Stride2(b)), expected);
    }
    // An input whose leading dims do not flatten without a copy.
    const Tensor x = testing::Random({2, 3, 8}, dtype, 24).slice(2, 0, 8, 2).transpose(0, 1);
    const Tensor w = testing::Random({5, 4}, dtype, 25), b = testing::Random({5}, dtype, 26);
    CheckClose(linear(x, w, b), ReferenceLinear(x, w, b));
  }

  const auto f32 = [](const Shape& shape) { return zeros(shape); };
  CHECK(ErrorOf(OpKind::kLinear, {f32({4, 3}), f32({3}), f32({5})}) ==
        "linear: expected input [..,in], weight [out,in], bias [out], got f32[4,3], f32[3], "
        "f32[5]");
  CHECK(ErrorOf(OpKind::kLinear, {f32({}), f32({5, 3}), f32({5})}) ==
        "linear: expected input [..,in], weight [out,in], bias [out], got f32[], f32[5,3], "
        "f32[5]");
  CHECK(ErrorOf(OpKind::kLinear, {f32({4, 3}), f32({5, 3}), f32({1, 5})}) ==
        "linear: expected input [..,in], weight [out,in], bias [out], got f32[4,3], f32[5,3], "
        "f32[1,5]");
  CHECK(ErrorOf(OpKind::kLinear, {f32({4, 3}), f32({5, 2}), f32({5})}) ==
        "linear: input [4,3] does not fit weight [5,2] and bias [5]");
  CHECK(ErrorOf(OpKind::kLinear, {f32({4, 3}), f32({5, 3}), f32({4})}) ==
        "linear: input [4,3] does not fit weight [5,3] and bias [4]");
  CHECK(ErrorOf(OpKind::kLinear, {f32({4, 3}), f32({5, 3}), zeros({5}, DType::kF64)}) ==
        "linear: dtypes differ: f32[4,3] vs f64[5]");
  CHECK(ErrorOf(OpKind::kLinear, {zeros({4, 3}, DType::kI64), zeros({5, 3}, DType::kI64),
                                  zeros({5}, DType::kI64)}) ==
        "linear: input must be floating point, got i64[4,3]");
}

}  // namespace
}  // namespace tc
