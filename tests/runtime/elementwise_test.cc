// Elementwise ops against f64 reference loops written here, over broadcast
// shapes, non-contiguous views, size-1 and zero-size dims, in every dtype the
// op takes.
#include <cmath>
#include <functional>

#include "catch2/catch.hpp"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using Fn1 = std::function<double(double)>;
using Fn2 = std::function<double(double, double)>;

// Value of `t` at the broadcast position `index` of an output of rank `rank`.
double AtBroadcast(const Tensor& t, const std::vector<double>& values,
                   const std::vector<int64_t>& index) {
  int64_t flat = 0;
  const int64_t lead = static_cast<int64_t>(index.size()) - t.dim();
  for (int64_t d = 0; d < t.dim(); ++d) {
    flat = flat * t.shape()[d] + (t.shape()[d] == 1 ? 0 : index[lead + d]);
  }
  return values[flat];
}

// out[i] = fn(inputs at i), over the broadcast shape, in f64.
Tensor Reference(const std::vector<Tensor>& inputs, const Shape& out_shape,
                 const std::function<double(const std::vector<double>&)>& fn) {
  std::vector<std::vector<double>> values;
  for (const Tensor& t : inputs) values.push_back(t.to_vector<double>());
  const int64_t n = NumElements(out_shape);
  std::vector<double> out(n);
  std::vector<int64_t> index(out_shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> args;
    for (size_t k = 0; k < inputs.size(); ++k) {
      args.push_back(AtBroadcast(inputs[k], values[k], index));
    }
    out[i] = fn(args);
    for (int64_t d = static_cast<int64_t>(index.size()) - 1; d >= 0; --d) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return from_vector<double>(out, out_shape);
}

struct ShapePair {
  Shape a, b, out;
};
const ShapePair kBinaryShapes[] = {
    {{3, 4}, {3, 4}, {3, 4}},       {{3, 4}, {4}, {3, 4}},          {{3, 1}, {1, 4}, {3, 4}},
    {{2, 3, 4}, {3, 1}, {2, 3, 4}}, {{}, {2, 3}, {2, 3}},           {{5}, {}, {5}},
    {{0, 4}, {4}, {0, 4}},          {{2, 0, 3}, {1, 1}, {2, 0, 3}},
};

void CheckBinaryOp(Tensor (*op)(const Tensor&, const Tensor&), const Fn2& ref,
                   std::vector<DType> dtypes, bool positive_b = false, double f32_rtol = 1e-6) {
  uint64_t seed = 1;
  for (const ShapePair& s : kBinaryShapes) {
    for (DType dtype : dtypes) {
      for (bool non_contiguous : {false, true}) {
        INFO("a " << ShapeToString(s.a) << " b " << ShapeToString(s.b) << " " << DTypeName(dtype)
                  << (non_contiguous ? " non-contiguous" : ""));
        Tensor a = testing::Random(s.a, dtype, seed++);
        Tensor b = testing::Random(s.b, dtype, seed++);
        if (positive_b) b = abs(b) + 0.5;
        if (non_contiguous) {
          a = testing::NonContiguous(a);
          b = testing::NonContiguous(b);
        }
        Tensor expected =
            Reference({a, b}, s.out, [&](const std::vector<double>& v) { return ref(v[0], v[1]); });
        const double rtol = dtype == DType::kF32 ? f32_rtol : 0;
        REQUIRE_TENSORS_CLOSE(op(a, b), expected, rtol, rtol);
      }
    }
  }
}

const std::vector<DType> kNumeric = {DType::kF32, DType::kF64, DType::kI64, DType::kI32};
const std::vector<DType> kFloats = {DType::kF32, DType::kF64};

TEST_CASE("add") { CheckBinaryOp(add, std::plus<double>(), kNumeric); }
TEST_CASE("sub") { CheckBinaryOp(sub, std::minus<double>(), kNumeric); }
TEST_CASE("mul") { CheckBinaryOp(mul, std::multiplies<double>(), kNumeric); }
TEST_CASE("div") {
  CheckBinaryOp(div, std::divides<double>(), kFloats, /*positive_b=*/true);
  // Integer division truncates toward zero, as C++ does.
  CHECK(div(from_vector<int64_t>({7, -7}, {2}), from_vector<int64_t>({2, 2}, {2}))
            .to_vector<int64_t>() == std::vector<int64_t>{3, -3});
}
TEST_CASE("div: an integer divisor of zero is an error, the most negative over -1 wraps") {
  const Tensor a = from_vector<int64_t>({7, INT64_MIN, 5}, {3});
  CHECK(testing::ThrownMessage([&] {
          div(a, from_vector<int64_t>({1, 2, 0}, {3}));
        }) == "div: integer division by zero: the divisor i64[3] holds a 0");
  CHECK(testing::ThrownMessage([&] { div(a, zeros({}, DType::kI64)); }) ==
        "div: integer division by zero: the divisor i64[] holds a 0");
  CHECK(div(a, from_vector<int64_t>({-1, -1, -2}, {3})).to_vector<int64_t>() ==
        std::vector<int64_t>{-7, INT64_MIN, -2});
  const Tensor b = from_vector<int32_t>({7, INT32_MIN, -7}, {3});
  CHECK(testing::ThrownMessage([&] { div(b, zeros({3}, DType::kI32)); }) ==
        "div: integer division by zero: the divisor i32[3] holds a 0");
  CHECK(div(b, from_vector<int32_t>({2, -1, 2}, {3})).to_vector<int32_t>() ==
        std::vector<int32_t>{3, INT32_MIN, -3});
}
TEST_CASE("i32 arithmetic wraps on overflow and sums in i64, as PyTorch's int32") {
  const Tensor big = from_vector<int32_t>({INT32_MAX, INT32_MIN, 65536}, {3});
  CHECK(add(big, full({3}, 1, DType::kI32)).to_vector<int32_t>() ==
        std::vector<int32_t>{INT32_MIN, INT32_MIN + 1, 65537});
  CHECK(sub(big, full({3}, 1, DType::kI32)).to_vector<int32_t>() ==
        std::vector<int32_t>{INT32_MAX - 1, INT32_MAX, 65535});
  CHECK(mul(big, big).to_vector<int32_t>() == std::vector<int32_t>{1, 0, 0});
  const Tensor total = sum(big);
  CHECK(total.dtype() == DType::kI64);
  CHECK(total.item<int64_t>() == int64_t{INT32_MAX} + INT32_MIN + 65536);
  CHECK(testing::ThrownMessage([] { full({2}, 0x1p31, DType::kI32); }) ==
        "full: value 2.14748e+09 cannot be converted to i32 without overflow");
  CHECK(full({2}, -0x1p31, DType::kI32).to_vector<int32_t>() ==
        std::vector<int32_t>{INT32_MIN, INT32_MIN});
  // The most negative value negates to itself, in both integer dtypes.
  CHECK(neg(big).to_vector<int32_t>() == std::vector<int32_t>{-INT32_MAX, INT32_MIN, -65536});
  CHECK(abs(big).to_vector<int32_t>() == std::vector<int32_t>{INT32_MAX, INT32_MIN, 65536});
  CHECK(neg(from_vector<int64_t>({INT64_MIN}, {1})).item<int64_t>() == INT64_MIN);
  // A graph's sum of i32 is refused: it would overflow where PyTorch counts in i64.
  CHECK(Call(OpKind::kSum, {big}, {{"dims", std::vector<int64_t>{}}, {"keepdim", false}})
            .status()
            .message() ==
        "sum: input i32 is summed as i64: cast it first (as tc::sum does), got i32[3]");
  CHECK(testing::ThrownMessage([] { arange(0, 4e9, 1.5e9, DType::kI32); }) ==
        "arange: value 3e+09 cannot be converted to i32 without overflow");
}
TEST_CASE("maximum") {
  CheckBinaryOp(
      maximum, [](double a, double b) { return a > b ? a : b; }, kNumeric);
  CHECK(std::isnan(maximum(scalar(NAN), scalar(1)).item<float>()));
}
TEST_CASE("minimum") {
  CheckBinaryOp(
      minimum, [](double a, double b) { return a < b ? a : b; }, kNumeric);
  CHECK(std::isnan(minimum(scalar(1), scalar(NAN)).item<float>()));
}

void CheckCompare(Tensor (*op)(const Tensor&, const Tensor&), const Fn2& ref) {
  // Integers in [0, 10) make ties common, which is what comparisons must get right.
  CheckBinaryOp(op, ref, {DType::kI64, DType::kI32});
  Tensor a = from_vector<double>({1, 2, NAN}, {3});
  Tensor b = from_vector<double>({2, 2, NAN}, {3});
  Tensor expected =
      Reference({a, b}, {3}, [&](const std::vector<double>& v) { return ref(v[0], v[1]); });
  Tensor got = op(a, b);
  CHECK(got.dtype() == DType::kBool);
  REQUIRE_TENSORS_CLOSE(got, expected, 0, 0);
  REQUIRE_TENSORS_CLOSE(op(a.to(DType::kF32), b.to(DType::kF32)), expected, 0, 0);
}

TEST_CASE("eq") {
  CheckCompare(eq, [](double a, double b) { return a == b; });
}
TEST_CASE("ne") {
  CheckCompare(ne, [](double a, double b) { return a != b; });
}
TEST_CASE("lt") {
  CheckCompare(lt, [](double a, double b) { return a < b; });
}
TEST_CASE("le") {
  CheckCompare(le, [](double a, double b) { return a <= b; });
}
TEST_CASE("gt") {
  CheckCompare(gt, [](double a, double b) { return a > b; });
}
TEST_CASE("ge") {
  CheckCompare(ge, [](double a, double b) { return a >= b; });
}

TEST_CASE("where") {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI64, DType::kI32, DType::kBool}) {
    Tensor c = testing::Random({3, 1}, DType::kBool, 1);
    Tensor a = testing::NonContiguous(testing::Random({3, 4}, dtype, 2));
    Tensor b = testing::Random({4}, dtype, 3);
    Tensor expected = Reference(
        {c, a, b}, {3, 4}, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; });
    REQUIRE_TENSORS_CLOSE(where(c, a, b), expected, 0, 0);
  }
  CHECK(Call(OpKind::kWhere, {zeros({2}), zeros({2}), zeros({2})}, {}).status().message() ==
        "where: condition must be bool, got f32[2]");
  CHECK(Call(OpKind::kWhere, {zeros({2}, DType::kBool), zeros({2}), zeros({2}, DType::kF64)}, {})
            .status()
            .message() == "where: dtypes differ: f32[2] vs f64[2]");
}

// Unary ops: random inputs (made valid for the op by `prepare`), contiguous and
// not, including size-1 and zero-size shapes.
void CheckUnaryOp(const std::function<Tensor(const Tensor&)>& op, const Fn1& ref,
                  std::vector<DType> dtypes,
                  const std::function<Tensor(const Tensor&)>& prepare = nullptr,
                  double f32_rtol = 2e-6) {
  uint64_t seed = 100;
  for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 1, 5}, Shape{4, 0}, Shape{2, 3, 4}}) {
    for (DType dtype : dtypes) {
      for (bool non_contiguous : {false, true}) {
        INFO(ShapeToString(shape) << " " << DTypeName(dtype)
                                  << (non_contiguous ? " non-contiguous" : ""));
        Tensor x = testing::Random(shape, dtype, seed++);
        if (prepare) x = prepare(x);
        if (non_contiguous) x = testing::NonContiguous(x);
        Tensor expected =
            Reference({x}, shape, [&](const std::vector<double>& v) { return ref(v[0]); });
        Tensor got = op(x);
        CHECK(got.dtype() == dtype);
        const double tol = dtype == DType::kF32 ? f32_rtol : 1e-15;
        REQUIRE_TENSORS_CLOSE(got, expected, tol, tol);
      }
    }
  }
}

Tensor Positive(const Tensor& x) { return abs(x) + 0.1; }

TEST_CASE("neg") {
  CheckUnaryOp(
      neg, [](double x) { return -x; }, kNumeric);
}
TEST_CASE("exp") {
  CheckUnaryOp(
      exp, [](double x) { return std::exp(x); }, kFloats);
}
TEST_CASE("log") {
  CheckUnaryOp(
      log, [](double x) { return std::log(x); }, kFloats, Positive);
}
TEST_CASE("erf") {
  CheckUnaryOp(
      erf, [](double x) { return std::erf(x); }, kFloats);
}
TEST_CASE("log1p") {
  CheckUnaryOp(
      log1p, [](double x) { return std::log1p(x); }, kFloats, Positive);
  // Exact where log(1 + x) rounds 1 + x to 1.
  CHECK(log1p(scalar(1e-10f)).item<float>() == Approx(1e-10).epsilon(1e-6));
  CHECK(log1p(scalar(-0.5, DType::kF64)).item<double>() == std::log1p(-0.5));
}
TEST_CASE("stop_gradient: the input's values, on floats") {
  CheckUnaryOp(
      stop_gradient, [](double x) { return x; }, kFloats);
  CHECK(Call(OpKind::kStopGradient, {zeros({2}, DType::kI64)}, {}).status().message() ==
        "stop_gradient: input must be floating point, got i64[2]");
}
TEST_CASE("sqrt") {
  CheckUnaryOp(
      sqrt, [](double x) { return std::sqrt(x); }, kFloats, Positive);
}
TEST_CASE("rsqrt") {
  CheckUnaryOp(
      rsqrt, [](double x) { return 1 / std::sqrt(x); }, kFloats, Positive);
}
TEST_CASE("abs") {
  CheckUnaryOp(
      abs, [](double x) { return std::fabs(x); }, kNumeric);
}
TEST_CASE("sign") {
  CheckUnaryOp(
      sign, [](double x) { return x > 0   ? 1.0
                                  : x < 0 ? -1.0
                                          : 0.0; }, kNumeric);
  CHECK(sign(zeros({1})).item<float>() == 0.f);
}
TEST_CASE("relu") {
  CheckUnaryOp(
      relu, [](double x) { return x > 0 ? x : 0; }, kNumeric);
}
TEST_CASE("sigmoid") {
  CheckUnaryOp(
      sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, kFloats);
}
TEST_CASE("tanh") {
  CheckUnaryOp(
      tanh, [](double x) { return std::tanh(x); }, kFloats);
}
TEST_CASE("gelu") {
  CheckUnaryOp([](const Tensor& x) { return gelu(x); },
               [](double x) { return x * 0.5 * std::erfc(-x / std::sqrt(2.0)); }, kFloats);
  CheckUnaryOp([](const Tensor& x) { return gelu(x, "tanh"); },
               [](double x) {
                 const double c = std::sqrt(2 / M_PI);
                 return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
               },
               kFloats);
  CHECK(Call(OpKind::kGelu, {zeros({2})}, {{"approximate", std::string("fast")}})
            .status()
            .message() ==
        "gelu: attribute 'approximate' must be one of \"none\", \"tanh\", got \"fast\"");
}
TEST_CASE("gelu_backward") {
  // The derivative of each gelu form, by central differences of the f64
  // reference forward at a step where truncation and rounding balance.
  for (const std::string mode : {"none", "tanh"}) {
    Tensor x = testing::Random({3, 5}, DType::kF64, 9);
    Tensor g = testing::Random({3, 5}, DType::kF64, 10);
    const double h = 1e-5;
    Tensor numeric = (gelu(x + h, mode) - gelu(x - h, mode)) / (2 * h) * g;
    REQUIRE_TENSORS_CLOSE(gelu_backward(g, x, mode), numeric, 1e-8, 1e-9);
    REQUIRE_TENSORS_CLOSE(gelu_backward(g.to(DType::kF32), x.to(DType::kF32), mode), numeric, 1e-5,
                          1e-6);
  }
  CHECK(
      Call(OpKind::kGeluBackward, {zeros({2}), zeros({3})}, {{"approximate", std::string("none")}})
          .status()
          .message() == "gelu_backward: grad f32[2] and input f32[3] differ");
}
TEST_CASE("pow") {
  for (double e : {2.0, 3.0, 0.5, -1.0}) {
    INFO("exponent " << e);
    CheckUnaryOp([e](const Tensor& x) { return pow(x, e); },
                 [e](double x) { return std::pow(x, e); }, kFloats, Positive);
  }
}
TEST_CASE("cast") {
  Tensor x = from_vector<double>({-1.75, 0, 2.5, 3}, {4});
  CHECK(cast(x, DType::kI64).to_vector<int64_t>() == std::vector<int64_t>{-1, 0, 2, 3});
  CHECK(cast(x, DType::kI32).to_vector<int32_t>() == std::vector<int32_t>{-1, 0, 2, 3});
  CHECK(cast(cast(x, DType::kI32), DType::kF32).to_vector<float>() ==
        std::vector<float>{-1, 0, 2, 3});
  // Out of range saturates and NaN gives 0, where C++'s conversion is undefined.
  const Tensor wide = from_vector<double>({1e10, -1e10, NAN, 0x1p63}, {4});
  CHECK(cast(wide, DType::kI32).to_vector<int32_t>() ==
        std::vector<int32_t>{INT32_MAX, INT32_MIN, 0, INT32_MAX});
  CHECK(cast(wide, DType::kI64).to_vector<int64_t>() ==
        std::vector<int64_t>{10000000000, -10000000000, 0, INT64_MAX});
  CHECK(cast(x, DType::kBool).to_vector<bool>() == std::vector<bool>{true, false, true, true});
  CHECK(cast(x, DType::kF32).to_vector<float>() == std::vector<float>{-1.75f, 0, 2.5f, 3});
  Tensor t = testing::NonContiguous(testing::Random({3, 4}, DType::kF64, 5));
  REQUIRE_TENSORS_CLOSE(cast(cast(t, DType::kF32), DType::kF64), t, 1e-7, 0);
}

TEST_CASE("scalar operators use the tensor's dtype") {
  Tensor x = from_vector<float>({1, 2}, {2});
  CHECK((x + 1.0).to_vector<float>() == std::vector<float>{2, 3});
  CHECK((1.0 - x).to_vector<float>() == std::vector<float>{0, -1});
  CHECK((x * 3.0).to_vector<float>() == std::vector<float>{3, 6});
  CHECK((2.0 / x).to_vector<float>() == std::vector<float>{2, 1});
  CHECK((-x).to_vector<float>() == std::vector<float>{-1, -2});
}

TEST_CASE("elementwise errors are statuses naming the op") {
  CHECK(Call(OpKind::kExp, {zeros({2}, DType::kI64)}, {}).status().message() ==
        "exp: input must be floating point, got i64[2]");
  CHECK(Call(OpKind::kNeg, {zeros({2}, DType::kBool)}, {}).status().message() ==
        "neg: input must be numeric, got bool[2]");
  CHECK(Call(OpKind::kAdd, {zeros({2}, DType::kBool), zeros({2}, DType::kBool)}, {})
            .status()
            .message() == "add: arithmetic on bool; cast first");
  CHECK(Call(OpKind::kLt, {zeros({3}), zeros({2})}, {}).status().message() ==
        "lt: shapes [3] and [2] do not broadcast");
}

}  // namespace
}  // namespace tc
