// Mixed precision: the autocast pass as text in, text out; the bf16 casts and
// products it makes, run; and compilers under each precision, against f32.
#include "codegen/autocast.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "codegen/interpreter.h"
#include "graph/parser.h"
#include "runtime/bf16.h"
#include "runtime/dispatch.h"
#include "runtime/kernels/onednn.h"
#include "tests/graph/graphs.h"
#include "tests/test_util.h"

namespace tc::codegen {
namespace {

// The pass on every product, however small (the goldens' are).
std::pair<std::string, bool> Autocast(const std::string& text) {
  return testing::RunOnText(text, {AutocastBf16(/*min_flops=*/0)});
}

TEST_CASE("autocast runs f32 products on bf16 operands, each operand cast once") {
  const auto [text, changed] = Autocast(
      "graph(%x: f32[8,16], %w: f32[32,16], %b: f32[32], %v: f32[32,4]) {\n"
      "  %y: f32[8,32] = linear(%x, %w, %b)  # fc1\n"
      "  %r: f32[8,32] = relu(%y)\n"
      "  %z: f32[8,4] = matmul(%r, %v)\n"
      "  %t: f32[8,4] = matmul(%y, %v)\n"
      "  return (%z, %t)\n}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[8,16], %w: f32[32,16], %b: f32[32], %v: f32[32,4]) {\n"
        "  %x_bf16: bf16[8,16] = cast(%x) {dtype=bf16}  # fc1\n"
        "  %w_bf16: bf16[32,16] = cast(%w) {dtype=bf16}  # fc1\n"
        "  %b_bf16: bf16[32] = cast(%b) {dtype=bf16}  # fc1\n"
        "  %y: f32[8,32] = linear(%x_bf16, %w_bf16, %b_bf16) {out_dtype=f32}  # fc1\n"
        "  %r: f32[8,32] = relu(%y)\n"
        "  %r_bf16: bf16[8,32] = cast(%r) {dtype=bf16}\n"
        "  %v_bf16: bf16[32,4] = cast(%v) {dtype=bf16}\n"
        "  %z: f32[8,4] = matmul(%r_bf16, %v_bf16) {out_dtype=f32}\n"
        "  %y_bf16: bf16[8,32] = cast(%y) {dtype=bf16}\n"
        "  %t: f32[8,4] = matmul(%y_bf16, %v_bf16) {out_dtype=f32}\n"
        "  return (%z, %t)\n}\n");
}

TEST_CASE("a permuted, expanded or reshaped operand is the same view of its value's cast") {
  // %gt goes with its product; %kt is also returned, so it stays. %gr's
  // cast is of %g, already made for %gt; %kr reshapes a permuted value (a
  // copy), so it is cast itself.
  const auto [text, changed] = Autocast(
      "graph(%g: f32[8,32], %x: f32[8,16], %k: f32[2,4,3], %v: f32[1,3,4]) {\n"
      "  %gt: f32[32,8] = permute(%g) {dims=[1,0]}\n"
      "  %dw: f32[32,16] = matmul(%gt, %x)\n"
      "  %kt: f32[2,3,4] = permute(%k) {dims=[0,2,1]}\n"
      "  %ve: f32[2,3,4] = expand(%v) {shape=[2,3,4]}\n"
      "  %s: f32[2,3,3] = matmul(%kt, %k)\n"
      "  %t: f32[2,4,4] = matmul(%k, %ve)\n"
      "  %gr: f32[16,16] = reshape(%g) {shape=[16,16]}\n"
      "  %u: f32[16,16] = matmul(%gr, %gr)\n"
      "  %kr: f32[6,4] = reshape(%kt) {shape=[6,4]}\n"
      "  %krt: f32[4,6] = permute(%kr) {dims=[1,0]}\n"
      "  %w: f32[6,6] = matmul(%kr, %krt)\n"
      "  return (%dw, %s, %t, %kt, %u, %w)\n}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%g: f32[8,32], %x: f32[8,16], %k: f32[2,4,3], %v: f32[1,3,4]) {\n"
        "  %g_bf16: bf16[8,32] = cast(%g) {dtype=bf16}\n"
        "  %gt_bf16: bf16[32,8] = permute(%g_bf16) {dims=[1,0]}\n"
        "  %x_bf16: bf16[8,16] = cast(%x) {dtype=bf16}\n"
        "  %dw: f32[32,16] = matmul(%gt_bf16, %x_bf16) {out_dtype=f32}\n"
        "  %kt: f32[2,3,4] = permute(%k) {dims=[0,2,1]}\n"
        "  %k_bf16: bf16[2,4,3] = cast(%k) {dtype=bf16}\n"
        "  %kt_bf16: bf16[2,3,4] = permute(%k_bf16) {dims=[0,2,1]}\n"
        "  %s: f32[2,3,3] = matmul(%kt_bf16, %k_bf16) {out_dtype=f32}\n"
        "  %v_bf16: bf16[1,3,4] = cast(%v) {dtype=bf16}\n"
        "  %ve_bf16: bf16[2,3,4] = expand(%v_bf16) {shape=[2,3,4]}\n"
        "  %t: f32[2,4,4] = matmul(%k_bf16, %ve_bf16) {out_dtype=f32}\n"
        "  %gr_bf16: bf16[16,16] = reshape(%g_bf16) {shape=[16,16]}\n"
        "  %u: f32[16,16] = matmul(%gr_bf16, %gr_bf16) {out_dtype=f32}\n"
        "  %kr: f32[6,4] = reshape(%kt) {shape=[6,4]}\n"
        "  %kr_bf16: bf16[6,4] = cast(%kr) {dtype=bf16}\n"
        "  %krt_bf16: bf16[4,6] = permute(%kr_bf16) {dims=[1,0]}\n"
        "  %w: f32[6,6] = matmul(%kr_bf16, %krt_bf16) {out_dtype=f32}\n"
        "  return (%dw, %s, %t, %kt, %u, %w)\n}\n");
}

TEST_CASE("autocast casts a convolution's operands and its backward ops' too") {
  const std::string conv = "dilation=[1,1], groups=1, padding=[1,1], stride=[1,1]";
  const auto [text, changed] = Autocast(
      "graph(%x: f32[2,3,5,5], %w: f32[4,3,3,3], %g: f32[2,4,5,5]) {\n"
      "  %y: f32[2,4,5,5] = conv2d(%x, %w) {" +
      conv +
      "}\n"
      "  %dx: f32[2,3,5,5] = conv2d_backward_data(%g, %w) {" +
      conv +
      ", input_shape=[2,3,5,5]}\n"
      "  %dw: f32[4,3,3,3] = conv2d_backward_weight(%g, %x) {" +
      conv +
      ", weight_shape=[4,3,3,3]}\n"
      "  return (%y, %dx, %dw)\n}\n");
  CHECK(changed);
  CHECK(text ==
        "graph(%x: f32[2,3,5,5], %w: f32[4,3,3,3], %g: f32[2,4,5,5]) {\n"
        "  %x_bf16: bf16[2,3,5,5] = cast(%x) {dtype=bf16}\n"
        "  %w_bf16: bf16[4,3,3,3] = cast(%w) {dtype=bf16}\n"
        "  %y: f32[2,4,5,5] = conv2d(%x_bf16, %w_bf16) {dilation=[1,1], groups=1, "
        "out_dtype=f32, padding=[1,1], stride=[1,1]}\n"
        "  %g_bf16: bf16[2,4,5,5] = cast(%g) {dtype=bf16}\n"
        "  %dx: f32[2,3,5,5] = conv2d_backward_data(%g_bf16, %w_bf16) {dilation=[1,1], groups=1, "
        "input_shape=[2,3,5,5], out_dtype=f32, padding=[1,1], stride=[1,1]}\n"
        "  %dw: f32[4,3,3,3] = conv2d_backward_weight(%g_bf16, %x_bf16) {dilation=[1,1], "
        "groups=1, out_dtype=f32, padding=[1,1], stride=[1,1], weight_shape=[4,3,3,3]}\n"
        "  return (%y, %dx, %dw)\n}\n");
}

TEST_CASE("autocast writes attention out, so that its products run bf16") {
  const auto [text, changed] = Autocast(
      "graph(%q: f32[2,5,4], %k: f32[2,6,4], %v: f32[2,6,3], %g: f32[2,5,3]) {\n"
      "  %o: f32[2,5,3], %lse: f32[2,5] = sdpa(%q, %k, %v) {causal=false, scale=0.5}\n"
      "  %dq: f32[2,5,4], %dk: f32[2,6,4], %dv: f32[2,6,3] = sdpa_backward(%g, %q, %k, %v, %o, "
      "%lse) {causal=false, scale=0.5}\n"
      "  return (%o, %dq, %dk, %dv)\n}\n");
  CHECK(changed);
  INFO(text);
  int products = 0;
  for (const char* op : {"sdpa", "matmul("}) {
    for (size_t at = text.find(op); at != std::string::npos; at = text.find(op, at + 1)) {
      CHECK(std::string(op) != "sdpa");
      // every product reads bf16 operands
      CHECK(text.substr(at, text.find('\n', at) - at).find("out_dtype=f32") != std::string::npos);
      ++products;
    }
  }
  CHECK(products == 7);  // two in the forward, five in the backward
}

TEST_CASE("autocast leaves f64 products, mixed ones and every other op") {
  const std::string in =
      "graph(%a: f64[4,4], %x: bf16[4,4], %w: bf16[4,4]) {\n"
      "  %p: f64[4,4] = matmul(%a, %a)\n"
      "  %q: f32[4,4] = matmul(%x, %w) {out_dtype=f32}\n"
      "  %s: f32[4] = sum(%q) {dims=[0], keepdim=false}\n"
      "  return (%p, %s)\n}\n";
  const auto [text, changed] = Autocast(in);
  CHECK(!changed);
  CHECK(text == in);
}

TEST_CASE("products under the FLOP threshold stay f32") {
  // 2 * 8 * 16 * 32 = 8192 FLOPs: under the default, over 8192.
  const std::string in =
      "graph(%x: f32[8,16], %w: f32[16,32]) {\n"
      "  %y: f32[8,32] = matmul(%x, %w)\n"
      "  return (%y)\n}\n";
  CHECK(!testing::RunOnText(in, {AutocastBf16()}).second);
  CHECK(testing::RunOnText(in, {AutocastBf16(8192)}).second);
  CHECK(!testing::RunOnText(in, {AutocastBf16(8193)}).second);
}

TEST_CASE("a product's out_dtype is f32 of bf16 operands, or theirs") {
  const std::string head = "graph(%a: f32[2,2], %h: bf16[2,2]) {\n";
  CHECK(Parse(head + "  %p: f32[2,2] = matmul(%a, %a) {out_dtype=f32}\n  return (%p)\n}\n").ok());
  const absl::StatusOr<Graph> wide =
      Parse(head + "  %p: f64[2,2] = matmul(%a, %a) {out_dtype=f64}\n  return (%p)\n}\n");
  REQUIRE(!wide.ok());
  CHECK_THAT(std::string(wide.status().message()),
             Catch::Contains("matmul: out_dtype f64 of f32 operands: expected theirs, or f32 of "
                             "bf16 operands"));
  const absl::StatusOr<Graph> narrow =
      Parse(head + "  %p: bf16[2,2] = matmul(%h, %h) {out_dtype=bf16}\n  return (%p)\n}\n");
  CHECK(narrow.ok());
}

TEST_CASE("bf16 values run only in casts and products") {
  const Graph g = testing::ParseOk(
      "graph(%x: f32[4]) {\n"
      "  %h: bf16[4] = cast(%x) {dtype=bf16}\n"
      "  %s: bf16[4] = add(%h, %h)  # the sum\n"
      "  return (%s)\n}\n");
  for (const Compiler& compiler : {interpreter(), fusing()}) {
    const absl::StatusOr<Executable> exe = compiler(g);
    REQUIRE(!exe.ok());
    CHECK_THAT(std::string(exe.status().message()),
               Catch::Contains(
                   "add has no bf16 kernel (bf16 runs in cast, permute, expand, reshape, matmul, "
                   "linear and convolutions)"));
  }
}

TEST_CASE("bf16 rounds to nearest even and converts back exactly") {
  CHECK(ToBf16(1.0f) == 0x3f80);
  CHECK(FromBf16(0x3f80) == 1.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
  CHECK(ToBf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: to 1 + 2^-6.
  CHECK(ToBf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(ToBf16(-2.5f) == 0xc020);
  CHECK(std::isnan(FromBf16(ToBf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isinf(FromBf16(ToBf16(std::numeric_limits<float>::infinity()))));
  // Subnormals become zeros of their sign, as AVX512-BF16's conversion makes them.
  CHECK(ToBf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(ToBf16(-std::nextafter(std::numeric_limits<float>::min(), 0.0f)) == 0x8000);
  CHECK(ToBf16(std::numeric_limits<float>::min()) == 0x0080);
}

TEST_CASE("casts to and from bf16 round each element, strided or not") {
  const Tensor x = testing::Random({5, 7}, DType::kF32, 1);
  const Tensor h = cast(testing::NonContiguous(x), DType::kBF16);
  REQUIRE(h.dtype() == DType::kBF16);
  const Tensor back = cast(h, DType::kF32);
  const Tensor x_c = x.contiguous();
  for (int64_t i = 0; i < x.numel(); ++i) {
    CHECK(back.data<float>()[i] == FromBf16(ToBf16(x_c.data<float>()[i])));
  }
  CHECK(cast(h, DType::kF64).dtype() == DType::kF64);
}

// The f32 values `t` holds after a round trip through bf16.
Tensor RoundedToBf16(const Tensor& t) { return cast(cast(t, DType::kBF16), DType::kF32); }

TEST_CASE("a bf16 product accumulates in f32: the f32 product of the rounded operands") {
  const Tensor x = testing::Random({6, 40}, DType::kF32, 2);
  const Tensor w = testing::Random({24, 40}, DType::kF32, 3);
  const Tensor b = testing::Random({24}, DType::kF32, 4);
  const Attrs mixed{{"out_dtype", DType::kF32}};
  const TensorType result{DType::kF32, {6, 24}};
  const absl::StatusOr<TensorList> y = RunKernel(
      OpKind::kLinear, {cast(x, DType::kBF16), cast(w, DType::kBF16), cast(b, DType::kBF16)}, mixed,
      {result});
  if (!kernels::OneDnnRunsBf16()) {
    REQUIRE(!y.ok());
    CHECK_THAT(std::string(y.status().message()),
               Catch::Contains("linear: bf16 operands need a CPU with AVX-512"));
    return;
  }
  REQUIRE(y.ok());
  const Tensor expected = linear(RoundedToBf16(x), RoundedToBf16(w), RoundedToBf16(b));
  CHECK(testing::CompareTensors((*y)[0], expected, 1e-5, 1e-5).empty());
  // A transposed operand is read in place, as in f32.
  const absl::StatusOr<TensorList> p =
      RunKernel(OpKind::kMatmul, {cast(x, DType::kBF16), permute(cast(w, DType::kBF16), {1, 0})},
                mixed, {result});
  REQUIRE(p.ok());
  CHECK(testing::CompareTensors(
            (*p)[0], matmul(RoundedToBf16(x), permute(RoundedToBf16(w), {1, 0})), 1e-5, 1e-5)
            .empty());
}

TEST_CASE("bf16 convolutions accumulate in f32, forward and backward") {
  if (!kernels::OneDnnRunsBf16()) return;  // the error path: the linear case above
  const Tensor x = testing::Random({2, 6, 7, 7}, DType::kF32, 5);
  const Tensor w = testing::Random({4, 3, 3, 3}, DType::kF32, 6);  // two groups
  const Conv2dOptions o{.stride = {1, 2}, .padding = {1, 0}, .groups = 2};
  const Tensor y = conv2d(x, w, o);
  const Tensor g = testing::Random(y.shape(), DType::kF32, 7);
  Attrs mixed{{"stride", std::vector<int64_t>{1, 2}},
              {"padding", std::vector<int64_t>{1, 0}},
              {"dilation", std::vector<int64_t>{1, 1}},
              {"groups", int64_t{2}},
              {"out_dtype", DType::kF32}};
  auto bf16 = [](const Tensor& t) { return cast(t, DType::kBF16); };
  const absl::StatusOr<TensorList> fwd =
      RunKernel(OpKind::kConv2d, {bf16(x), bf16(w)}, mixed, {{DType::kF32, y.shape()}});
  REQUIRE(fwd.ok());
  CHECK(
      testing::CompareTensors((*fwd)[0], conv2d(RoundedToBf16(x), RoundedToBf16(w), o), 1e-5, 1e-5)
          .empty());
  Attrs data = mixed;
  data.Set("input_shape", x.shape());
  const absl::StatusOr<TensorList> dx =
      RunKernel(OpKind::kConv2dBackwardData, {bf16(g), bf16(w)}, data, {{DType::kF32, x.shape()}});
  REQUIRE(dx.ok());
  CHECK(testing::CompareTensors(
            (*dx)[0], conv2d_backward_data(RoundedToBf16(g), RoundedToBf16(w), x.shape(), o), 1e-5,
            1e-5)
            .empty());
  Attrs weight = mixed;
  weight.Set("weight_shape", w.shape());
  const absl::StatusOr<TensorList> dw = RunKernel(OpKind::kConv2dBackwardWeight, {bf16(g), bf16(x)},
                                                  weight, {{DType::kF32, w.shape()}});
  REQUIRE(dw.ok());
  CHECK(testing::CompareTensors(
            (*dw)[0], conv2d_backward_weight(RoundedToBf16(g), RoundedToBf16(x), w.shape(), o),
            1e-5, 1e-5)
            .empty());
}

// A two-layer perceptron with a residual, as a tracer would record it.
Graph Perceptron() {
  return testing::ParseOk(
      "graph(%x: f32[64,128], %w1: f32[256,128], %b1: f32[256], %w2: f32[128,256], "
      "%b2: f32[128]) {\n"
      "  %h: f32[64,256] = linear(%x, %w1, %b1)\n"
      "  %g: f32[64,256] = gelu(%h) {approximate=\"tanh\"}\n"
      "  %y: f32[64,128] = linear(%g, %w2, %b2)\n"
      "  %z: f32[64,128] = add(%y, %x)\n"
      "  %s: f32[] = sum(%z) {dims=[], keepdim=false}\n"
      "  return (%z, %s)\n}\n");
}

TEST_CASE("a bf16 program matches f32 to bf16's precision, or is f32 without bf16 instructions") {
  const Graph g = Perceptron();
  std::vector<Tensor> args;
  for (size_t i = 0; i < g.placeholders().size(); ++i) {
    args.push_back(mul(testing::Random(g.placeholders()[i]->type().shape, DType::kF32, 10 + i),
                       scalar(0.3, DType::kF32)));
  }
  const Executable f32 = fusing()(g).value();
  const Executable bf16 = WithPrecision(fusing(), Precision::kBF16)(g).value();
  const std::vector<Tensor> want = f32(args).value(), got = bf16(args).value();
  REQUIRE(got[0].dtype() == DType::kF32);
  if (CpuHasBf16()) {
    // Operands rounded to 8 significant bits, about 2^-9 relative error
    // each: over two layers the results are within 2% of the outputs' scale
    // (their RMS), elementwise.
    const double rms = std::sqrt(mean(mul(want[0], want[0])).item<float>());
    const std::string gap = testing::CompareTensors(got[0], want[0], 2e-2, 2e-2 * rms);
    INFO(gap);
    CHECK(gap.empty());
    CHECK(!testing::CompareTensors(got[0], want[0], 1e-6, 1e-6).empty());  // bf16 did run
  } else {
    CHECK(testing::CompareTensors(got[0], want[0], 0, 0).empty());
  }
  CHECK(WithPrecision(fusing(), Precision::kF32)(g).ok());
}

TEST_CASE("precisions parse by name") {
  CHECK(ParsePrecision("bf16").value() == Precision::kBF16);
  CHECK(ParsePrecision("f32").value() == Precision::kF32);
  CHECK(PrecisionName(Precision::kBF16) == "bf16");
  CHECK(ParsePrecision("f16").status().message() == "precision: expected f32 or bf16, got \"f16\"");
}

}  // namespace
}  // namespace tc::codegen
