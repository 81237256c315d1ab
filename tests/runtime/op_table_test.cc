// The op table itself: every op in ops.def is declared and has an eager
// kernel, and calls that do not fit an op's declaration get a status.
#include <limits>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "graph/op_def.h"
#include "runtime/dispatch.h"
#include "runtime/ops.h"

namespace tc {
namespace {

TEST_CASE("every op has a declaration, a unique name and an eager kernel") {
  REQUIRE(AllOps().size() == static_cast<size_t>(kNumOps));
  for (OpKind op : AllOps()) {
    INFO(OpName(op));
    const OpDef& def = GetOpDef(op);
    CHECK(def.kind == op);
    CHECK(def.infer != nullptr);
    CHECK(OpKindFromName(OpName(op)).value() == op);
    // A region op runs its body's kernels.
    CHECK((GetKernel(op) != nullptr) == !def.Has(kTraitRegion));
  }
}

TEST_CASE("an op declares an epilogue exactly when its kernel takes post-ops") {
  for (OpKind op : AllOps()) {
    INFO(OpName(op));
    const OpDef& def = GetOpDef(op);
    CHECK((GetPostOpKernel(op) != nullptr) == !def.epilogue.ops.empty());
    for (OpKind post : def.epilogue.ops) {
      INFO("post-op " << OpName(post));
      CHECK(GetOpDef(post).Has(kTraitElementwise));
    }
  }
  const OpDef& linear = GetOpDef(OpKind::kLinear);
  CHECK(linear.TakesEpilogue(DType::kF32, {OpKind::kGelu, OpKind::kAdd, OpKind::kMul}));
  CHECK(linear.TakesEpilogue(DType::kF64, {}));
  CHECK_FALSE(linear.TakesEpilogue(DType::kF64, {OpKind::kRelu}));  // Eigen takes none
  CHECK_FALSE(linear.TakesEpilogue(DType::kF32, {OpKind::kPow}));
  const OpDef& batch_norm = GetOpDef(OpKind::kBatchNorm);
  CHECK(batch_norm.TakesEpilogue(DType::kF64, {OpKind::kRelu}));
  CHECK_FALSE(batch_norm.TakesEpilogue(DType::kF32, {OpKind::kRelu, OpKind::kRelu}));
  CHECK_FALSE(GetOpDef(OpKind::kConv2d).TakesEpilogue(DType::kF32, {OpKind::kRelu}));
}

TEST_CASE("shapes past 2^60 elements or with negative dims are errors, never an overflow") {
  using Ints = std::vector<int64_t>;
  const int64_t big = std::numeric_limits<int64_t>::max();
  auto error = [](OpKind op, std::vector<TensorType> in, Attrs attrs) {
    return std::string(InferTypes(op, in, attrs).status().message());
  };
  CHECK(
      error(OpKind::kFull, {}, {{"shape", Ints{big, 2}}, {"value", 0.0}, {"dtype", DType::kF32}}) ==
      "full: shape [9223372036854775807,2] has more than 2^60 elements");
  CHECK(error(OpKind::kReshape, {{DType::kF32, {0}}}, {{"shape", Ints{big, big, 0}}}) ==
        "reshape: cannot reshape f32[0] to [9223372036854775807,9223372036854775807,0]");
  CHECK(error(OpKind::kExpand, {{DType::kF32, {1, 1}}},
              {{"shape", Ints{int64_t{1} << 31, 1 << 30}}}) ==
        "expand: shape [2147483648,1073741824] has more than 2^60 elements");
  CHECK(error(OpKind::kArange, {},
              {{"start", -9223372036854775808.0},
               {"end", 9223372036854775807.0},
               {"step", 1.0},
               {"dtype", DType::kI64}}) ==
        "arange: [-9.22337e+18, 9.22337e+18) in steps of 1 has more than 2^60 elements");
  CHECK(
      error(OpKind::kFull, {}, {{"shape", Ints(65, 1)}, {"value", 0.0}, {"dtype", DType::kF32}}) ==
      "full: a shape of 65 dims (at most 64)");
  CHECK(CheckShapeSize(Ints(64, 1)).ok());
}

TEST_CASE("unknown op names are not found") {
  REQUIRE(OpKindFromName("matmull").status().message() == "unknown op 'matmull'");
}

TEST_CASE("calls that do not fit the declaration return a status naming the op") {
  const TensorType a{DType::kF32, {4, 3}}, b{DType::kF32, {2, 5}};
  CHECK(InferTypes(OpKind::kMatmul, {a, b}, {}).status().message() ==
        "matmul: inner dims differ: [4,3] x [2,5]");
  CHECK(InferTypes(OpKind::kAdd, {a}, {}).status().message() == "add: expected 2 inputs, got 1");
  CHECK(InferTypes(OpKind::kConcat, {}, {{"dim", int64_t{0}}}).status().message() ==
        "concat: expected at least 1 inputs, got 0");
  CHECK(InferTypes(OpKind::kSum, {a}, {{"dims", std::vector<int64_t>{0}}}).status().message() ==
        "sum: missing attribute 'keepdim'");
  CHECK(InferTypes(OpKind::kSum, {a}, {{"dims", int64_t{0}}, {"keepdim", false}})
            .status()
            .message() == "sum: attribute 'dims' must be int list, got 0");
  CHECK(InferTypes(OpKind::kNeg, {a}, {{"alpha", 1.0}}).status().message() ==
        "neg: unknown attribute 'alpha'");
  CHECK(InferTypes(OpKind::kAdd, {a, TensorType{DType::kF64, {4, 3}}}, {}).status().message() ==
        "add: dtypes differ: f32[4,3] vs f64[4,3]");
  CHECK(InferTypes(OpKind::kAdd, {a, b}, {}).status().message() ==
        "add: shapes [4,3] and [2,5] do not broadcast");
}

TEST_CASE("the throwing API carries the same status") {
  Tensor a = zeros({4, 3}), b = zeros({2, 5});
  try {
    matmul(a, b);
    FAIL("matmul of mismatched shapes did not throw");
  } catch (const Error& e) {
    CHECK(e.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(e.what()) == "matmul: inner dims differ: [4,3] x [2,5]");
  }
  CHECK(Call(OpKind::kAdd, {a, Tensor()}, {}).status().message() ==
        "add: input 1 is an undefined tensor");
}

TEST_CASE("costs come from the table") {
  const TensorType a{DType::kF32, {4, 3}}, b{DType::kF32, {3, 5}}, y{DType::kF32, {4, 5}};
  const OpCost mm = EstimateCost(OpKind::kMatmul, {a, b}, {y}, {});
  CHECK(mm.flops == 2 * 4 * 3 * 5);
  CHECK(mm.bytes == 4 * (12 + 15 + 20));
  const OpCost add = EstimateCost(OpKind::kAdd, {y, y}, {y}, {});
  CHECK(add.flops == 20);
  // A reduction reads each input element; pooling visits its window once per
  // pooled element, forward and backward alike.
  const TensorType x{DType::kF32, {2, 3, 8, 8}}, pooled{DType::kF32, {2, 3, 4, 4}};
  const TensorType total{DType::kF32, {}};
  CHECK(EstimateCost(OpKind::kSum, {x}, {total}, {}).flops == 2 * 3 * 8 * 8);
  CHECK(EstimateCost(OpKind::kVar, {x}, {total}, {}).flops == 3 * 2 * 3 * 8 * 8);
  Attrs pool;
  pool.Set("kernel", std::vector<int64_t>{2, 2});
  CHECK(EstimateCost(OpKind::kMaxPool2d, {x}, {pooled}, pool).flops == 4 * 2 * 3 * 4 * 4);
  CHECK(EstimateCost(OpKind::kMaxPool2dBackward, {pooled, x}, {x}, pool).flops ==
        4 * 2 * 3 * 4 * 4);
}

TEST_CASE("typed attributes: decoders read what encoders write; enumerations are checked") {
  const Conv2dOptions conv{.stride = {2, 1}, .padding = {0, 3}, .dilation = {1, 2}, .groups = 4};
  const Conv2dOptions c = Conv2dOptionsOf(ToAttrs(conv));
  CHECK(c.stride == conv.stride);
  CHECK(c.padding == conv.padding);
  CHECK(c.dilation == conv.dilation);
  CHECK(c.groups == conv.groups);
  const Pool2dOptions pool{.kernel = {3, 2}, .stride = {1, 2}, .padding = {1, 0}};
  const Pool2dOptions p = Pool2dOptionsOf(ToAttrs(pool));
  CHECK(p.kernel == pool.kernel);
  CHECK(p.stride == pool.stride);
  CHECK(p.padding == pool.padding);
  for (GeluApproximation a : {GeluApproximation::kNone, GeluApproximation::kTanh}) {
    CHECK(GeluApproximationOf(ToAttrs(a)) == a);
  }
  CHECK(ToAttrs(GeluApproximation::kTanh).ToString() == "{approximate=\"tanh\"}");
  const TensorType x{DType::kF32, {3}};
  CHECK(InferTypes(OpKind::kGelu, {x}, {{"approximate", std::string("erf")}}).status().message() ==
        "gelu: attribute 'approximate' must be one of \"none\", \"tanh\", got \"erf\"");
  CHECK(InferTypes(OpKind::kGelu, {x}, {{"approximate", int64_t{1}}}).status().message() ==
        "gelu: attribute 'approximate' must be string, got 1");
}

}  // namespace
}  // namespace tc
