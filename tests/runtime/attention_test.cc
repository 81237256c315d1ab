// sdpa and sdpa_backward against the attention formula written out in f64
// ops (matmul, softmax, sums: kernels tested on their own): odd lengths,
// batches of rank 1 and 2, both mask kinds broadcast, causal masking, views
// with strided heads, and sequences longer than the kernels' blocks (64
// queries, 256 keys), so that the online softmax rescales across key blocks.
#include <limits>

#include "catch2/catch.hpp"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using testing::CompareTensors;

struct Case {
  std::string label;
  Shape q, k, v;
  enum MaskKind { kNone, kBool, kFloat } mask = kNone;
  Shape mask_shape = {};
  bool causal = false;
  double scale = 0.5;
  // kHeads: q, k, v are permuted views ([B, S, H, D] stored, [B, H, S, D]
  // seen), as attention heads are; kScattered: no dim is contiguous.
  enum Layout { kDense, kHeads, kScattered } layout = kDense;
};

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      {"one batch dim", {2, 5, 3}, {2, 7, 3}, {2, 7, 4}},
      {"heads",
       {2, 3, 5, 4},
       {2, 3, 6, 4},
       {2, 3, 6, 2},
       Case::kNone,
       {},
       false,
       0.3,
       Case::kHeads},
      {"scattered", {2, 5, 3}, {2, 4, 3}, {2, 4, 2}, Case::kNone, {}, false, 0.6, Case::kScattered},
      {"causal", {2, 2, 9, 4}, {2, 2, 9, 4}, {2, 2, 9, 4}, Case::kNone, {}, true},
      {"causal, fewer queries", {1, 4, 3}, {1, 6, 3}, {1, 6, 3}, Case::kNone, {}, true},
      {"bool mask [S, T]", {2, 5, 3}, {2, 7, 3}, {2, 7, 3}, Case::kBool, {5, 7}},
      {"float mask [B, 1, 1, T]",
       {2, 2, 4, 3},
       {2, 2, 6, 3},
       {2, 2, 6, 3},
       Case::kFloat,
       {2, 1, 1, 6}},
      {"float mask and causal", {3, 8, 5}, {3, 8, 5}, {3, 8, 5}, Case::kFloat, {3, 8, 8}, true},
      {"long: 130 queries, 600 keys",
       {1, 2, 130, 16},
       {1, 2, 600, 16},
       {1, 2, 600, 8},
       Case::kBool,
       {130, 600}},
      {"long and causal",
       {2, 300, 8},
       {2, 300, 8},
       {2, 300, 8},
       Case::kNone,
       {},
       true,
       0.35,
       Case::kHeads},
  };
  return *cases;
}

struct Operands {
  Tensor q, k, v, mask;
};

Tensor InLayout(const Tensor& t, Case::Layout layout) {
  const int64_t r = t.dim();
  switch (layout) {
    case Case::kDense:
      return t;
    case Case::kHeads:  // the same values, rows and the dim before them swapped in memory
      return transpose(transpose(t, r - 3, r - 2).contiguous(), r - 3, r - 2);
    case Case::kScattered:
      return testing::NonContiguous(t);
  }
  return t;
}

// f64 operands. A bool mask keeps key 0 and about two thirds of the others
// for every query, so that no row is fully masked.
Operands MakeOperands(const Case& c, uint64_t seed) {
  Operands o;
  o.q = InLayout(testing::Random(c.q, DType::kF64, seed), c.layout);
  o.k = InLayout(testing::Random(c.k, DType::kF64, seed + 1), c.layout);
  o.v = InLayout(testing::Random(c.v, DType::kF64, seed + 2), c.layout);
  if (c.mask == Case::kFloat) o.mask = testing::Random(c.mask_shape, DType::kF64, seed + 3);
  if (c.mask == Case::kBool) {
    const int64_t n = NumElements(c.mask_shape), keys = c.mask_shape.back();
    std::vector<int64_t> keep(n);
    for (int64_t i = 0; i < n; ++i) keep[i] = i % keys == 0 || (i * 7 + seed) % 3 != 0;
    o.mask = ne(from_vector(keep, c.mask_shape), scalar(0, DType::kI64));
  }
  return o;
}

Tensor Cast(const Tensor& t, DType dtype) {
  return t.defined() && t.dtype() == DType::kF64 ? cast(t, dtype) : t;
}

// The scores q k^T scale, masked as sdpa masks them.
Tensor Scores(const Case& c, const Operands& o) {
  const int64_t r = o.q.dim();
  Tensor s = matmul(o.q, transpose(o.k, r - 2, r - 1)) * c.scale;
  const Tensor minus_inf = scalar(-std::numeric_limits<double>::infinity(), DType::kF64);
  if (c.mask == Case::kBool) s = where(o.mask, s, minus_inf);
  if (c.mask == Case::kFloat) s = s + o.mask;
  if (c.causal) {
    const int64_t q_len = c.q[r - 2], k_len = c.k[r - 2];
    s = where(gt(reshape(arange(k_len), {1, k_len}), reshape(arange(q_len), {q_len, 1})), minus_inf,
              s);
  }
  return s;
}

struct Expected {
  Tensor out, lse, dq, dk, dv;
};

// The formula: P = softmax(S), out = P v, lse = log sum exp S; with
// dP = g v^T and dS = P (dP - rowsum(g out)): dq = scale dS k,
// dk = scale dS^T q, dv = P^T g.
Expected Formula(const Case& c, const Operands& o, const Tensor& g) {
  const int64_t r = o.q.dim();
  const Tensor s = Scores(c, o);
  const Tensor p = softmax(s, -1);
  Expected e;
  e.out = matmul(p, o.v);
  const Tensor m = max(s, {-1}, /*keepdim=*/true);
  e.lse = reshape(log(sum(exp(s - m), {-1}, true)) + m, Shape(c.q.begin(), c.q.end() - 1));
  const Tensor ds =
      p * (matmul(g, transpose(o.v, r - 2, r - 1)) - sum(g * e.out, {-1}, /*keepdim=*/true));
  e.dq = matmul(ds, o.k) * c.scale;
  e.dk = matmul(transpose(ds, r - 2, r - 1), o.q) * c.scale;
  e.dv = matmul(transpose(p, r - 2, r - 1), g);
  return e;
}

TEST_CASE("sdpa and its backward match the attention formula") {
  for (const Case& c : Cases()) {
    for (DType dtype : {DType::kF64, DType::kF32}) {
      INFO(c.label << " " << DTypeName(dtype));
      const Operands o = MakeOperands(c, 11);
      Shape out_shape = c.q;
      out_shape.back() = c.v.back();
      const Tensor g = testing::Random(out_shape, DType::kF64, 5);
      const Expected e = Formula(c, o, g);
      // f32 against the f64 formula: products of a few hundred terms.
      const double tol = dtype == DType::kF64 ? 1e-12 : 2e-5;
      const Tensor q = Cast(o.q, dtype), k = Cast(o.k, dtype), v = Cast(o.v, dtype),
                   mask = Cast(o.mask, dtype);
      const AttentionResult r = sdpa(q, k, v, mask, c.causal, c.scale);
      CHECK(CompareTensors(cast(r.out, DType::kF64), e.out, tol, tol) == "");
      CHECK(CompareTensors(cast(r.lse, DType::kF64), e.lse, tol, tol) == "");
      const AttentionGrads d =
          sdpa_backward(Cast(g, dtype), q, k, v, r.out, r.lse, mask, c.causal, c.scale);
      CHECK(CompareTensors(cast(d.q, DType::kF64), e.dq, tol, tol) == "");
      CHECK(CompareTensors(cast(d.k, DType::kF64), e.dk, tol, tol) == "");
      CHECK(CompareTensors(cast(d.v, DType::kF64), e.dv, tol, tol) == "");
    }
  }
}

TEST_CASE("sdpa gives the same bits on one thread and on two") {
  const Case& c = Cases()[8];  // long: several query and key blocks
  const Operands o = MakeOperands(c, 3);
  const Tensor q = cast(o.q, DType::kF32), k = cast(o.k, DType::kF32), v = cast(o.v, DType::kF32);
  auto run = [&] {
    const AttentionResult r = sdpa(q, k, v, o.mask, false, 0.25);
    const AttentionGrads d = sdpa_backward(r.out, q, k, v, r.out, r.lse, o.mask, false, 0.25);
    return TensorList{r.out, r.lse, d.q, d.k, d.v};
  };
  const TensorList one = testing::OnThreads(1, run), two = testing::OnThreads(2, run);
  for (size_t i = 0; i < one.size(); ++i) CHECK(CompareTensors(two[i], one[i], 0, 0) == "");
}

TEST_CASE("sdpa: a query whose keys are all masked is NaN, the others are not") {
  Tensor keep =
      ne(from_vector<int64_t>({1, 1, 0, 0, 0, 0, 0, 1, 1}, {3, 3}), scalar(0, DType::kI64));
  const AttentionResult r =
      sdpa(randn({1, 3, 2}), randn({1, 3, 2}), randn({1, 3, 2}), keep, false, 1.0);
  const std::vector<float> out = r.out.to_vector<float>(), lse = r.lse.to_vector<float>();
  CHECK(std::isfinite(out[0]));
  CHECK(std::isnan(out[2]));
  CHECK(std::isnan(out[3]));
  CHECK(std::isfinite(out[4]));
  CHECK(std::isnan(lse[1]));
  CHECK(std::isfinite(lse[2]));
}

TEST_CASE("sdpa's shape errors name what came") {
  using testing::ThrownMessage;
  const Tensor q = zeros({2, 4, 3}), k = zeros({2, 5, 3}), v = zeros({2, 5, 6});
  CHECK(ThrownMessage([&] {
          sdpa(q, zeros({2, 5, 4}), v, Tensor(), false, 1);
        }) ==
        "sdpa: query [..., S, D] and key [..., T, D] must share D, key and value [..., T, Dv] T: "
        "[2,4,3], [2,5,4], [2,5,6]");
  CHECK(ThrownMessage([&] {
          sdpa(q, zeros({3, 5, 3}), v, Tensor(), false, 1);
        }) == "sdpa: query, key and value differ in batch dim 0: [2,4,3], [3,5,3], [2,5,6]");
  CHECK(ThrownMessage([&] { sdpa(zeros({3}), zeros({3}), zeros({3}), Tensor(), false, 1); }) ==
        "sdpa: expected query [..., S, D], key [..., T, D] and value [..., T, Dv] of one rank (at "
        "least 2), got [3], [3], [3]");
  CHECK(ThrownMessage([&] {
          sdpa(q, k, v, zeros({4, 4}), false, 1);
        }) == "sdpa: mask [4,4] does not broadcast to the scores [2,4,5]");
  CHECK(ThrownMessage([&] {
          sdpa(q, k, v, zeros({4, 5}, DType::kF64), false, 1);
        }) == "sdpa: the mask must be bool or f32, got f64");
  CHECK(ThrownMessage([&] {
          sdpa(q, k, zeros({2, 5, 6}, DType::kF64), Tensor(), false, 1);
        }).find("sdpa: ") == 0);
}

}  // namespace
}  // namespace tc
