// batch_norm, layer_norm, embedding, dropout and their backwards against f64
// references written here from the definitions; the backwards also against
// central finite differences of the reference forward; every shape error's
// message.
#include <cmath>
#include <functional>

#include "catch2/catch.hpp"
#include "graph/op_def.h"
#include "runtime/dispatch.h"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using testing::NonContiguous;
using testing::Random;
using Vec = std::vector<double>;

constexpr double kEps = 1e-5;

Vec Values(const Tensor& t) { return t.to_vector<double>(); }
Tensor F64(const Vec& v, const Shape& shape) { return from_vector<double>(v, shape); }

// Which statistics group and which weight/bias entry element k (row-major) uses.
struct Grouping {
  int64_t groups;
  std::function<int64_t(int64_t)> group, param;
};

// Batch norm: element k of x [N, C, ...] is in channel (k / S) % C, S = prod(x.shape[2:]).
Grouping BatchNormGrouping(const Shape& x) {
  const int64_t c = x[1], s = NumElements(Shape(x.begin() + 2, x.end()));
  auto channel = [c, s](int64_t k) { return (k / s) % c; };
  return {c, channel, channel};
}

// Layer norm: row k / D, weight entry k % D, where D = prod(x.shape[axis:]).
Grouping LayerNormGrouping(const Shape& x, int64_t axis) {
  const int64_t d = NumElements(Shape(x.begin() + axis, x.end()));
  return {NumElements(Shape(x.begin(), x.begin() + axis)), [d](int64_t k) { return k / d; },
          [d](int64_t k) { return k % d; }};
}

struct Stats {
  Vec mean, var;
};

// Mean and biased variance of each group.
Stats GroupStats(const Vec& x, const Grouping& g) {
  Vec sum(g.groups, 0), count(g.groups, 0), sq(g.groups, 0);
  for (size_t k = 0; k < x.size(); ++k) {
    sum[g.group(k)] += x[k];
    count[g.group(k)] += 1;
  }
  Stats s{Vec(g.groups), Vec(g.groups)};
  for (int64_t i = 0; i < g.groups; ++i) s.mean[i] = sum[i] / count[i];
  for (size_t k = 0; k < x.size(); ++k) {
    sq[g.group(k)] += (x[k] - s.mean[g.group(k)]) * (x[k] - s.mean[g.group(k)]);
  }
  for (int64_t i = 0; i < g.groups; ++i) s.var[i] = sq[i] / count[i];
  return s;
}

// y = (x - mean) / sqrt(var + eps) * w + b.
Vec Normalize(const Vec& x, const Vec& w, const Vec& b, const Stats& s, const Grouping& g) {
  Vec y(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    const int64_t i = g.group(k), p = g.param(k);
    y[k] = (x[k] - s.mean[i]) / std::sqrt(s.var[i] + kEps) * w[p] + b[p];
  }
  return y;
}

struct Grads {
  Vec dx, dw, db;
};

// The closed form, with gy = g * w the gradient at xhat and M the group size:
//   dx = invstd / M * (M * gy - sum(gy) - xhat * sum(gy * xhat)); dw = sum g * xhat; db = sum g.
Grads ClosedFormGrads(const Vec& g, const Vec& x, const Vec& w, const Grouping& grp) {
  const Stats s = GroupStats(x, grp);
  Vec m(grp.groups, 0), sum_gy(grp.groups, 0), sum_gyx(grp.groups, 0), xhat(x.size());
  Grads out{Vec(x.size()), Vec(w.size(), 0), Vec(w.size(), 0)};
  for (size_t k = 0; k < x.size(); ++k) {
    const int64_t i = grp.group(k), p = grp.param(k);
    xhat[k] = (x[k] - s.mean[i]) / std::sqrt(s.var[i] + kEps);
    m[i] += 1;
    sum_gy[i] += g[k] * w[p];
    sum_gyx[i] += g[k] * w[p] * xhat[k];
    out.dw[p] += g[k] * xhat[k];
    out.db[p] += g[k];
  }
  for (size_t k = 0; k < x.size(); ++k) {
    const int64_t i = grp.group(k), p = grp.param(k);
    const double invstd = 1 / std::sqrt(s.var[i] + kEps);
    out.dx[k] = invstd / m[i] * (m[i] * g[k] * w[p] - sum_gy[i] - xhat[k] * sum_gyx[i]);
  }
  return out;
}

// Central differences of sum(g * y(x, w, b)), y the reference training forward.
Grads NumericGrads(const Vec& g, Vec x, Vec w, Vec b, const Grouping& grp) {
  auto loss = [&] {
    const Vec y = Normalize(x, w, b, GroupStats(x, grp), grp);
    double l = 0;
    for (size_t k = 0; k < y.size(); ++k) l += g[k] * y[k];
    return l;
  };
  auto diff = [&](Vec& v) {
    const double h = 1e-5;
    Vec d(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const double saved = v[i];
      v[i] = saved + h;
      const double up = loss();
      v[i] = saved - h;
      d[i] = (up - loss()) / (2 * h);
      v[i] = saved;
    }
    return d;
  };
  return {diff(x), diff(w), diff(b)};
}

Shape Prefix(const Shape& s, int64_t n) { return Shape(s.begin(), s.begin() + n); }
Shape Suffix(const Shape& s, int64_t n) { return Shape(s.begin() + n, s.end()); }

void CheckGrads(const NormGrads& actual, const Grads& expected, const Shape& x, const Shape& p,
                double tol) {
  REQUIRE_TENSORS_CLOSE(actual.x, F64(expected.dx, x), tol, tol);
  REQUIRE_TENSORS_CLOSE(actual.weight, F64(expected.dw, p), tol, tol);
  REQUIRE_TENSORS_CLOSE(actual.bias, F64(expected.db, p), tol, tol);
}

// ---- batch norm

const Shape kBatchNormShapes[] = {{6, 3}, {2, 3, 4, 5}, {1, 3, 1, 4}, {4, 2, 3}};

TEST_CASE("batch_norm normalises by the batch statistics of each channel") {
  for (const Shape& shape : kBatchNormShapes) {
    INFO("x " << ShapeToString(shape));
    const Tensor x = Random(shape, DType::kF64, 1), w = Random({shape[1]}, DType::kF64, 2),
                 b = Random({shape[1]}, DType::kF64, 3);
    const Grouping grp = BatchNormGrouping(shape);
    const Stats s = GroupStats(Values(x), grp);
    const Tensor y = F64(Normalize(Values(x), Values(w), Values(b), s, grp), shape);
    for (const Tensor& in : {x, NonContiguous(x)}) {
      for (DType dtype : {DType::kF64, DType::kF32}) {
        INFO(DTypeName(dtype) << (in.is_contiguous() ? " contiguous" : " non-contiguous"));
        const double tol = dtype == DType::kF64 ? 1e-12 : 2e-5;
        const NormResult out = batch_norm(in.to(dtype), w.to(dtype), b.to(dtype), kEps);
        REQUIRE_TENSORS_CLOSE(out.y, y, tol, tol);
        REQUIRE_TENSORS_CLOSE(out.mean, F64(s.mean, {shape[1]}), tol, tol);
        REQUIRE_TENSORS_CLOSE(out.var, F64(s.var, {shape[1]}), tol, tol);
      }
    }
  }
}

TEST_CASE("batch_norm_inference normalises by the given statistics") {
  for (const Shape& shape : {Shape{6, 3}, Shape{2, 3, 4, 5}, Shape{0, 3, 2}}) {
    INFO("x " << ShapeToString(shape));
    const Shape c = {shape[1]};
    const Tensor x = Random(shape, DType::kF64, 4), w = Random(c, DType::kF64, 5),
                 b = Random(c, DType::kF64, 6), mean = Random(c, DType::kF64, 7),
                 var = abs(Random(c, DType::kF64, 8)) + 0.1;
    const Grouping grp = BatchNormGrouping(shape);
    const Tensor y =
        F64(Normalize(Values(x), Values(w), Values(b), {Values(mean), Values(var)}, grp), shape);
    for (DType dtype : {DType::kF64, DType::kF32}) {
      INFO(DTypeName(dtype));
      const double tol = dtype == DType::kF64 ? 1e-12 : 2e-5;
      REQUIRE_TENSORS_CLOSE(batch_norm_inference(NonContiguous(x.to(dtype)), w.to(dtype),
                                                 b.to(dtype), mean.to(dtype), var.to(dtype), kEps),
                            y, tol, tol);
    }
  }
}

TEST_CASE("batch_norm_backward matches finite differences of the forward") {
  const Shape shape = {3, 2, 2}, c = {2};
  const Tensor x = Random(shape, DType::kF64, 9), w = Random(c, DType::kF64, 10),
               b = Random(c, DType::kF64, 11), g = Random(shape, DType::kF64, 12);
  const NormResult fwd = batch_norm(x, w, b, kEps);
  CheckGrads(batch_norm_backward(g, x, w, fwd.mean, fwd.var, kEps),
             NumericGrads(Values(g), Values(x), Values(w), Values(b), BatchNormGrouping(shape)),
             shape, c, 1e-6);
}

TEST_CASE("batch_norm_backward matches the closed form") {
  for (const Shape& shape : {Shape{8, 3}, Shape{4, 3, 5, 2}}) {
    INFO("x " << ShapeToString(shape));
    const Shape c = {shape[1]};
    const Tensor x = Random(shape, DType::kF64, 13), w = Random(c, DType::kF64, 14),
                 g = Random(shape, DType::kF64, 15);
    const Grads expected =
        ClosedFormGrads(Values(g), Values(x), Values(w), BatchNormGrouping(shape));
    for (DType dtype : {DType::kF64, DType::kF32}) {
      INFO(DTypeName(dtype));
      const Tensor xt = x.to(dtype), wt = w.to(dtype);
      const NormResult fwd = batch_norm(xt, wt, zeros(c, dtype), kEps);
      CheckGrads(batch_norm_backward(NonContiguous(g.to(dtype)), NonContiguous(xt), wt, fwd.mean,
                                     fwd.var, kEps),
                 expected, shape, c, dtype == DType::kF64 ? 1e-10 : 1e-4);
    }
  }
}

TEST_CASE("batch_norm_backward of an empty batch has zero parameter gradients") {
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const Tensor x = zeros({0, 3}, dtype), c = ones({3}, dtype);
    const NormGrads grads = batch_norm_backward(x, x, c, c, c, kEps);
    CHECK(grads.x.shape() == Shape{0, 3});
    REQUIRE_TENSORS_CLOSE(grads.weight, zeros({3}, DType::kF64), 0, 0);
    REQUIRE_TENSORS_CLOSE(grads.bias, zeros({3}, DType::kF64), 0, 0);
  }
}

// ---- layer norm

struct LayerNormCase {
  Shape shape;
  int64_t axis;
};
const LayerNormCase kLayerNormCases[] = {
    {{4, 6}, 1}, {{4, 6}, -1}, {{2, 3, 5}, 2}, {{2, 3, 5}, 1}, {{2, 1, 4}, -2}, {{3, 4}, 0},
};

TEST_CASE("layer_norm normalises over the trailing dims") {
  for (const LayerNormCase& lc : kLayerNormCases) {
    INFO("x " << ShapeToString(lc.shape) << " axis " << lc.axis);
    const int64_t axis = lc.axis < 0 ? lc.axis + static_cast<int64_t>(lc.shape.size()) : lc.axis;
    const Shape p = Suffix(lc.shape, axis), stats = Prefix(lc.shape, axis);
    const Tensor x = Random(lc.shape, DType::kF64, 16), w = Random(p, DType::kF64, 17),
                 b = Random(p, DType::kF64, 18);
    const Grouping grp = LayerNormGrouping(lc.shape, axis);
    const Stats s = GroupStats(Values(x), grp);
    const Tensor y = F64(Normalize(Values(x), Values(w), Values(b), s, grp), lc.shape);
    for (const Tensor& in : {x, NonContiguous(x)}) {
      for (DType dtype : {DType::kF64, DType::kF32}) {
        INFO(DTypeName(dtype) << (in.is_contiguous() ? " contiguous" : " non-contiguous"));
        const double tol = dtype == DType::kF64 ? 1e-12 : 2e-5;
        const NormResult out =
            layer_norm(in.to(dtype), NonContiguous(w.to(dtype)), b.to(dtype), lc.axis, kEps);
        REQUIRE_TENSORS_CLOSE(out.y, y, tol, tol);
        REQUIRE_TENSORS_CLOSE(out.mean, F64(s.mean, stats), tol, tol);
        REQUIRE_TENSORS_CLOSE(out.var, F64(s.var, stats), tol, tol);
      }
    }
  }
}

TEST_CASE("layer_norm of zero rows is empty") {
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const NormResult out =
        layer_norm(zeros({0, 4}, dtype), ones({4}, dtype), zeros({4}, dtype), 1, kEps);
    CHECK(out.y.shape() == Shape{0, 4});
    CHECK(out.mean.shape() == Shape{0});
    const NormGrads grads =
        layer_norm_backward(out.y, out.y, ones({4}, dtype), out.mean, out.var, 1, kEps);
    REQUIRE_TENSORS_CLOSE(grads.weight, zeros({4}, DType::kF64), 0, 0);
    REQUIRE_TENSORS_CLOSE(grads.bias, zeros({4}, DType::kF64), 0, 0);
  }
}

TEST_CASE("layer_norm_backward matches finite differences of the forward") {
  for (const LayerNormCase& lc : {LayerNormCase{{2, 3, 2}, 2}, LayerNormCase{{2, 3, 2}, 1}}) {
    INFO("x " << ShapeToString(lc.shape) << " axis " << lc.axis);
    const Shape p = Suffix(lc.shape, lc.axis);
    const Tensor x = Random(lc.shape, DType::kF64, 19), w = Random(p, DType::kF64, 20),
                 b = Random(p, DType::kF64, 21), g = Random(lc.shape, DType::kF64, 22);
    const NormResult fwd = layer_norm(x, w, b, lc.axis, kEps);
    CheckGrads(layer_norm_backward(g, x, w, fwd.mean, fwd.var, lc.axis, kEps),
               NumericGrads(Values(g), Values(x), Values(w), Values(b),
                            LayerNormGrouping(lc.shape, lc.axis)),
               lc.shape, p, 1e-6);
  }
}

TEST_CASE("layer_norm_backward matches the closed form") {
  for (const LayerNormCase& lc : kLayerNormCases) {
    INFO("x " << ShapeToString(lc.shape) << " axis " << lc.axis);
    const int64_t axis = lc.axis < 0 ? lc.axis + static_cast<int64_t>(lc.shape.size()) : lc.axis;
    const Shape p = Suffix(lc.shape, axis);
    const Tensor x = Random(lc.shape, DType::kF64, 23), w = Random(p, DType::kF64, 24),
                 g = Random(lc.shape, DType::kF64, 25);
    const Grads expected =
        ClosedFormGrads(Values(g), Values(x), Values(w), LayerNormGrouping(lc.shape, axis));
    for (DType dtype : {DType::kF64, DType::kF32}) {
      INFO(DTypeName(dtype));
      const Tensor xt = x.to(dtype), wt = w.to(dtype);
      const NormResult fwd = layer_norm(xt, wt, zeros(p, dtype), lc.axis, kEps);
      CheckGrads(layer_norm_backward(NonContiguous(g.to(dtype)), NonContiguous(xt), wt, fwd.mean,
                                     fwd.var, lc.axis, kEps),
                 expected, lc.shape, p, dtype == DType::kF64 ? 1e-10 : 1e-4);
    }
  }
}

// ---- embedding

TEST_CASE("embedding gathers rows, any index shape, repeats allowed") {
  const std::vector<int64_t> idx = {3, 0, 9, 3, 3, 7, 0, 1, 9};
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const Tensor w = Random({10, 4}, dtype, 26);
    const Vec wv = Values(w);
    for (const Shape& idx_shape : {Shape{9}, Shape{3, 3}}) {
      INFO(DTypeName(dtype) << " indices " << ShapeToString(idx_shape));
      Shape out_shape = idx_shape;
      out_shape.push_back(4);
      Vec expected;
      for (int64_t i : idx) {
        for (int64_t j = 0; j < 4; ++j) expected.push_back(wv[i * 4 + j]);
      }
      const Tensor indices = from_vector<int64_t>(idx, idx_shape);
      REQUIRE_TENSORS_CLOSE(embedding(w, indices), F64(expected, out_shape), 0, 0);
      REQUIRE_TENSORS_CLOSE(embedding(NonContiguous(w), NonContiguous(indices)),
                            F64(expected, out_shape), 0, 0);
    }
    CHECK(embedding(w, zeros({0, 2}, DType::kI64)).shape() == Shape{0, 2, 4});
  }
}

TEST_CASE("embedding_backward scatter-adds, repeated indices accumulating") {
  const std::vector<int64_t> idx = {3, 0, 9, 3, 3, 7};
  const Tensor indices = from_vector<int64_t>(idx, {2, 3});
  const Tensor g = Random({2, 3, 4}, DType::kF64, 27);
  const Vec gv = Values(g);
  Vec expected(10 * 4, 0);
  for (size_t i = 0; i < idx.size(); ++i) {
    for (int64_t j = 0; j < 4; ++j) expected[idx[i] * 4 + j] += gv[i * 4 + j];
  }
  for (DType dtype : {DType::kF64, DType::kF32}) {
    INFO(DTypeName(dtype));
    const double tol = dtype == DType::kF64 ? 1e-15 : 1e-6;
    REQUIRE_TENSORS_CLOSE(
        embedding_backward(NonContiguous(g.to(dtype)), NonContiguous(indices), 10),
        F64(expected, {10, 4}), tol, tol);
  }
  REQUIRE_TENSORS_CLOSE(embedding_backward(zeros({0, 4}, DType::kF64), zeros({0}, DType::kI64), 3),
                        zeros({3, 4}, DType::kF64), 0, 0);
}

TEST_CASE("embedding indices outside [0, num) are an OutOfRange error") {
  const Tensor w = zeros({10, 4}), g = zeros({2, 4});
  const Tensor high = from_vector<int64_t>({3, 12}, {2}), low = from_vector<int64_t>({-1, 0}, {2});
  const absl::Status s = Call(OpKind::kEmbedding, {w, high}, {}).status();
  CHECK(s.code() == absl::StatusCode::kOutOfRange);
  CHECK(s.message() == "embedding: index 12 out of range [0, 10)");
  CHECK(Call(OpKind::kEmbedding, {w, low}, {}).status().message() ==
        "embedding: index -1 out of range [0, 10)");
  CHECK(Call(OpKind::kEmbeddingBackward, {g, high}, {{"num_weights", int64_t{10}}})
            .status()
            .message() == "embedding_backward: index 12 out of range [0, 10)");
  const Tensor boundary = from_vector<int64_t>({9, 10}, {2});
  CHECK(Call(OpKind::kEmbedding, {w, boundary}, {}).status().message() ==
        "embedding: index 10 out of range [0, 10)");
}

// ---- dropout

// Whether each element of `y` survived (x must have no zeros).
std::vector<bool> Kept(const Tensor& y) {
  std::vector<bool> kept;
  for (double v : Values(y)) kept.push_back(v != 0);
  return kept;
}

TEST_CASE("dropout keeps element i iff RandomUniform(seed, offset + i) >= p, scaled exactly") {
  const double p = 0.3;
  const uint64_t seed = 42, offset = 1000;
  const Tensor x = Random({250, 400}, DType::kF64, 28);
  const Vec xv = Values(x);
  Vec expected(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    expected[i] = RandomUniform(seed, offset + i) >= p ? xv[i] * (1 / (1 - p)) : 0;
  }
  REQUIRE_TENSORS_CLOSE(dropout(x, p, seed, offset), F64(expected, x.shape()), 0, 0);
  // The mask follows the logical row-major index, not the storage order.
  REQUIRE_TENSORS_CLOSE(dropout(NonContiguous(x), p, seed, offset), F64(expected, x.shape()), 0, 0);
  // f32 scales by the f32 factor.
  const Tensor y32 = dropout(x.to(DType::kF32), p, seed, offset);
  const std::vector<float> x32 = x.to(DType::kF32).to_vector<float>(), v32 = y32.to_vector<float>();
  const float scale = static_cast<float>(1 / (1 - p));
  for (size_t i = 0; i < x32.size(); ++i) {
    if (v32[i] != (expected[i] != 0 ? x32[i] * scale : 0.0f)) FAIL("f32 element " << i);
  }
}

TEST_CASE("dropout's mask is a pure function of seed and offset + index") {
  const Tensor x = ones({100000}, DType::kF64);
  const std::vector<bool> a = Kept(dropout(x, 0.5, 7, 0));
  CHECK(Kept(dropout(x, 0.5, 7, 0)) == a);
  // Offset 100 sees the stream 100 counters further on.
  const std::vector<bool> shifted = Kept(dropout(x, 0.5, 7, 100));
  CHECK(std::equal(shifted.begin(), shifted.end() - 100, a.begin() + 100));
  CHECK(Kept(dropout(x, 0.5, 8, 0)) != a);
  int64_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != shifted[i];
  CHECK(differ > 40000);  // independent masks at p = 0.5 differ in half the places
  // The generator overload draws (seed, offset) and advances by numel.
  Generator gen(7);
  gen.Advance(100);
  CHECK(Kept(dropout(x, 0.5, &gen)) == shifted);
  CHECK(gen.offset() == 100100);
}

TEST_CASE("dropout keeps 1 - p of the elements") {
  const int64_t n = 100000;
  const Tensor x = ones({n}, DType::kF32);
  for (double p : {0.1, 0.5, 0.9}) {
    INFO("p " << p);
    int64_t kept = 0;
    for (bool k : Kept(dropout(x, p, 3, 0))) kept += k;
    // Five standard deviations of a binomial(n, 1 - p) proportion.
    CHECK(std::abs(kept / double(n) - (1 - p)) < 5 * std::sqrt(p * (1 - p) / n));
  }
  const Tensor y = Random({3, 5}, DType::kF32, 29);
  REQUIRE_TENSORS_CLOSE(dropout(NonContiguous(y), 0, 3, 0), y, 0, 0);
  CHECK(dropout(zeros({0, 3}), 0.5, 3, 0).shape() == Shape{0, 3});
}

// ---- shape and attribute errors

std::string InferError(OpKind op, std::vector<TensorType> in, const Attrs& attrs) {
  return std::string(InferTypes(op, in, attrs).status().message());
}

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }
TensorType I64(Shape s) { return {DType::kI64, std::move(s)}; }

TEST_CASE("batch norm shape errors") {
  const Attrs eps = {{"eps", kEps}};
  const TensorType x = F32({2, 3}), c = F32({3});
  CHECK(InferError(OpKind::kBatchNorm, {F32({3}), c, c}, eps) ==
        "batch_norm: input must be (N,C,...), got f32[3]");
  CHECK(InferError(OpKind::kBatchNorm, {I64({2, 3}), c, c}, eps) ==
        "batch_norm: input must be floating point, got i64[2,3]");
  CHECK(InferError(OpKind::kBatchNorm, {x, c, F32({4})}, eps) ==
        "batch_norm: weight and bias must be f32[3], got f32[4]");
  CHECK(InferError(OpKind::kBatchNorm, {x, TensorType{DType::kF64, {3}}, c}, eps) ==
        "batch_norm: weight and bias must be f32[3], got f64[3]");
  CHECK(InferError(OpKind::kBatchNorm, {F32({0, 3}), c, c}, eps) ==
        "batch_norm: batch statistics need at least one value per channel, got f32[0,3]");
  CHECK(InferError(OpKind::kBatchNormInference, {F32({3}), c, c, c, c}, eps) ==
        "batch_norm_inference: input must be (N,C,...), got f32[3]");
  CHECK(InferError(OpKind::kBatchNormInference, {x, c, c, c, F32({2})}, eps) ==
        "batch_norm_inference: weight, bias and running stats must be f32[3], got f32[2]");
  CHECK(InferError(OpKind::kBatchNormBackward, {F32({3}), F32({3}), c, c, c}, eps) ==
        "batch_norm_backward: input must be (N,C,...), got f32[3]");
  CHECK(InferError(OpKind::kBatchNormBackward, {F32({2, 4}), x, c, c, c}, eps) ==
        "batch_norm_backward: grad f32[2,4] must match input f32[2,3]");
  CHECK(InferError(OpKind::kBatchNormBackward, {x, x, c, F32({4}), c}, eps) ==
        "batch_norm_backward: weight and stats must be f32[3], got f32[4]");
}

TEST_CASE("layer norm shape errors") {
  const Attrs attrs = {{"axis", int64_t{1}}, {"eps", kEps}};
  const TensorType x = F32({2, 3}), p = F32({3}), s = F32({2});
  CHECK(InferError(OpKind::kLayerNorm, {I64({2, 3}), p, p}, attrs) ==
        "layer_norm: input must be floating point, got i64[2,3]");
  CHECK(InferError(OpKind::kLayerNorm, {x, p, p}, {{"axis", int64_t{2}}, {"eps", kEps}}) ==
        "layer_norm: dim 2 out of range for rank 2");
  CHECK(InferError(OpKind::kLayerNorm, {x, p, p}, {{"axis", int64_t{-3}}, {"eps", kEps}}) ==
        "layer_norm: dim -3 out of range for rank 2");
  CHECK(InferError(OpKind::kLayerNorm, {x, F32({2, 3}), p}, attrs) ==
        "layer_norm: weight and bias must be f32[3], got f32[2,3]");
  CHECK(InferError(OpKind::kLayerNormBackward, {F32({2, 4}), x, p, s, s}, attrs) ==
        "layer_norm_backward: grad f32[2,4] must match input f32[2,3]");
  CHECK(InferError(OpKind::kLayerNormBackward, {I64({2, 3}), I64({2, 3}), p, s, s}, attrs) ==
        "layer_norm_backward: input must be floating point, got i64[2,3]");
  CHECK(InferError(OpKind::kLayerNormBackward, {x, x, p, s, s},
                   {{"axis", int64_t{5}}, {"eps", kEps}}) ==
        "layer_norm_backward: dim 5 out of range for rank 2");
  CHECK(InferError(OpKind::kLayerNormBackward, {x, x, F32({2}), s, s}, attrs) ==
        "layer_norm_backward: weight must be f32[3], got f32[2]");
  CHECK(InferError(OpKind::kLayerNormBackward, {x, x, p, s, F32({3})}, attrs) ==
        "layer_norm_backward: mean and var must be f32[2], got f32[3]");
}

TEST_CASE("embedding and dropout shape and attribute errors") {
  const Attrs num = {{"num_weights", int64_t{10}}};
  CHECK(InferError(OpKind::kEmbedding, {F32({10}), I64({3})}, {}) ==
        "embedding: weight (num, dim) must have rank 2, got f32[10]");
  CHECK(InferError(OpKind::kEmbedding, {F32({10, 4}), F32({3})}, {}) ==
        "embedding: indices must be i64, got f32[3]");
  CHECK(InferError(OpKind::kEmbeddingBackward, {F32({3, 4}), F32({3})}, num) ==
        "embedding_backward: indices must be i64, got f32[3]");
  CHECK(InferError(OpKind::kEmbeddingBackward, {I64({3, 4}), I64({3})}, num) ==
        "embedding_backward: grad must be floating point, got i64[3,4]");
  CHECK(InferError(OpKind::kEmbeddingBackward, {F32({3, 4, 2}), I64({3})}, num) ==
        "embedding_backward: grad f32[3,4,2] must be indices shape [3] + [dim]");
  CHECK(InferError(OpKind::kEmbeddingBackward, {F32({4, 2}), I64({3})}, num) ==
        "embedding_backward: grad f32[4,2] must be indices shape [3] + [dim]");
  CHECK(InferError(OpKind::kEmbeddingBackward, {F32({3, 4}), I64({3})},
                   {{"num_weights", int64_t{-1}}}) ==
        "embedding_backward: num_weights must be non-negative, got -1");
  auto dropout_attrs = [](double p) { return Attrs{{"p", p}}; };
  CHECK(InferError(OpKind::kDropout, {I64({4}), I64({}), I64({})}, dropout_attrs(0.5)) ==
        "dropout: input must be floating point, got i64[4]");
  CHECK(InferError(OpKind::kDropout, {F32({4}), I64({}), I64({})}, dropout_attrs(1)) ==
        "dropout: p must be in [0, 1), got 1");
  CHECK(InferError(OpKind::kDropout, {F32({4}), I64({}), I64({})}, dropout_attrs(-0.5)) ==
        "dropout: p must be in [0, 1), got -0.5");
  CHECK(InferError(OpKind::kDropout, {F32({4}), F32({}), I64({})}, dropout_attrs(0.5)) ==
        "dropout: seed must be an i64 scalar, got f32[]");
  CHECK(InferError(OpKind::kDropout, {F32({4}), I64({}), I64({1})}, dropout_attrs(0.5)) ==
        "dropout: offset must be an i64 scalar, got i64[1]");
}

}  // namespace
}  // namespace tc
