// Every differentiable op's VJP rule against central finite differences in
// f64. The list of cases is checked against the op table: an op that needs a
// VJP rule and has no rule, or no case here, fails the first test.
#include "autodiff/gradcheck.h"

#include <functional>
#include <map>

#include "autodiff/vjp.h"
#include "catch2/catch.hpp"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

struct Case {
  std::string label;
  std::function<TensorList(const TensorList&)> fn;
  TensorList inputs;  // those that require grad are checked
  GradcheckOptions options = {};
};

uint64_t next_seed = 1;

// A random f64 input that requires grad; optionally non-contiguous.
Tensor In(Shape shape, bool non_contiguous = false) {
  Tensor t = testing::Random(shape, DType::kF64, next_seed++);
  if (non_contiguous) t = testing::NonContiguous(t);
  t.requires_grad_();
  return t;
}
// Values away from kinks and domain edges: |x| in [0.5, 1.5] with random sign.
Tensor AwayFromZero(Shape shape, bool non_contiguous = false) {
  Tensor r = testing::Random(shape, DType::kF64, next_seed++);
  Tensor t = (rand(shape, DType::kF64, nullptr, 0.5, 1.5) * sign(r)).detach();
  if (non_contiguous) t = testing::NonContiguous(t);
  t.requires_grad_();
  return t;
}
Tensor Positive(Shape shape) {
  Tensor t = rand(shape, DType::kF64, nullptr, 0.5, 2.0);
  t.requires_grad_();
  return t;
}
// A constant (no grad) input.
Tensor Const(Shape shape, DType dtype = DType::kF64) {
  return testing::Random(shape, dtype, next_seed++);
}

using Unary = Tensor (*)(const Tensor&);
using Binary = Tensor (*)(const Tensor&, const Tensor&);

std::vector<Case> UnaryCases(Unary op, bool positive = false, bool away_from_zero = false) {
  auto make = [&](Shape s, bool nc) {
    return positive ? Positive(s) : away_from_zero ? AwayFromZero(s, nc) : In(s, nc);
  };
  auto fn = [op](const TensorList& in) { return TensorList{op(in[0])}; };
  return {{"[3,4]", fn, {make({3, 4}, false)}},
          {"non-contiguous [2,3,2]", fn, {make({2, 3, 2}, !positive)}},
          {"scalar", fn, {make({}, false)}}};
}

std::vector<Case> BinaryCases(Binary op, bool positive_b = false) {
  auto fn = [op](const TensorList& in) { return TensorList{op(in[0], in[1])}; };
  auto b = [&](Shape s) { return positive_b ? Positive(s) : In(s); };
  return {{"same shape", fn, {In({3, 4}), b({3, 4})}},
          {"broadcast [2,3,4] x [3,1]", fn, {In({2, 3, 4}), b({3, 1})}},
          {"broadcast [4] x [3,4], non-contiguous",
           fn,
           {In({4}), positive_b ? b({3, 4}) : In({3, 4}, true)}},
          {"scalar operand", fn, {In({2, 3}), b({})}}};
}

std::vector<Case> ReduceCases(Tensor (*op)(const Tensor&, std::vector<int64_t>, bool)) {
  std::vector<Case> cases;
  for (std::vector<int64_t> dims : {std::vector<int64_t>{}, {1}, {0, 2}, {-1}}) {
    for (bool keepdim : {false, true}) {
      cases.push_back({absl::StrCat("dims ", ShapeToString(dims), keepdim ? " keepdim" : ""),
                       [op, dims, keepdim](const TensorList& in) {
                         return TensorList{op(in[0], dims, keepdim)};
                       },
                       {In({2, 3, 4}, dims.size() == 1)}});
    }
  }
  return cases;
}

Conv2dOptions ConvOpts(int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
  return {{stride, stride}, {pad, pad}, {dilation, dilation}, groups};
}

std::map<OpKind, std::vector<Case>> AllCases() {
  std::map<OpKind, std::vector<Case>> c;
  c[OpKind::kAdd] = BinaryCases(add);
  c[OpKind::kSub] = BinaryCases(sub);
  c[OpKind::kMul] = BinaryCases(mul);
  c[OpKind::kDiv] = BinaryCases(div, /*positive_b=*/true);
  c[OpKind::kMaximum] = BinaryCases(maximum);
  c[OpKind::kMinimum] = BinaryCases(minimum);
  c[OpKind::kWhere] = {{"broadcast condition",
                        [](const TensorList& in) { return TensorList{where(in[0], in[1], in[2])}; },
                        {Const({3, 1}, DType::kBool), In({3, 4}, true), In({4})}}};
  c[OpKind::kNeg] = UnaryCases(neg);
  c[OpKind::kExp] = UnaryCases(exp);
  c[OpKind::kLog] = UnaryCases(log, /*positive=*/true);
  c[OpKind::kLog1p] = UnaryCases(log1p, /*positive=*/true);
  c[OpKind::kErf] = UnaryCases(erf);
  c[OpKind::kSqrt] = UnaryCases(sqrt, true);
  c[OpKind::kRsqrt] = UnaryCases(rsqrt, true);
  c[OpKind::kAbs] = UnaryCases(abs, false, /*away_from_zero=*/true);
  c[OpKind::kRelu] = UnaryCases(relu, false, true);
  c[OpKind::kSigmoid] = UnaryCases(sigmoid);
  c[OpKind::kTanh] = UnaryCases(tanh);
  c[OpKind::kGelu] = {
      {"erf", [](const TensorList& in) { return TensorList{gelu(in[0])}; }, {In({3, 4}, true)}},
      {"tanh", [](const TensorList& in) { return TensorList{gelu(in[0], "tanh")}; }, {In({3, 4})}}};
  c[OpKind::kPow] = {{"square",
                      [](const TensorList& in) { return TensorList{pow(in[0], 2)}; },
                      {In({3, 4}, true)}},
                     {"x^-1.5",
                      [](const TensorList& in) { return TensorList{pow(in[0], -1.5)}; },
                      {Positive({5})}}};
  c[OpKind::kCast] = {
      {"f64 -> f32 -> f64",
       [](const TensorList& in) { return TensorList{cast(cast(in[0], DType::kF32), DType::kF64)}; },
       {In({4})},
       // The function is the identity up to f32 rounding (an ulp of about
       // 6e-8 here): a step of 1e-2 keeps that rounding's share of the
       // difference quotient near 1e-5 whatever the inputs are.
       {.eps = 1e-2, .atol = 1e-5, .rtol = 1e-5}}};
  c[OpKind::kSum] = ReduceCases(sum);
  c[OpKind::kMean] = ReduceCases(mean);
  c[OpKind::kMax] = ReduceCases(max);
  c[OpKind::kMin] = ReduceCases(min);
  c[OpKind::kVar] =
      ReduceCases([](const Tensor& x, std::vector<int64_t> d, bool k) { return var(x, d, k, 1); });
  c[OpKind::kSoftmax] = {{"dim 1",
                          [](const TensorList& in) { return TensorList{softmax(in[0], 1)}; },
                          {In({3, 4, 2}, true)}},
                         {"dim -1",
                          [](const TensorList& in) { return TensorList{softmax(in[0], -1)}; },
                          {In({3, 5})}}};
  c[OpKind::kLogSoftmax] = {
      {"dim 0",
       [](const TensorList& in) { return TensorList{log_softmax(in[0], 0)}; },
       {In({3, 4}, true)}},
      {"dim -1",
       [](const TensorList& in) { return TensorList{log_softmax(in[0], -1)}; },
       {In({2, 3, 5})}}};
  auto mm = [](const TensorList& in) { return TensorList{matmul(in[0], in[1])}; };
  c[OpKind::kMatmul] = {
      {"2-D", mm, {In({3, 4}), In({4, 5})}},
      {"transposed operands",
       mm,
       {transpose(In({4, 3}).detach(), 0, 1).requires_grad_(), In({4, 2}, true)}},
      {"batched, broadcast [2,1,3,4] x [5,4,2]", mm, {In({2, 1, 3, 4}), In({5, 4, 2})}},
      {"[3,4] x [2,4,5]", mm, {In({3, 4}), In({2, 4, 5})}}};
  c[OpKind::kLinear] = {
      {"2-D",
       [](const TensorList& in) { return TensorList{linear(in[0], in[1], in[2])}; },
       {In({4, 3}, true), In({2, 3}), In({2})}},
      {"3-D input",
       [](const TensorList& in) { return TensorList{linear(in[0], in[1], in[2])}; },
       {In({2, 4, 3}), In({5, 3}, true), In({5})}}};
  c[OpKind::kPermute] = {{"[2,0,1]",
                          [](const TensorList& in) {
                            return TensorList{permute(in[0], {2, 0, 1})};
                          },
                          {In({2, 3, 4}, true)}}};
  c[OpKind::kReshape] = {{"split and merge",
                          [](const TensorList& in) {
                            return TensorList{reshape(in[0], {4, 6})};
                          },
                          {In({2, 3, 4}, true)}}};
  c[OpKind::kExpand] = {{"[3,1] -> [2,3,4]",
                         [](const TensorList& in) {
                           return TensorList{expand(in[0], {2, 3, 4})};
                         },
                         {In({3, 1})}}};
  c[OpKind::kSlice] = {{"step 2",
                        [](const TensorList& in) { return TensorList{slice(in[0], 1, 1, 6, 2)}; },
                        {In({3, 7}, true)}},
                       {"negative bounds",
                        [](const TensorList& in) { return TensorList{slice(in[0], 0, -3, -1)}; },
                        {In({5, 2})}}};
  c[OpKind::kConcat] = {{"dim 1",
                         [](const TensorList& in) {
                           return TensorList{concat({in[0], in[1], in[2]}, 1)};
                         },
                         {In({2, 3}), In({2, 1}, true), In({2, 4})}}};
  c[OpKind::kPad] = {{"two dims",
                      [](const TensorList& in) {
                        return TensorList{pad(in[0], {1, 0, 2, 3}, 1.5)};
                      },
                      {In({3, 4}, true)}}};
  auto conv = [](Conv2dOptions o) {
    return [o](const TensorList& in) { return TensorList{conv2d(in[0], in[1], o)}; };
  };
  c[OpKind::kConv2d] = {
      {"stride 1 pad 1", conv(ConvOpts(1, 1, 1, 1)), {In({2, 3, 5, 5}, true), In({4, 3, 3, 3})}},
      {"stride 2 dilation 2 groups 2",
       conv(ConvOpts(2, 1, 2, 2)),
       {In({1, 4, 7, 6}), In({2, 2, 3, 2}, true)}},
      {"with a bias [O]",
       [](const TensorList& in) {
         return TensorList{conv2d(in[0], in[1], in[2], ConvOpts(1, 1, 1, 1))};
       },
       {In({2, 3, 4, 4}, true), In({4, 3, 3, 3}, true), In({4}, true)}},
      {"with a bias [1,O,1,1], stride 2",
       [](const TensorList& in) {
         return TensorList{conv2d(in[0], in[1], in[2], ConvOpts(2, 0, 1, 1))};
       },
       {In({1, 2, 5, 5}), In({3, 2, 2, 2}, true), In({1, 3, 1, 1}, true)}}};
  // As ConvTranspose2d uses it: grad [N, O, ...] and w [O, I / g, kh, kw]
  // to the conv input's shape, which may exceed the smallest that fits.
  auto conv_data = [](std::vector<int64_t> input_shape, Conv2dOptions o) {
    return [input_shape, o](const TensorList& in) {
      return TensorList{conv2d_backward_data(in[0], in[1], input_shape, o)};
    };
  };
  c[OpKind::kConv2dBackwardData] = {
      {"stride 1 pad 1",
       conv_data({2, 3, 5, 5}, ConvOpts(1, 1, 1, 1)),
       {In({2, 4, 5, 5}, true), In({4, 3, 3, 3}, true)}},
      {"stride 2 groups 2, one row and column beyond the smallest input",
       conv_data({1, 4, 8, 7}, ConvOpts(2, 1, 1, 2)),
       {In({1, 2, 4, 4}, true), In({2, 2, 3, 2}, true)}}};
  auto pool = [](Tensor (*op)(const Tensor&, const Pool2dOptions&), Pool2dOptions o) {
    return [op, o](const TensorList& in) { return TensorList{op(in[0], o)}; };
  };
  // Distinct values keep max pooling away from ties, where it has no derivative.
  c[OpKind::kMaxPool2d] = {
      {"2x2 stride 2", pool(max_pool2d, {{2, 2}, {2, 2}, {0, 0}}), {In({2, 3, 4, 4}, true)}},
      {"3x3 stride 1 pad 1", pool(max_pool2d, {{3, 3}, {1, 1}, {1, 1}}), {In({1, 2, 5, 4})}}};
  c[OpKind::kAvgPool2d] = {
      {"2x2 stride 2", pool(avg_pool2d, {{2, 2}, {2, 2}, {0, 0}}), {In({2, 3, 4, 4}, true)}},
      {"3x3 stride 2 pad 1", pool(avg_pool2d, {{3, 3}, {2, 2}, {1, 1}}), {In({1, 2, 5, 4})}}};
  c[OpKind::kBatchNorm] = {
      {"4-D, all outputs",
       [](const TensorList& in) {
         NormResult r = batch_norm(in[0], in[1], in[2], 1e-5);
         return TensorList{r.y, r.mean, r.var};
       },
       {In({3, 2, 3, 2}, true), In({2}), In({2})}},
      {"2-D",
       [](const TensorList& in) { return TensorList{batch_norm(in[0], in[1], in[2], 1e-3).y}; },
       {In({5, 3}), In({3}), In({3})}}};
  c[OpKind::kBatchNormInference] = {
      {"all inputs",
       [](const TensorList& in) {
         return TensorList{batch_norm_inference(in[0], in[1], in[2], in[3], in[4], 1e-5)};
       },
       {In({2, 3, 2, 2}, true), In({3}), In({3}), In({3}), Positive({3})}}};
  c[OpKind::kLayerNorm] = {
      {"last dim, all outputs",
       [](const TensorList& in) {
         NormResult r = layer_norm(in[0], in[1], in[2], -1, 1e-5);
         return TensorList{r.y, r.mean, r.var};
       },
       {In({3, 5}, true), In({5}), In({5})}},
      {"last two dims",
       [](const TensorList& in) { return TensorList{layer_norm(in[0], in[1], in[2], 1, 1e-5).y}; },
       {In({2, 3, 4}), In({3, 4}), In({3, 4})}}};
  c[OpKind::kEmbedding] = {
      {"repeated indices",
       [](const TensorList& in) { return TensorList{embedding(in[0], in[1])}; },
       {In({5, 3}), from_vector<int64_t>({1, 4, 1, 0, 1, 2}, {2, 3})}}};
  // Over "self", this process alone: the sum over its one rank.
  c[OpKind::kAllReduceStart] = {
      {"two tensors, one strided, weighted",
       [](const TensorList& in) {
         return TensorList{all_reduce_start({in[0], in[1]}, in[2], "self")};
       },
       {In({3, 4}), In({2, 5}, true), scalar(0.75, DType::kF64)}}};
  c[OpKind::kAllReduceWait] = {
      {"a bucket",
       [](const TensorList& in) { return TensorList{all_reduce_wait(in[0], "self")}; },
       {In({7})}}};
  c[OpKind::kDropout] = {
      {"p 0.3",
       [](const TensorList& in) { return TensorList{dropout(in[0], 0.3, in[1], in[2])}; },
       {In({4, 5}, true), from_vector<int64_t>({7}, {}), from_vector<int64_t>({11}, {})}}};
  // Odd lengths, more keys than one kernel block (256) in the long case,
  // strided heads, both mask kinds; the float mask and lse are checked too.
  auto attention = [](bool causal, double scale) {
    return [causal, scale](const TensorList& in) {
      const Tensor mask = in.size() == 4 ? in[3] : Tensor();
      AttentionResult r = sdpa(in[0], in[1], in[2], mask, causal, scale);
      return TensorList{r.out, r.lse};
    };
  };
  c[OpKind::kSdpa] = {
      {"plain, strided",
       attention(false, 0.5),
       {In({2, 5, 3}, true), In({2, 7, 3}), In({2, 7, 4})}},
      {"causal, rank 4",
       attention(true, 0.7),
       {In({2, 2, 6, 3}), In({2, 2, 6, 3}), In({2, 2, 6, 2})}},
      {"bool mask broadcast",
       attention(false, 1.0),
       {In({2, 3, 4}), In({2, 5, 4}), In({2, 5, 3}),
        ne(from_vector<int64_t>({1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0}, {3, 5}),
           scalar(0, DType::kI64))}},
      {"float mask with grad, causal",
       attention(true, 0.4),
       {In({1, 4, 3}), In({1, 4, 3}), In({1, 4, 2}), In({4, 4})}},
      {"300 keys, two blocks",
       attention(false, 0.3),
       {In({1, 3, 2}), In({1, 300, 2}), In({1, 300, 2})}}};
  return c;
}

TEST_CASE("every op that needs a VJP rule has one and has gradcheck cases") {
  const auto cases = AllCases();
  for (OpKind op : AllOps()) {
    INFO(OpName(op));
    if (NeedsVjp(op)) {
      CHECK(GetVjp(op) != nullptr);
      CHECK(cases.count(op) == 1);
    } else {
      CHECK(cases.count(op) == 0);
    }
  }
}

TEST_CASE("gradcheck passes for every differentiable op") {
  for (const auto& [op, cases] : AllCases()) {
    for (const Case& c : cases) {
      INFO(OpName(op) << ": " << c.label);
      const absl::Status status = gradcheck(c.fn, c.inputs, c.options);
      INFO(status.message());
      CHECK(status.ok());
    }
  }
}

TEST_CASE("gradcheck fails on a wrong gradient and names the element") {
  // x * detach(x): the analytical gradient sees only one factor (x), the
  // finite differences see both (2x).
  auto wrong = [](const TensorList& in) { return TensorList{in[0] * in[0].detach()}; };
  Tensor x = from_vector<double>({1, 2, 3}, {3}).requires_grad_();
  const absl::Status status = gradcheck(wrong, {x});
  REQUIRE_FALSE(status.ok());
  CHECK(status.message().find("gradcheck: input 0 f64[3] element [0]: analytic") == 0);
}

TEST_CASE("gradcheck rejects unsuitable inputs") {
  auto id = [](const TensorList& in) { return TensorList{in[0] * 1.0}; };
  CHECK(gradcheck(id, {zeros({2}).requires_grad_()}).message() ==
        "gradcheck: input 0 must be f64, got f32[2]");
  CHECK(gradcheck(id, {zeros({2}, DType::kF64)}).message() == "gradcheck: no input requires grad");
  Tensor expanded = zeros({1}, DType::kF64).expand({3});
  CHECK(gradcheck(id, {expanded}).message() ==
        "gradcheck: input 0 is an expanded view; pass a copy");
}

}  // namespace
}  // namespace tc
