// The op matrix, tensorcut's counterpart of PyTorch's OpInfo tests: every op
// of graph/ops.def, on f32 and f64 (bool and i64 where those are the op's
// natural operands or results), on odd, broadcast, scalar and empty shapes,
// alone and inside small chains that take the fusing compiler's special paths
// (elementwise groups, post-ops on matmul/linear/batch norm, a convolution's
// channel bias, sums in a fused pass), compiled by interpreter() and fusing()
// and run twice. Each output equals eager execution (tc::Call, node by node)
// on the same inputs: bitwise through the interpreter, within rounding through
// fusing() (exactly for bool and i64). An op without cases fails by name, and
// every op must run at least one case that its shape inference accepts.
//
// One op's cases alone: bazel-bin/tests/codegen/op_matrix_test -c matmul
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "codegen/interpreter.h"
#include "codegen/program.h"
#include "graph/ir.h"
#include "graph/printer.h"
#include "runtime/dispatch.h"
#include "runtime/ops.h"
#include "tests/codegen/lowered_paths.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using Ints = std::vector<int64_t>;

// ---------------------------------------------------------------------------
// Inputs: deterministic values of one dtype.

class Make {
 public:
  Make(DType dtype, uint64_t seed) : dtype_(dtype), gen_(seed) {}
  DType dtype() const { return dtype_; }

  // Normal values for floats, integers in [-3, 4] for i64, coin flips for bool.
  Tensor N(const Shape& shape) { return Of(dtype_, shape); }
  Tensor Of(DType dtype, const Shape& shape) {
    switch (dtype) {
      case DType::kI64:
        return cast(rand(shape, DType::kF64, &gen_, -4, 5), DType::kI64);
      case DType::kBool:
        return Bool(shape);
      default:
        return randn(shape, dtype, &gen_);
    }
  }
  // In [0.5, 2): for log, sqrt, fractional powers and variances.
  Tensor Pos(const Shape& shape) { return rand(shape, dtype_, &gen_, 0.5, 2); }
  // Multiples of 0.5 in [-2, 1.5]: zeros and ties for the ops with kinks.
  Tensor Ties(const Shape& shape) {
    std::vector<double> v = rand(shape, DType::kF64, &gen_, -3.5, 3.5).to_vector<double>();
    for (double& x : v) x = std::round(x) / 2;
    return from_vector<double>(v, shape).to(dtype_);
  }
  Tensor Bool(const Shape& shape) {
    return lt(rand(shape, DType::kF64, &gen_), scalar(0.5, DType::kF64));
  }
  // i64 in [0, n).
  Tensor Index(const Shape& shape, int64_t n) {
    return cast(rand(shape, DType::kF64, &gen_, 0, static_cast<double>(n)), DType::kI64);
  }

 private:
  DType dtype_;
  Generator gen_;
};

// One call of an op: its operands' values and its attributes.
struct OpCase {
  std::string note;
  std::vector<Tensor> inputs;
  Attrs attrs;
  std::shared_ptr<const Graph> body = nullptr;  // a region op's (Graph::AddRegionNode)
};
using CaseFn = std::function<std::vector<OpCase>(Make&)>;

// Every combination of `base`'s cases with one of `variants` (attributes
// added to each case's).
CaseFn Cross(CaseFn base, std::vector<Attrs> variants) {
  return [base = std::move(base), variants = std::move(variants)](Make& m) {
    std::vector<OpCase> out;
    for (const OpCase& c : base(m)) {
      for (const Attrs& extra : variants) {
        OpCase v = c;
        for (const auto& [name, value] : extra.entries()) v.attrs.Set(name, value);
        v.note = absl::StrCat(c.note, " ", extra.ToString());
        out.push_back(std::move(v));
      }
    }
    return out;
  };
}

// The first result's shape of a call that must infer (a forward op whose
// output shape a backward case needs).
Shape Inferred(OpKind op, const std::vector<TensorType>& inputs, const Attrs& attrs) {
  return InferTypes(op, inputs, attrs).value()[0].shape;
}

// ---------------------------------------------------------------------------
// Case builders, by family.

std::vector<OpCase> BinaryCases(Make& m) {
  return {
      {"same shape", {m.N({3, 5}), m.N({3, 5})}},
      {"3-d", {m.N({2, 3, 5}), m.N({2, 3, 5})}},
      {"several blocks", {m.N({17, 33}), m.N({17, 33})}},
      {"parallel", {m.N({300, 257}), m.N({300, 257})}},
      {"broadcast", {m.N({3, 1}), m.N({1, 5})}},
      {"broadcast rank", {m.N({2, 3, 5}), m.N({5})}},
      {"scalar operand", {m.N({2, 3, 5}), m.N({})}},
      {"scalar first", {m.N({}), m.N({3, 5})}},
      {"scalars", {m.N({}), m.N({})}},
      {"ties and zeros", {m.Ties({3, 5}), m.Ties({3, 5})}},
      {"empty dim", {m.N({0, 5}), m.N({1, 5})}},
      {"empty last dim, broadcast", {m.N({3, 0}), m.N({3, 1})}},
  };
}

std::vector<OpCase> WhereCases(Make& m) {
  return {
      {"same shape", {m.Bool({3, 5}), m.N({3, 5}), m.N({3, 5})}},
      {"several blocks", {m.Bool({17, 33}), m.N({17, 33}), m.N({17, 33})}},
      {"broadcast", {m.Bool({3, 1}), m.N({1, 5}), m.N({})}},
      {"broadcast condition", {m.Bool({5}), m.N({2, 3, 5}), m.N({2, 3, 1})}},
      {"scalar condition", {m.Bool({}), m.N({3, 5}), m.N({3, 5})}},
      {"empty dim", {m.Bool({0, 5}), m.N({0, 5}), m.N({5})}},
  };
}

enum class Domain { kAny, kPositive };

CaseFn UnaryCases(Domain domain) {
  return [domain](Make& m) {
    auto x = [&](const Shape& s) { return domain == Domain::kPositive ? m.Pos(s) : m.N(s); };
    std::vector<OpCase> out = {
        {"2-d", {x({3, 5})}},
        {"4-d", {x({2, 3, 5, 7})}},
        {"several blocks", {x({17, 33})}},
        {"parallel", {x({300, 257})}},
        {"scalar", {x({})}},
        {"empty dim", {x({0, 5})}},
        {"empty last dim", {x({3, 0})}},
    };
    if (domain == Domain::kAny) out.push_back({"ties and zeros", {m.Ties({3, 5})}});
    return out;
  };
}

const std::vector<Attrs> kGeluForms = {{{"approximate", std::string("none")}},
                                       {{"approximate", std::string("tanh")}}};

std::vector<OpCase> GeluBackwardCases(Make& m) {
  return {
      {"2-d", {m.N({3, 5}), m.N({3, 5})}},
      {"several blocks", {m.N({17, 33}), m.N({17, 33})}},
      {"scalar", {m.N({}), m.N({})}},
      {"empty dim", {m.N({0, 5}), m.N({0, 5})}},
  };
}

std::vector<OpCase> PowCases(Make& m) {
  std::vector<OpCase> out;
  for (double e : {2.0, 3.0, -1.0}) {
    out.push_back({"integer exponent", {m.N({3, 5})}, {{"exponent", e}}});
  }
  for (double e : {0.5, 1.5, -0.5}) {
    out.push_back({"positive base", {m.Pos({2, 3, 5})}, {{"exponent", e}}});
  }
  out.push_back({"scalar", {m.Pos({})}, {{"exponent", 2.5}}});
  out.push_back({"empty dim", {m.Pos({0, 5})}, {{"exponent", 2.0}}});
  return out;
}

// Casts from the case dtype to every dtype.
std::vector<OpCase> CastCases(Make& m) {
  std::vector<OpCase> out;
  for (DType to : {DType::kF32, DType::kF64, DType::kI64, DType::kBool}) {
    const Attrs a{{"dtype", to}};
    const std::string note = absl::StrCat("to ", DTypeName(to));
    const bool floating = IsFloating(m.dtype());
    out.push_back({note, {floating ? m.Ties({3, 5}) : m.N({3, 5})}, a});
    if (floating) out.push_back({note + ", normal values", {m.N({2, 3, 5})}, a});
    out.push_back({note + ", scalar", {m.N({})}, a});
    out.push_back({note + ", empty dim", {m.N({0, 5})}, a});
  }
  return out;
}

std::vector<OpCase> FullCases(Make& m) {
  auto full = [&](Ints shape, double value) {
    return Attrs{{"shape", shape}, {"dtype", m.dtype()}, {"value", value}};
  };
  return {
      {"2-d", {}, full({3, 5}, 1.5)},
      {"4-d", {}, full({2, 3, 5, 7}, -2)},
      {"scalar", {}, full({}, 1)},
      {"empty dim", {}, full({0, 4}, 3)},
  };
}

std::vector<OpCase> ArangeCases(Make& m) {
  auto range = [&](double start, double end, double step) {
    return Attrs{{"start", start}, {"end", end}, {"step", step}, {"dtype", m.dtype()}};
  };
  return {
      {"integers", {}, range(0, 7, 1)},
      {"descending halves", {}, range(1.5, -2, -0.5)},
      {"fractional step", {}, range(0, 1, 0.3)},
      {"empty", {}, range(2, 2, 1)},
  };
}

// A number here: a symbolic size has its value once the graph is specialized.
std::vector<OpCase> SizeScalarCases(Make& m) {
  auto size = [&](int64_t n) { return Attrs{{"size", n}, {"dtype", m.dtype()}}; };
  return {{"a batch", {}, size(96)}, {"zero", {}, size(0)}};
}

Attrs Reduce(Ints dims, bool keepdim) { return {{"dims", dims}, {"keepdim", keepdim}}; }

std::vector<OpCase> ReduceCases(Make& m) {
  return {
      {"rows", {m.N({3, 5})}, Reduce({1}, false)},
      {"columns keepdim", {m.N({3, 5})}, Reduce({0}, true)},
      {"outer and inner dims keepdim", {m.N({2, 3, 5})}, Reduce({0, 2}, true)},
      {"all dims", {m.N({2, 3, 5})}, Reduce({}, false)},
      {"last dim", {m.N({2, 3, 5, 7})}, Reduce({-1}, false)},
      {"columns of a large tensor", {m.N({300, 257})}, Reduce({0}, false)},
      {"ties", {m.Ties({3, 5})}, Reduce({1}, false)},
      {"scalar", {m.N({})}, Reduce({}, false)},
      {"empty kept dim", {m.N({0, 5})}, Reduce({1}, false)},
      {"empty reduced dim", {m.N({0, 5})}, Reduce({0}, false)},
      {"empty reduced dim, 32 kept", {m.N({0, 32})}, Reduce({0}, false)},
      {"rows of 32", {m.N({3, 32})}, Reduce({1}, false)},
      {"all of [4,8]", {m.N({4, 8})}, Reduce({}, false)},
      {"outer dims, 16 kept", {m.N({2, 3, 16})}, Reduce({0, 1}, true)},
  };
}

std::vector<OpCase> ArgmaxCases(Make& m) {
  auto arg = [](int64_t dim, bool keepdim) { return Attrs{{"dim", dim}, {"keepdim", keepdim}}; };
  return {
      {"rows", {m.N({3, 5})}, arg(1, false)},
      {"first dim keepdim", {m.N({2, 3, 5})}, arg(0, true)},
      {"last dim", {m.N({2, 3, 5, 7})}, arg(-1, false)},
      {"ties", {m.Ties({3, 5})}, arg(1, true)},
      {"empty kept dim", {m.N({0, 5})}, arg(1, false)},
      {"empty reduced dim", {m.N({0, 5})}, arg(0, false)},
  };
}

std::vector<OpCase> SoftmaxCases(Make& m) {
  auto dim = [](int64_t d) { return Attrs{{"dim", d}}; };
  return {
      {"rows", {m.N({3, 5})}, dim(1)},          {"columns", {m.N({3, 5})}, dim(0)},
      {"middle dim", {m.N({2, 3, 5})}, dim(1)}, {"last dim", {m.N({2, 3, 5, 7})}, dim(-1)},
      {"long rows", {m.N({3, 300})}, dim(1)},   {"empty dim", {m.N({0, 5})}, dim(1)},
  };
}

std::vector<OpCase> MatmulCases(Make& m) {
  return {
      {"2-d", {m.N({3, 4}), m.N({4, 5})}},
      {"batched x 2-d", {m.N({2, 3, 4}), m.N({4, 5})}},
      {"batched", {m.N({2, 3, 4}), m.N({2, 4, 5})}},
      {"batch dims broadcast", {m.N({2, 1, 3, 4}), m.N({3, 4, 5})}},
      {"larger", {m.N({33, 65}), m.N({65, 17})}},
      {"empty inner dim", {m.N({3, 0}), m.N({0, 5})}},
      {"empty rows", {m.N({0, 4}), m.N({4, 5})}},
  };
}

std::vector<OpCase> LinearCases(Make& m) {
  auto linear = [&](const char* note, Shape x, int64_t out) {
    const int64_t in = x.back();
    return OpCase{note, {m.N(x), m.N({out, in}), m.N({out})}};
  };
  return {
      linear("2-d", {3, 4}, 5),        linear("3-d", {2, 3, 4}, 5),
      linear("1-d", {4}, 3),           linear("larger", {33, 65}, 17),
      linear("empty rows", {0, 4}, 5), linear("empty input", {3, 0}, 2),
  };
}

std::vector<OpCase> PermuteCases(Make& m) {
  auto dims = [](Ints d) { return Attrs{{"dims", d}}; };
  return {
      {"transpose", {m.N({3, 5})}, dims({1, 0})},
      {"rotate", {m.N({2, 3, 5})}, dims({2, 0, 1})},
      {"to channels-last", {m.N({2, 3, 5, 7})}, dims({0, 2, 3, 1})},
      {"negative dims", {m.N({2, 3, 5})}, dims({-1, 0, 1})},
      {"scalar", {m.N({})}, dims({})},
      {"empty dim", {m.N({0, 3})}, dims({1, 0})},
  };
}

std::vector<OpCase> ReshapeCases(Make& m) {
  auto shape = [](Ints s) { return Attrs{{"shape", s}}; };
  return {
      {"2-d", {m.N({3, 5})}, shape({5, 3})},
      {"merge dims", {m.N({2, 3, 5})}, shape({6, 5})},
      {"flatten", {m.N({2, 3, 5, 7})}, shape({2, 105})},
      {"to 1-d", {m.N({3, 5})}, shape({15})},
      {"scalar up", {m.N({})}, shape({1, 1})},
      {"to scalar", {m.N({1, 1})}, shape({})},
      {"empty dim", {m.N({0, 5})}, shape({5, 0})},
  };
}

std::vector<OpCase> ExpandCases(Make& m) {
  auto shape = [](Ints s) { return Attrs{{"shape", s}}; };
  return {
      {"columns", {m.N({3, 1})}, shape({3, 5})},
      {"new dims", {m.N({5})}, shape({2, 3, 5})},
      {"middle dim, -1 kept", {m.N({2, 1, 5})}, shape({2, 3, -1})},
      {"scalar", {m.N({})}, shape({3, 5})},
      {"same shape", {m.N({3, 5})}, shape({3, 5})},
      {"empty dim", {m.N({0, 1})}, shape({0, 5})},
  };
}

Attrs SliceAttrs(int64_t dim, int64_t start, int64_t end, int64_t step) {
  return {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}};
}

// (input shape, slice): shared by slice and slice_backward.
std::vector<std::pair<Shape, Attrs>> Slices() {
  return {
      {{3, 5}, SliceAttrs(1, 1, 4, 1)},       {{2, 3, 5}, SliceAttrs(2, 0, 5, 2)},
      {{2, 3, 5}, SliceAttrs(-1, -3, -1, 1)}, {{2, 3, 5, 7}, SliceAttrs(1, 1, 100, 1)},
      {{3, 5}, SliceAttrs(0, 0, 3, 3)},       {{3, 5}, SliceAttrs(0, 2, 2, 1)},
  };
}

std::vector<OpCase> SliceCases(Make& m) {
  std::vector<OpCase> out;
  for (auto& [shape, attrs] : Slices()) out.push_back({attrs.ToString(), {m.N(shape)}, attrs});
  return out;
}

std::vector<OpCase> SliceBackwardCases(Make& m) {
  std::vector<OpCase> out;
  for (auto& [shape, attrs] : Slices()) {
    Attrs a = attrs;
    a.Set("input_shape", shape);
    const Shape grad = Inferred(OpKind::kSlice, {{m.dtype(), shape}}, attrs);
    out.push_back({attrs.ToString(), {m.N(grad)}, a});
  }
  return out;
}

std::vector<OpCase> ConcatCases(Make& m) {
  auto dim = [](int64_t d) { return Attrs{{"dim", d}}; };
  return {
      {"columns", {m.N({3, 5}), m.N({3, 2})}, dim(1)},
      {"three along dim 0", {m.N({1, 3, 5}), m.N({2, 3, 5}), m.N({1, 3, 5})}, dim(0)},
      {"last dim", {m.N({2, 3, 5}), m.N({2, 3, 5})}, dim(-1)},
      {"one input", {m.N({3, 5})}, dim(0)},
      {"an empty input", {m.N({0, 5}), m.N({3, 5})}, dim(0)},
  };
}

std::vector<OpCase> PadCases(Make& m) {
  auto pad = [](Ints pads, double value) { return Attrs{{"pads", pads}, {"value", value}}; };
  return {
      {"2-d", {m.N({3, 5})}, pad({1, 2, 0, 1}, 0.5)},
      {"3-d", {m.N({2, 3, 5})}, pad({0, 0, 1, 1, 2, 0}, 0)},
      {"spatial", {m.N({2, 3, 5, 7})}, pad({0, 0, 0, 0, 1, 1, 1, 1}, -1)},
      {"scalar", {m.N({})}, pad({}, 0)},
      {"empty dim", {m.N({0, 5})}, pad({1, 1, 0, 0}, 2)},
  };
}

Attrs ConvAttrs(Ints stride, Ints padding, Ints dilation, int64_t groups) {
  return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
}

struct ConvShape {
  const char* note;
  Shape x, w;
  Attrs attrs;
};

// Shared by conv2d and its backward ops.
std::vector<ConvShape> Convolutions() {
  return {
      {"3x3 same", {2, 3, 7, 9}, {4, 3, 3, 3}, ConvAttrs({1, 1}, {1, 1}, {1, 1}, 1)},
      {"strided", {2, 3, 7, 9}, {5, 3, 3, 2}, ConvAttrs({2, 2}, {0, 0}, {1, 1}, 1)},
      {"dilated groups", {1, 4, 9, 7}, {6, 2, 3, 3}, ConvAttrs({1, 1}, {2, 2}, {2, 2}, 2)},
      {"depthwise", {2, 3, 5, 5}, {3, 1, 3, 3}, ConvAttrs({1, 1}, {1, 1}, {1, 1}, 3)},
      {"1x1", {2, 5, 4, 6}, {7, 5, 1, 1}, ConvAttrs({1, 1}, {0, 0}, {1, 1}, 1)},
      {"empty batch", {0, 3, 5, 5}, {4, 3, 3, 3}, ConvAttrs({1, 1}, {1, 1}, {1, 1}, 1)},
  };
}

// Each convolution without a bias, with one of [O] and with one of [1,O,1,1].
std::vector<OpCase> ConvCases(Make& m) {
  std::vector<OpCase> out;
  for (const ConvShape& c : Convolutions()) {
    const int64_t o = c.w[0];
    out.push_back({c.note, {m.N(c.x), m.N(c.w)}, c.attrs});
    out.push_back({absl::StrCat(c.note, ", bias [O]"), {m.N(c.x), m.N(c.w), m.N({o})}, c.attrs});
    out.push_back({absl::StrCat(c.note, ", bias [1,O,1,1]"),
                   {m.N(c.x), m.N(c.w), m.N({1, o, 1, 1})},
                   c.attrs});
  }
  return out;
}

Shape ConvOutput(const ConvShape& c, DType dtype) {
  return Inferred(OpKind::kConv2d, {{dtype, c.x}, {dtype, c.w}}, c.attrs);
}

std::vector<OpCase> ConvBackwardDataCases(Make& m) {
  std::vector<OpCase> out;
  for (const ConvShape& c : Convolutions()) {
    Attrs a = c.attrs;
    a.Set("input_shape", c.x);
    out.push_back({c.note, {m.N(ConvOutput(c, m.dtype())), m.N(c.w)}, a});
  }
  return out;
}

std::vector<OpCase> ConvBackwardWeightCases(Make& m) {
  std::vector<OpCase> out;
  for (const ConvShape& c : Convolutions()) {
    Attrs a = c.attrs;
    a.Set("weight_shape", c.w);
    out.push_back({c.note, {m.N(ConvOutput(c, m.dtype())), m.N(c.x)}, a});
  }
  return out;
}

Attrs PoolAttrs(Ints kernel, Ints stride, Ints padding) {
  return {{"kernel", kernel}, {"stride", stride}, {"padding", padding}};
}

// (input shape, window): shared by the pools and their backward ops.
std::vector<std::pair<Shape, Attrs>> Pools() {
  return {
      {{2, 3, 7, 9}, PoolAttrs({2, 2}, {2, 2}, {0, 0})},
      {{2, 3, 7, 9}, PoolAttrs({3, 3}, {2, 2}, {1, 1})},
      {{1, 2, 5, 5}, PoolAttrs({3, 3}, {1, 1}, {0, 0})},
      {{2, 3, 4, 6}, PoolAttrs({2, 3}, {1, 2}, {1, 1})},
      {{0, 3, 4, 4}, PoolAttrs({2, 2}, {2, 2}, {0, 0})},
  };
}

Shape PoolOutput(OpKind pool, const Shape& x, const Attrs& attrs, DType dtype) {
  return Inferred(pool, {{dtype, x}}, attrs);
}

std::vector<OpCase> PoolCases(Make& m) {
  std::vector<OpCase> out;
  for (auto& [x, attrs] : Pools()) out.push_back({attrs.ToString(), {m.N(x)}, attrs});
  out.push_back({"ties", {m.Ties({2, 3, 7, 9})}, PoolAttrs({2, 2}, {2, 2}, {0, 0})});
  return out;
}

std::vector<OpCase> MaxPoolBackwardCases(Make& m) {
  std::vector<OpCase> out;
  for (auto& [x, attrs] : Pools()) {
    const Shape y = PoolOutput(OpKind::kMaxPool2d, x, attrs, m.dtype());
    out.push_back({attrs.ToString(), {m.N(y), m.N(x)}, attrs});
  }
  const Attrs overlapping = PoolAttrs({3, 3}, {2, 2}, {1, 1});
  const Shape x = {2, 3, 7, 9};
  out.push_back({"ties, overlapping windows",
                 {m.N(PoolOutput(OpKind::kMaxPool2d, x, overlapping, m.dtype())), m.Ties(x)},
                 overlapping});
  return out;
}

std::vector<OpCase> AvgPoolBackwardCases(Make& m) {
  std::vector<OpCase> out;
  for (auto& [x, attrs] : Pools()) {
    Attrs a = attrs;
    a.Set("input_shape", x);
    out.push_back(
        {attrs.ToString(), {m.N(PoolOutput(OpKind::kAvgPool2d, x, attrs, m.dtype()))}, a});
  }
  return out;
}

const Attrs kEps = {{"eps", 1e-5}};

// Batch norm inputs (N, C, ...): C is dim 1.
const std::vector<std::pair<const char*, Shape>> kBatchNormShapes = {
    {"2-d", {4, 3}},
    {"3-d", {2, 3, 5}},
    {"4-d", {2, 3, 5, 7}},
    {"one value per channel", {1, 3, 1, 1}},
    {"empty batch", {0, 3, 2, 2}},
};

std::vector<OpCase> BatchNormCases(Make& m) {
  std::vector<OpCase> out;
  for (const auto& [note, x] : kBatchNormShapes) {
    const Shape c = {x[1]};
    out.push_back({note, {m.N(x), m.N(c), m.N(c)}, kEps});
  }
  return out;
}

std::vector<OpCase> BatchNormInferenceCases(Make& m) {
  std::vector<OpCase> out;
  for (const auto& [note, x] : kBatchNormShapes) {
    const Shape c = {x[1]};
    out.push_back({note, {m.N(x), m.N(c), m.N(c), m.N(c), m.Pos(c)}, kEps});
  }
  return out;
}

std::vector<OpCase> BatchNormBackwardCases(Make& m) {
  std::vector<OpCase> out;
  for (const auto& [note, x] : kBatchNormShapes) {
    const Shape c = {x[1]};
    out.push_back({note, {m.N(x), m.N(x), m.N(c), m.N(c), m.Pos(c)}, kEps});
  }
  return out;
}

// (input shape, axis): normalised over dims [axis, rank).
const std::vector<std::pair<Shape, int64_t>> kLayerNorms = {
    {{3, 5}, 1}, {{2, 3, 5}, 1}, {{2, 3, 5}, -1}, {{2, 3, 5, 7}, 2}, {{3, 5}, 0}, {{0, 5}, 1},
};

Attrs LayerNormAttrs(int64_t axis) { return {{"axis", axis}, {"eps", 1e-5}}; }

std::vector<OpCase> LayerNormCases(Make& m) {
  std::vector<OpCase> out;
  for (const auto& [x, axis] : kLayerNorms) {
    const int64_t a = axis < 0 ? axis + static_cast<int64_t>(x.size()) : axis;
    const Shape normalized(x.begin() + a, x.end());
    out.push_back({absl::StrCat("axis ", axis),
                   {m.N(x), m.N(normalized), m.N(normalized)},
                   LayerNormAttrs(axis)});
  }
  return out;
}

std::vector<OpCase> LayerNormBackwardCases(Make& m) {
  std::vector<OpCase> out;
  for (const auto& [x, axis] : kLayerNorms) {
    const int64_t a = axis < 0 ? axis + static_cast<int64_t>(x.size()) : axis;
    const Shape normalized(x.begin() + a, x.end()), stats(x.begin(), x.begin() + a);
    out.push_back({absl::StrCat("axis ", axis),
                   {m.N(x), m.N(x), m.N(normalized), m.N(stats), m.Pos(stats)},
                   LayerNormAttrs(axis)});
  }
  return out;
}

std::vector<OpCase> EmbeddingCases(Make& m) {
  return {
      {"1-d indices", {m.N({7, 5}), m.Index({3}, 7)}},
      {"2-d indices", {m.N({7, 5}), m.Index({2, 3}, 7)}},
      {"repeated rows", {m.N({7, 5}), m.Index({4, 6}, 2)}},
      {"scalar index", {m.N({7, 5}), m.Index({}, 7)}},
      {"no indices", {m.N({7, 5}), m.Index({0}, 7)}},
  };
}

std::vector<OpCase> EmbeddingBackwardCases(Make& m) {
  auto num = [](int64_t n) { return Attrs{{"num_weights", n}}; };
  return {
      {"1-d indices", {m.N({3, 4}), m.Index({3}, 7)}, num(7)},
      {"repeated indices", {m.N({2, 5, 4}), m.Index({2, 5}, 3)}, num(6)},
      {"scalar index", {m.N({4}), m.Index({}, 7)}, num(7)},
      {"no indices", {m.N({0, 4}), m.Index({0}, 3)}, num(3)},
  };
}

std::vector<OpCase> DropoutCases(Make& m) {
  auto i64 = [](int64_t v) { return from_vector<int64_t>({v}, {}); };
  auto p = [](double p) { return Attrs{{"p", p}}; };
  return {
      {"2-d", {m.N({3, 5}), i64(7), i64(0)}, p(0.5)},
      {"4-d at an offset", {m.N({2, 3, 5, 7}), i64(1), i64(1000)}, p(0.1)},
      {"several blocks", {m.N({17, 33}), i64(3), i64(5)}, p(0.25)},
      {"p 0", {m.N({3, 5}), i64(7), i64(0)}, p(0)},
      {"scalar", {m.N({}), i64(2), i64(9)}, p(0.5)},
      {"empty dim", {m.N({0, 5}), i64(7), i64(0)}, p(0.5)},
  };
}

// Collectives over the "self" group, this process alone: a start packs its
// operands times the weight; a wait returns its bucket.
std::vector<OpCase> AllReduceStartCases(Make& m) {
  const Attrs self{{"group", std::string("self")}};
  const Tensor weight = scalar(0.75, DType::kF64);
  return {
      {"one tensor", {m.N({3, 5}), weight}, self},
      {"three, one of them empty", {m.N({2, 3, 4}), m.N({0, 5}), m.N({7}), weight}, self},
      {"weight 1", {m.N({4, 4}), scalar(1.0, DType::kF64)}, self},
  };
}

std::vector<OpCase> AllReduceWaitCases(Make& m) {
  const Attrs self{{"group", std::string("self")}};
  return {{"a bucket", {m.N({17})}, self}, {"an empty bucket", {m.N({0})}, self}};
}

// Bodies of `fused` regions: elementwise graphs over the node's inputs.
std::vector<OpCase> FusedCases(Make& m) {
  using Body = std::function<std::vector<Value*>(Graph&, const std::vector<Value*>&)>;
  auto region = [](const char* note, std::vector<Tensor> inputs, const Body& build) {
    Graph body;
    std::vector<Value*> in;
    for (const Tensor& t : inputs) in.push_back(body.AddPlaceholder("x", t.type()));
    body.SetOutputs(build(body, in)).IgnoreError();
    return OpCase{note, std::move(inputs), {}, std::make_shared<const Graph>(std::move(body))};
  };
  auto op = [](Graph& g, OpKind kind, std::vector<Value*> in, Attrs attrs = {}) {
    return g.AddNode(kind, in, std::move(attrs)).value()[0];
  };
  const DType other = m.dtype() == DType::kF32 ? DType::kF64 : DType::kF32;
  using K = OpKind;
  return {
      region("add, relu", {m.N({3, 5}), m.N({3, 5})},
             [&](Graph& g, const std::vector<Value*>& x) -> std::vector<Value*> {
               return {op(g, K::kRelu, {op(g, K::kAdd, {x[0], x[1]})})};
             }),
      region("broadcast, two results", {m.N({2, 3, 5}), m.N({5})},
             [&](Graph& g, const std::vector<Value*>& x) -> std::vector<Value*> {
               Value* h = op(g, K::kMul, {x[0], x[1]});
               return {h, op(g, K::kTanh, {h})};
             }),
      region("compare and select", {m.N({3, 5}), m.N({1, 5})},
             [&](Graph& g, const std::vector<Value*>& x) -> std::vector<Value*> {
               Value* c = op(g, K::kGt, {x[0], x[1]});
               return {op(g, K::kWhere, {c, x[0], x[1]}), c};
             }),
      region("cast round trip", {m.N({17, 33})},
             [&](Graph& g, const std::vector<Value*>& x) -> std::vector<Value*> {
               Value* e = op(g, K::kExp, {op(g, K::kCast, {x[0]}, {{"dtype", other}})});
               Value* back = op(g, K::kCast, {e}, {{"dtype", m.dtype()}});
               return {op(g, K::kAdd, {back, x[0]})};
             }),
      region("4-d with a channel bias", {m.N({2, 3, 5, 7}), m.N({1, 3, 1, 1})},
             [&](Graph& g, const std::vector<Value*>& x) -> std::vector<Value*> {
               return {op(g, K::kSigmoid, {op(g, K::kAdd, {x[0], x[1]})})};
             }),
      region("scalar", {m.N({})},
             [&](Graph& g, const std::vector<Value*>& x) -> std::vector<Value*> {
               return {op(g, K::kMul, {op(g, K::kNeg, {x[0]}), x[0]})};
             }),
      region("empty dim", {m.N({0, 5}), m.N({5})},
             [&](Graph& g, const std::vector<Value*>& x) -> std::vector<Value*> {
               return {op(g, K::kSqrt, {op(g, K::kAbs, {op(g, K::kAdd, {x[0], x[1]})})})};
             }),
      region("parallel", {m.N({300, 257}), m.N({300, 257})},
             [&](Graph& g, const std::vector<Value*>& x) -> std::vector<Value*> {
               Value* p = op(g, K::kMul, {x[0], x[1]});
               return {op(g, K::kGelu, {p}, {{"approximate", std::string("none")}})};
             }),
  };
}

// ---------------------------------------------------------------------------
// The table: every op's dtypes and cases.

Attrs AttentionAttrs(bool causal) { return {{"causal", causal}, {"scale", 0.4}}; }

// (note, q, k, v, mask shape or none, causal)
struct AttentionShapes {
  const char* note;
  Shape q, k, v, mask;
  bool causal;
};
const std::vector<AttentionShapes> kAttention = {
    {"plain", {2, 5, 3}, {2, 7, 3}, {2, 7, 4}, {}, false},
    {"heads, causal", {2, 2, 6, 3}, {2, 2, 6, 3}, {2, 2, 6, 3}, {}, true},
    {"float mask", {2, 5, 3}, {2, 7, 3}, {2, 7, 4}, {5, 7}, false},
    {"bool mask, causal", {1, 2, 6, 3}, {1, 2, 6, 3}, {1, 2, 6, 3}, {2, 1, 6}, true},
};

std::vector<Tensor> AttentionOperands(Make& m, const AttentionShapes& a) {
  std::vector<Tensor> in = {m.N(a.q), m.N(a.k), m.N(a.v)};
  if (!a.mask.empty()) in.push_back(a.causal ? m.Bool(a.mask) : m.N(a.mask));
  return in;
}

std::vector<OpCase> CheckClassIndexCases(Make& m) {
  const Attrs attrs = {{"classes", int64_t{7}}, {"ignore_index", int64_t{-100}}};
  return {{"[5]", {m.Index({5}, 7)}, attrs},
          {"[2,3], an ignored one", {from_vector<int64_t>({1, -100, 6, 0, 3, 2}, {2, 3})}, attrs}};
}

std::vector<OpCase> SdpaCases(Make& m) {
  std::vector<OpCase> out;
  for (const AttentionShapes& a : kAttention) {
    out.push_back({a.note, AttentionOperands(m, a), AttentionAttrs(a.causal)});
  }
  return out;
}

// The forward's own out and lse, so that the probabilities are a softmax's.
std::vector<OpCase> SdpaBackwardCases(Make& m) {
  std::vector<OpCase> out;
  for (const AttentionShapes& a : kAttention) {
    std::vector<Tensor> in = AttentionOperands(m, a);
    const Tensor mask = in.size() == 4 ? in[3] : Tensor();
    const AttentionResult r = sdpa(in[0], in[1], in[2], mask, a.causal, 0.4);
    std::vector<Tensor> operands = {m.N(r.out.shape()), in[0], in[1], in[2], r.out, r.lse};
    if (mask.defined()) operands.push_back(mask);
    out.push_back({a.note, operands, AttentionAttrs(a.causal)});
  }
  return out;
}

struct OpEntry {
  std::vector<DType> dtypes;
  CaseFn cases;
  // Paths some lowered graph of the op's must take (tests/codegen/
  // lowered_paths.h, '*' matching anything): the fusing compiler's special
  // paths this test means to take. Elementwise ops are also checked to run
  // in a fused region with others.
  std::vector<std::string> paths = {};
};

const std::map<OpKind, OpEntry>& Table() {
  static const auto* table = [] {
    const std::vector<DType> floats = {DType::kF32, DType::kF64};
    auto* t = new std::map<OpKind, OpEntry>;
    auto set = [&](std::initializer_list<OpKind> ops, std::vector<DType> dtypes, CaseFn fn) {
      for (OpKind op : ops) (*t)[op] = {dtypes, fn};
    };
    using K = OpKind;
    set({K::kAdd, K::kSub, K::kMul, K::kDiv, K::kMaximum, K::kMinimum}, floats, BinaryCases);
    set({K::kEq, K::kNe, K::kLt, K::kLe, K::kGt, K::kGe}, {DType::kF32, DType::kF64, DType::kI64},
        BinaryCases);
    set({K::kWhere}, floats, WhereCases);
    set({K::kNeg, K::kExp, K::kAbs, K::kSign, K::kRelu, K::kSigmoid, K::kTanh, K::kErf,
         K::kStopGradient},
        floats, UnaryCases(Domain::kAny));
    set({K::kLog, K::kLog1p, K::kSqrt, K::kRsqrt}, floats, UnaryCases(Domain::kPositive));
    set({K::kGelu}, floats, Cross(UnaryCases(Domain::kAny), kGeluForms));
    set({K::kGeluBackward}, floats, Cross(GeluBackwardCases, kGeluForms));
    set({K::kPow}, floats, PowCases);
    set({K::kCast}, {DType::kF32, DType::kF64, DType::kI64, DType::kBool}, CastCases);
    set({K::kFull}, {DType::kF32, DType::kF64, DType::kI64, DType::kBool}, FullCases);
    set({K::kArange}, {DType::kF32, DType::kF64, DType::kI64}, ArangeCases);
    set({K::kSizeScalar}, {DType::kF32, DType::kF64, DType::kI64}, SizeScalarCases);
    set({K::kSum, K::kMean, K::kMax, K::kMin}, floats, ReduceCases);
    set({K::kVar}, floats,
        Cross(ReduceCases, {{{"correction", int64_t{0}}}, {{"correction", int64_t{1}}}}));
    set({K::kArgmax}, floats, ArgmaxCases);
    set({K::kSoftmax, K::kLogSoftmax}, floats, SoftmaxCases);
    set({K::kMatmul}, floats, MatmulCases);
    set({K::kLinear}, floats, LinearCases);
    set({K::kPermute}, floats, PermuteCases);
    set({K::kReshape}, floats, ReshapeCases);
    set({K::kExpand}, floats, ExpandCases);
    set({K::kSlice}, floats, SliceCases);
    set({K::kSliceBackward}, floats, SliceBackwardCases);
    set({K::kConcat}, floats, ConcatCases);
    set({K::kPad}, floats, PadCases);
    set({K::kConv2d}, floats, ConvCases);
    set({K::kConv2dBackwardData}, floats, ConvBackwardDataCases);
    set({K::kConv2dBackwardWeight}, floats, ConvBackwardWeightCases);
    set({K::kMaxPool2d, K::kAvgPool2d}, floats, PoolCases);
    set({K::kMaxPool2dBackward}, floats, MaxPoolBackwardCases);
    set({K::kAvgPool2dBackward}, floats, AvgPoolBackwardCases);
    set({K::kBatchNorm}, floats, BatchNormCases);
    set({K::kBatchNormInference}, floats, BatchNormInferenceCases);
    set({K::kBatchNormBackward}, floats, BatchNormBackwardCases);
    set({K::kLayerNorm}, floats, LayerNormCases);
    set({K::kLayerNormBackward}, floats, LayerNormBackwardCases);
    set({K::kEmbedding}, floats, EmbeddingCases);
    set({K::kEmbeddingBackward}, floats, EmbeddingBackwardCases);
    set({K::kDropout}, floats, DropoutCases);
    set({K::kSdpa}, floats, SdpaCases);
    set({K::kCheckClassIndex}, {DType::kI64}, CheckClassIndexCases);
    set({K::kSdpaBackward}, floats, SdpaBackwardCases);
    set({K::kFused}, floats, FusedCases);
    set({K::kAllReduceStart}, floats, AllReduceStartCases);
    set({K::kAllReduceWait}, floats, AllReduceWaitCases);
    auto expect = [&](OpKind op, std::vector<std::string> paths) { (*t)[op].paths = paths; };
    expect(K::kMatmul, {"matmul+relu*", "matmul+add*", "matmul+gelu+add*"});
    expect(K::kLinear, {"linear+relu*", "linear+add*", "linear+gelu+add*"});
    expect(K::kConv2d, {"conv2d+bias*", "conv2d:nhwc"});
    expect(K::kBatchNorm, {"batch_norm+relu*", "batch_norm:nhwc"});
    expect(K::kBatchNormInference, {"batch_norm_inference+relu*", "batch_norm_inference:nhwc"});
    for (OpKind op : {K::kConv2dBackwardData, K::kMaxPool2d, K::kMaxPool2dBackward, K::kAvgPool2d,
                      K::kAvgPool2dBackward, K::kBatchNormBackward}) {
      expect(op, {absl::StrCat(OpName(op), ":nhwc")});
    }
    expect(K::kSum, {"fused{* sum*"});  // a sum in a fused pass
    return t;
  }();
  return *table;
}

// ---------------------------------------------------------------------------
// Graphs: the op alone, fed by an elementwise op, and read by a chain.

// A graph under construction and the argument of each placeholder; the first
// failed AddNode is kept in `status` (later nodes then fail too).
struct GraphBuilder {
  Graph graph;
  std::vector<Tensor> args;
  absl::Status status;

  Value* Arg(const Tensor& value) {
    args.push_back(value);
    return graph.AddPlaceholder("a", value.type());
  }
  std::vector<Value*> AddAll(OpKind op, std::vector<Value*> inputs, const Attrs& attrs = {}) {
    absl::StatusOr<std::vector<Value*>> r = graph.AddNode(op, inputs, attrs);
    if (!r.ok()) {
      if (status.ok()) status = r.status();
      return {nullptr};
    }
    return *std::move(r);
  }
  std::vector<Value*> AddRegion(OpKind op, std::vector<Value*> inputs, const Graph& body) {
    absl::StatusOr<std::vector<Value*>> r = graph.AddRegionNode(op, inputs, body.Clone());
    if (!r.ok()) {
      if (status.ok()) status = r.status();
      return {nullptr};
    }
    return *std::move(r);
  }
  Value* Add(OpKind op, std::vector<Value*> inputs, const Attrs& attrs = {}) {
    return AddAll(op, std::move(inputs), attrs)[0];
  }
};

// What reads the op's first result y: the values the graph returns, or none
// when the chain does not apply to y's type. `m` makes the chain's other
// operands.
struct Chain {
  const char* name;
  std::function<std::vector<Value*>(GraphBuilder&, Value* y, Make& m)> build;
};

const std::vector<Chain>& Chains() {
  static const auto* chains = [] {
    using K = OpKind;
    auto floating = [](Value* y) { return IsFloating(y->type().dtype); };
    auto numeric = [](Value* y) { return y->type().dtype != DType::kBool; };
    auto operand = [](GraphBuilder& b, Value* y, Make& m) {
      return b.Arg(m.Of(y->type().dtype, y->type().shape));
    };
    return new std::vector<Chain>{
        {"relu",
         [=](GraphBuilder& b, Value* y, Make&) -> std::vector<Value*> {
           if (!numeric(y)) return {};
           return {b.Add(K::kRelu, {y})};
         }},
        {"add",
         [=](GraphBuilder& b, Value* y, Make& m) -> std::vector<Value*> {
           if (!numeric(y)) return {};
           return {b.Add(K::kAdd, {y, operand(b, y, m)})};
         }},
        {"add a channel bias [1,C,1,..]",
         [=](GraphBuilder& b, Value* y, Make& m) -> std::vector<Value*> {
           const TensorType& t = y->type();
           if (!numeric(y) || t.rank() < 2) return {};
           Shape bias(t.rank(), 1);
           bias[1] = t.shape[1];
           return {b.Add(K::kAdd, {y, b.Arg(m.Of(t.dtype, bias))})};
         }},
        {"gelu (tanh), then add",
         [=](GraphBuilder& b, Value* y, Make& m) -> std::vector<Value*> {
           if (!floating(y)) return {};
           Value* g = b.Add(K::kGelu, {y}, {{"approximate", std::string("tanh")}});
           return {b.Add(K::kAdd, {g, operand(b, y, m)})};
         }},
        {"relu, summed over dim 0",
         [=](GraphBuilder& b, Value* y, Make&) -> std::vector<Value*> {
           if (!floating(y) || y->type().rank() < 1) return {};
           return {b.Add(K::kSum, {b.Add(K::kRelu, {y})}, Reduce({0}, false))};
         }},
        {"relu, flattened to [d0, rest] and summed over dim 0",
         [=](GraphBuilder& b, Value* y, Make&) -> std::vector<Value*> {
           const TensorType& t = y->type();
           if (!floating(y) || t.rank() < 3) return {};
           const Ints flat = {t.shape[0], t.numel() / std::max<int64_t>(t.shape[0], 1)};
           if (t.shape[0] == 0) return {};
           Value* r = b.Add(K::kReshape, {b.Add(K::kRelu, {y})}, {{"shape", flat}});
           return {b.Add(K::kSum, {r}, Reduce({0}, false))};
         }},
        {"mul, returned and summed over all dims",
         [=](GraphBuilder& b, Value* y, Make& m) -> std::vector<Value*> {
           if (!floating(y)) return {};
           Value* z = b.Add(K::kMul, {y, operand(b, y, m)});
           return {z, b.Add(K::kSum, {z}, Reduce({}, false))};
         }},
        {"where",
         [=](GraphBuilder& b, Value* y, Make& m) -> std::vector<Value*> {
           if (numeric(y)) return {};
           Value* p = b.Arg(m.Of(DType::kF32, y->type().shape));
           return {b.Add(K::kWhere, {y, p, b.Arg(m.Of(DType::kF32, {}))})};
         }},
        {"cast to f32, then add",
         [=](GraphBuilder& b, Value* y, Make& m) -> std::vector<Value*> {
           if (floating(y)) return {};
           Value* f = b.Add(K::kCast, {y}, {{"dtype", DType::kF32}});
           return {b.Add(K::kAdd, {f, b.Arg(m.Of(DType::kF32, y->type().shape))})};
         }},
    };
  }();
  return *chains;
}

// What the op's operands are.
enum class Feed {
  kArguments,
  // Each float operand is mul(arg, 1.25), each bool one ne(arg, false): the op
  // reads a fused step's result. i64 operands stay arguments.
  kMul,
  // Each 4-d float operand is a 1x1 convolution of its argument with identity
  // weights: the op reads a channels-last activation (codegen/layout_plan.h).
  kConv,
};

// How a case's graph is built around the op's node.
struct Variant {
  Feed feed = Feed::kArguments;
  // What reads the op's first result; nullptr: the graph returns all results.
  // With a chain, the graph returns the chain's values and the other results.
  const Chain* chain = nullptr;
  bool first_chain = false;  // instead of `chain`, the first one that applies
  // Results after the first go through relu (bool ones through ne(r, false))
  // before the chain reads the first: batch norm's statistics read between
  // the op and its post-ops.
  bool others_first = false;
};

std::vector<Variant> Variants() {
  std::vector<Variant> out = {{Feed::kArguments}, {Feed::kMul}, {Feed::kConv}};
  for (const Chain& c : Chains()) out.push_back({Feed::kArguments, &c});
  out.push_back({Feed::kArguments, nullptr, true, /*others_first=*/true});
  out.push_back({Feed::kMul, nullptr, true});
  out.push_back({Feed::kConv, nullptr, true});
  return out;
}

struct Built {
  GraphBuilder b;
  bool applies = true;  // false: the variant has nothing to do for this case
  std::string name;
};

// ne(v, false): a bool value read through a fused step.
Value* NotFalse(GraphBuilder& b, Value* v) {
  return b.Add(OpKind::kNe, {v, b.Arg(full({}, 0, DType::kBool))});
}

// The operand reading `arg` under `feed`, or nullptr to read `arg` itself.
Value* FedOperand(GraphBuilder& b, Value* arg, Feed feed) {
  const TensorType& t = arg->type();
  if (feed == Feed::kMul && IsFloating(t.dtype)) {
    return b.Add(OpKind::kMul, {arg, b.Arg(scalar(1.25, t.dtype))});
  }
  if (feed == Feed::kMul && t.dtype == DType::kBool) return NotFalse(b, arg);
  if (feed == Feed::kConv && IsFloating(t.dtype) && t.rank() == 4) {
    const int64_t c = t.shape[1];
    std::vector<double> eye(c * c, 0.0);
    for (int64_t i = 0; i < c; ++i) eye[i * c + i] = 1;
    const Tensor w = from_vector<double>(eye, {c, c, 1, 1}).to(t.dtype);
    return b.Add(OpKind::kConv2d, {arg, b.Arg(w)}, ConvAttrs({1, 1}, {0, 0}, {1, 1}, 1));
  }
  return nullptr;
}

std::string VariantName(const Variant& v, const Chain* chain) {
  std::vector<std::string> parts;
  if (v.feed == Feed::kMul) parts.push_back("fed by mul");
  if (v.feed == Feed::kConv) parts.push_back("fed by a 1x1 conv2d");
  if (v.others_first) parts.push_back("other results read first");
  if (chain != nullptr) parts.push_back(absl::StrCat("then ", chain->name));
  return parts.empty() ? "alone" : absl::StrJoin(parts, ", ");
}

Built BuildGraph(OpKind op, const OpCase& c, const Variant& v) {
  Built out;
  GraphBuilder& b = out.b;
  std::vector<Value*> inputs;
  bool fed_any = false;
  for (const Tensor& t : c.inputs) {
    Value* arg = b.Arg(t);
    Value* fed = FedOperand(b, arg, v.feed);
    fed_any = fed_any || fed != nullptr;
    inputs.push_back(fed != nullptr ? fed : arg);
  }
  out.applies = v.feed == Feed::kArguments || fed_any;
  const std::vector<Value*> results =
      c.body != nullptr ? b.AddRegion(op, inputs, *c.body) : b.AddAll(op, inputs, c.attrs);
  out.name = VariantName(v, v.chain);
  if (!b.status.ok()) return out;

  std::vector<Value*> others(results.begin() + 1, results.end());
  if (v.others_first) {
    out.applies = out.applies && !others.empty();
    for (Value*& r : others) {
      r = r->type().dtype == DType::kBool ? NotFalse(b, r) : b.Add(OpKind::kRelu, {r});
    }
  }
  std::vector<Value*> outputs = results;
  if (v.chain != nullptr || v.first_chain) {
    Make m(results[0]->type().dtype, /*seed=*/99);
    const Chain* chain = nullptr;
    for (const Chain& ch : Chains()) {
      if (!v.first_chain && &ch != v.chain) continue;
      outputs = ch.build(b, results[0], m);
      if (!outputs.empty()) {
        chain = &ch;
        break;
      }
    }
    out.applies = out.applies && chain != nullptr;
    out.name = VariantName(v, chain);
    outputs.insert(outputs.end(), others.begin(), others.end());
  }
  if (b.status.ok()) b.status = b.graph.SetOutputs(outputs);
  return out;
}

// ---------------------------------------------------------------------------
// Running and comparing.

// Every node of `graph` run with tc::Call, in order (a region's body node by
// node): the eager reference.
absl::StatusOr<std::vector<Tensor>> RunEagerly(const Graph& graph,
                                               const std::vector<Tensor>& args) {
  std::unordered_map<const Value*, Tensor> value;
  for (size_t i = 0; i < args.size(); ++i) value[graph.placeholders()[i]] = args[i];
  for (const Node* node : graph.nodes()) {
    std::vector<Tensor> in;
    for (const Value* v : node->inputs()) in.push_back(value.at(v));
    absl::StatusOr<TensorList> out = node->body() != nullptr ? RunEagerly(*node->body(), in)
                                                             : Call(node->op(), in, node->attrs());
    if (!out.ok()) return out.status();
    for (int r = 0; r < node->num_results(); ++r) value[node->result(r)] = (*out)[r];
  }
  std::vector<Tensor> outputs;
  for (const Value* v : graph.outputs()) outputs.push_back(value.at(v));
  return outputs;
}

// Relative and absolute tolerance of a compiler's f32 and f64 outputs
// (bool and i64 outputs are always exact).
struct Tolerance {
  double f32 = 0, f64 = 0;
  double For(DType dtype) const {
    return dtype == DType::kF32 ? f32 : dtype == DType::kF64 ? f64 : 0;
  }
};

// CHECKs that `compiler` compiles the graph and that two runs give
// `expected`; false on any failure.
bool CheckCompiler(const char* name, const codegen::Compiler& compiler, const Built& built,
                   const std::vector<Tensor>& expected, Tolerance tol) {
  INFO("compiler " << name);
  absl::StatusOr<codegen::Executable> exe = compiler(built.b.graph);
  INFO("compile: " << exe.status());
  CHECK(exe.ok());
  if (!exe.ok()) return false;
  bool ok = true;
  std::vector<std::vector<Tensor>> runs;  // the first run's outputs stay held
  for (int run = 1; run <= 2 && ok; ++run) {
    INFO("run " << run);
    absl::StatusOr<std::vector<Tensor>> got = (*exe)(built.b.args);
    INFO("run: " << got.status());
    CHECK(got.ok());
    if (!got.ok()) return false;
    CHECK(got->size() == expected.size());
    if (got->size() != expected.size()) return false;
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO("output " << i << " %" << built.b.graph.outputs()[i]->name());
      const Tensor& e = expected[i];
      const Tensor& a = (*got)[i];
      const double t = tol.For(e.dtype());
      const std::string mismatch =
          a.type() == e.type()
              ? testing::CompareTensors(a, e, t, t)
              : absl::StrCat("got ", a.type().ToString(), ", eager gives ", e.type().ToString());
      CHECK(mismatch == "");
      ok = ok && mismatch.empty();
    }
    runs.push_back(*std::move(got));
  }
  return ok;
}

std::string Types(const std::vector<Tensor>& tensors) {
  return absl::StrJoin(tensors, ", ",
                       [](std::string* out, const Tensor& t) { out->append(t.type().ToString()); });
}

// Whether some lowered graph runs `op` in a loop region with another op.
bool SomeRegionFusesWithOthers(const std::vector<std::string>& paths, absl::string_view op) {
  for (absl::string_view path : paths) {
    if (!absl::ConsumePrefix(&path, "fused{")) continue;
    const std::vector<absl::string_view> ops = absl::StrSplit(path.substr(0, path.find('}')), ' ');
    if (ops.size() > 1 && std::find(ops.begin(), ops.end(), op) != ops.end()) return true;
  }
  return false;
}

// What one op's cases did.
struct OpTally {
  int cases = 0;   // cases run (their graph alone built)
  int graphs = 0;  // graphs compiled and compared
  int failed_graphs = 0;
  std::vector<std::string> rejected;  // cases shape inference rejected, with why
  std::vector<std::string> paths;     // of every lowered graph (tests/codegen/lowered_paths.h)
};

// Runs one case in every variant through eager, interpreter() and fusing().
void RunCase(OpKind op, DType dtype, const OpCase& c, OpTally& tally) {
  INFO("case \"" << c.note << "\", " << DTypeName(dtype) << ", inputs (" << Types(c.inputs)
                 << ") attrs " << c.attrs.ToString());
  for (const Variant& v : Variants()) {  // "alone" first
    const Built built = BuildGraph(op, c, v);
    const bool alone = v.feed == Feed::kArguments && v.chain == nullptr && !v.first_chain;
    if (!built.applies) continue;
    if (alone && !built.b.status.ok()) {
      tally.rejected.push_back(
          absl::StrCat(DTypeName(dtype), " \"", c.note, "\": ", built.b.status.message()));
      return;  // rejected by shape inference: no variant builds
    }
    INFO("graph " << built.name << ":\n" << ToString(built.b.graph));
    // The op's own node built alone, so the chains around it must build too.
    INFO("building: " << built.b.status);
    CHECK(built.b.status.ok());
    if (!built.b.status.ok()) continue;
    if (alone) ++tally.cases;
    ++tally.graphs;
    absl::StatusOr<std::vector<Tensor>> expected = RunEagerly(built.b.graph, built.b.args);
    INFO("eager: " << expected.status());
    CHECK(expected.ok());
    if (!expected.ok()) {
      ++tally.failed_graphs;
      continue;
    }
    bool ok = CheckCompiler("interpreter", codegen::interpreter(), built, *expected, {0, 0});
    // Random ops draw from their attributes: a compiled op alone is eager's, exactly.
    const bool random_alone = alone && GetOpDef(op).Has(kTraitRandom);
    const Tolerance fusing_tol = random_alone ? Tolerance{0, 0} : Tolerance{1e-5, 1e-12};
    ok = CheckCompiler("fusing", codegen::fusing(), built, *expected, fusing_tol) && ok;
    if (!ok) ++tally.failed_graphs;
    // What fusing() made of the graph, for the op's path checks.
    absl::StatusOr<std::shared_ptr<codegen::Program>> program =
        codegen::Program::Compile(built.b.graph);
    if (program.ok()) {
      const std::vector<std::string> paths = testing::LoweredPaths((*program)->graph());
      tally.paths.insert(tally.paths.end(), paths.begin(), paths.end());
    }
  }
}

TEST_CASE("every op compiled by interpreter() and fusing() equals eager execution") {
  for (OpKind op : AllOps()) {
    DYNAMIC_SECTION(OpName(op)) {
      INFO("op " << OpName(op));
      auto entry = Table().find(op);
      if (entry == Table().end()) {
        FAIL_CHECK("op " << OpName(op) << " has no cases: add them to the table");
        continue;
      }
      OpTally tally;
      for (DType dtype : entry->second.dtypes) {
        Make m(dtype, /*seed=*/static_cast<uint64_t>(op) * 16 + static_cast<uint64_t>(dtype));
        for (const OpCase& c : entry->second.cases(m)) RunCase(op, dtype, c, tally);
      }
      CHECK(tally.cases > 0);
      for (const std::string& path : entry->second.paths) {
        INFO("no lowered graph takes the path " << path);
        CHECK(testing::HasPath(tally.paths, path));
      }
      const OpDef& def = GetOpDef(op);
      // Lowering strips stop_gradient before fusion (strip_stop_gradients).
      if (def.Has(kTraitFusible) && op != OpKind::kStopGradient) {
        INFO("no lowered graph runs the op in a fused region with others");
        CHECK(SomeRegionFusesWithOthers(tally.paths, OpName(op)));
      }
      std::printf("%-24s %3d cases, %3d graphs, %d failed; rejected by shape inference: %s\n",
                  std::string(OpName(op)).c_str(), tally.cases, tally.graphs, tally.failed_graphs,
                  tally.rejected.empty() ? "none" : absl::StrJoin(tally.rejected, "; ").c_str());
    }
  }
}

}  // namespace
}  // namespace tc
