// conv2d, its backward ops and max/avg pooling against naive f64 loops written
// here, on random inputs: f64 to ~1e-12, f32 (oneDNN) within a tolerance, over
// strides, padding, dilation, groups, non-square kernels, batch sizes, strided
// views and zero-size dims; backward ops also against the definition of the
// gradient; every shape error's exact message.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "runtime/dispatch.h"
#include "runtime/kernels/primitive_cache.h"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

using testing::NonContiguous;
using testing::Random;

// ---- naive f64 references: loops over at(), one output element at a time.

int64_t OutSize(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// x[n, c, h, w], or 0 outside the input (the padding).
double AtPadded(const Tensor& x, int64_t n, int64_t c, int64_t h, int64_t w) {
  if (h < 0 || h >= x.size(2) || w < 0 || w >= x.size(3)) return 0;
  return x.at<double>({n, c, h, w});
}

Tensor RefConv(const Tensor& x, const Tensor& w, const Conv2dOptions& o) {
  const int64_t cg = w.size(1), og = w.size(0) / o.groups;
  const int64_t oh_n = OutSize(x.size(2), w.size(2), o.stride[0], o.padding[0], o.dilation[0]);
  const int64_t ow_n = OutSize(x.size(3), w.size(3), o.stride[1], o.padding[1], o.dilation[1]);
  Tensor y = Tensor::Empty({x.size(0), w.size(0), oh_n, ow_n}, DType::kF64);
  for (int64_t n = 0; n < y.size(0); ++n) {
    for (int64_t oc = 0; oc < y.size(1); ++oc) {
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double sum = 0;
          for (int64_t ic = 0; ic < cg; ++ic) {
            for (int64_t kh = 0; kh < w.size(2); ++kh) {
              for (int64_t kw = 0; kw < w.size(3); ++kw) {
                sum += w.at<double>({oc, ic, kh, kw}) *
                       AtPadded(x, n, oc / og * cg + ic,
                                oh * o.stride[0] - o.padding[0] + kh * o.dilation[0],
                                ow * o.stride[1] - o.padding[1] + kw * o.dilation[1]);
              }
            }
          }
          y.set<double>({n, oc, oh, ow}, sum);
        }
      }
    }
  }
  return y;
}

// dx[n, c, h, w] = sum of dy[n, oc, oh, ow] w[oc, ic, kh, kw] over the taps that
// read x[n, c, h, w]: oh = (h + pad - kh * dil) / stride when that divides.
Tensor RefConvBackwardData(const Tensor& dy, const Tensor& w, const Shape& x_shape,
                           const Conv2dOptions& o) {
  const int64_t cg = w.size(1), og = w.size(0) / o.groups;
  Tensor dx = Tensor::Empty(x_shape, DType::kF64);
  auto out_index = [&](int64_t i, int64_t k, int d) {  // -1 when no output reads i at tap k
    const int64_t num = i + o.padding[d] - k * o.dilation[d];
    if (num < 0 || num % o.stride[d] != 0 || num / o.stride[d] >= dy.size(2 + d))
      return int64_t{-1};
    return num / o.stride[d];
  };
  for (int64_t n = 0; n < x_shape[0]; ++n) {
    for (int64_t c = 0; c < x_shape[1]; ++c) {
      const int64_t g = c / cg, ic = c % cg;
      for (int64_t h = 0; h < x_shape[2]; ++h) {
        for (int64_t wi = 0; wi < x_shape[3]; ++wi) {
          double sum = 0;
          for (int64_t oc = g * og; oc < (g + 1) * og; ++oc) {
            for (int64_t kh = 0; kh < w.size(2); ++kh) {
              for (int64_t kw = 0; kw < w.size(3); ++kw) {
                const int64_t oh = out_index(h, kh, 0), ow = out_index(wi, kw, 1);
                if (oh < 0 || ow < 0) continue;
                sum += dy.at<double>({n, oc, oh, ow}) * w.at<double>({oc, ic, kh, kw});
              }
            }
          }
          dx.set<double>({n, c, h, wi}, sum);
        }
      }
    }
  }
  return dx;
}

Tensor RefConvBackwardWeight(const Tensor& dy, const Tensor& x, const Shape& w_shape,
                             const Conv2dOptions& o) {
  const int64_t cg = w_shape[1], og = w_shape[0] / o.groups;
  Tensor dw = Tensor::Empty(w_shape, DType::kF64);
  for (int64_t oc = 0; oc < w_shape[0]; ++oc) {
    for (int64_t ic = 0; ic < cg; ++ic) {
      for (int64_t kh = 0; kh < w_shape[2]; ++kh) {
        for (int64_t kw = 0; kw < w_shape[3]; ++kw) {
          double sum = 0;
          for (int64_t n = 0; n < dy.size(0); ++n) {
            for (int64_t oh = 0; oh < dy.size(2); ++oh) {
              for (int64_t ow = 0; ow < dy.size(3); ++ow) {
                sum += dy.at<double>({n, oc, oh, ow}) *
                       AtPadded(x, n, oc / og * cg + ic,
                                oh * o.stride[0] - o.padding[0] + kh * o.dilation[0],
                                ow * o.stride[1] - o.padding[1] + kw * o.dilation[1]);
              }
            }
          }
          dw.set<double>({oc, ic, kh, kw}, sum);
        }
      }
    }
  }
  return dw;
}

template <typename Fn>
void ForEachIndex4(const Shape& s, Fn fn) {
  for (int64_t n = 0; n < s[0]; ++n) {
    for (int64_t c = 0; c < s[1]; ++c) {
      for (int64_t h = 0; h < s[2]; ++h) {
        for (int64_t w = 0; w < s[3]; ++w) fn(n, c, h, w);
      }
    }
  }
}

Shape PoolOutShape(const Shape& x, const Pool2dOptions& o) {
  return {x[0], x[1], OutSize(x[2], o.kernel[0], o.stride[0], o.padding[0], o.dilation[0]),
          OutSize(x[3], o.kernel[1], o.stride[1], o.padding[1], o.dilation[1])};
}

// The in-bounds (h, w) of the window of output (oh, ow), row-major.
std::vector<std::array<int64_t, 2>> WindowTaps(const Shape& x, const Pool2dOptions& o, int64_t oh,
                                               int64_t ow) {
  std::vector<std::array<int64_t, 2>> taps;
  for (int64_t kh = 0; kh < o.kernel[0]; ++kh) {
    for (int64_t kw = 0; kw < o.kernel[1]; ++kw) {
      const int64_t h = oh * o.stride[0] - o.padding[0] + kh * o.dilation[0];
      const int64_t w = ow * o.stride[1] - o.padding[1] + kw * o.dilation[1];
      if (h >= 0 && h < x[2] && w >= 0 && w < x[3]) taps.push_back({h, w});
    }
  }
  return taps;
}

Tensor RefMaxPool(const Tensor& x, const Pool2dOptions& o) {
  Tensor y = Tensor::Empty(PoolOutShape(x.shape(), o), DType::kF64);
  ForEachIndex4(y.shape(), [&](int64_t n, int64_t c, int64_t oh, int64_t ow) {
    double m = -std::numeric_limits<double>::infinity();
    for (auto [h, w] : WindowTaps(x.shape(), o, oh, ow))
      m = std::max(m, x.at<double>({n, c, h, w}));
    y.set<double>({n, c, oh, ow}, m);
  });
  return y;
}

// Each window's gradient goes to its first maximum, row-major.
Tensor RefMaxPoolBackward(const Tensor& dy, const Tensor& x, const Pool2dOptions& o) {
  Tensor dx = Tensor::Empty(x.shape(), DType::kF64);
  ForEachIndex4(dy.shape(), [&](int64_t n, int64_t c, int64_t oh, int64_t ow) {
    const std::vector<std::array<int64_t, 2>> taps = WindowTaps(x.shape(), o, oh, ow);
    std::array<int64_t, 2> best = taps.at(0);
    for (auto [h, w] : taps) {
      if (x.at<double>({n, c, h, w}) > x.at<double>({n, c, best[0], best[1]})) best = {h, w};
    }
    dx.set<double>({n, c, best[0], best[1]},
                   dx.at<double>({n, c, best[0], best[1]}) + dy.at<double>({n, c, oh, ow}));
  });
  return dx;
}

// Padding counts in the divisor: always the full kernel area.
Tensor RefAvgPool(const Tensor& x, const Pool2dOptions& o) {
  Tensor y = Tensor::Empty(PoolOutShape(x.shape(), o), DType::kF64);
  ForEachIndex4(y.shape(), [&](int64_t n, int64_t c, int64_t oh, int64_t ow) {
    double sum = 0;
    for (auto [h, w] : WindowTaps(x.shape(), o, oh, ow)) sum += x.at<double>({n, c, h, w});
    y.set<double>({n, c, oh, ow}, sum / static_cast<double>(o.kernel[0] * o.kernel[1]));
  });
  return y;
}

Tensor RefAvgPoolBackward(const Tensor& dy, const Shape& x_shape, const Pool2dOptions& o) {
  Tensor dx = Tensor::Empty(x_shape, DType::kF64);
  ForEachIndex4(dy.shape(), [&](int64_t n, int64_t c, int64_t oh, int64_t ow) {
    const double g = dy.at<double>({n, c, oh, ow}) / static_cast<double>(o.kernel[0] * o.kernel[1]);
    for (auto [h, w] : WindowTaps(x_shape, o, oh, ow)) {
      dx.set<double>({n, c, h, w}, dx.at<double>({n, c, h, w}) + g);
    }
  });
  return dx;
}

// ---- test inputs

double Dot(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  REQUIRE(av.size() == bv.size());
  double sum = 0;
  for (size_t i = 0; i < av.size(); ++i) sum += av[i] * bv[i];
  return sum;
}

enum class Layout { kContiguous, kTransposed, kSliced };
constexpr Layout kLayouts[] = {Layout::kContiguous, Layout::kTransposed, Layout::kSliced};

const char* LayoutName(Layout l) {
  switch (l) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kTransposed:
      return "transposed storage";
    case Layout::kSliced:
      return "sliced";
  }
  return "";
}

// `t`'s values (rank 4) in the given layout: as is, stored transposed, or a
// slice of a wider tensor (an offset and a row stride that is not the width).
Tensor InLayout(const Tensor& t, Layout l) {
  switch (l) {
    case Layout::kContiguous:
      return t;
    case Layout::kTransposed:
      return NonContiguous(t);
    case Layout::kSliced:
      return pad(t, {0, 0, 0, 0, 0, 0, 1, 2}).slice(3, 1, 1 + t.size(3));
  }
  return t;
}

constexpr DType kDTypes[] = {DType::kF64, DType::kF32};
// f64 runs the same sums as the reference in another order; f32 runs oneDNN.
double Tol(DType dt) { return dt == DType::kF64 ? 1e-12 : 2e-4; }

std::string Describe(const char* name, DType dt, Layout l) {
  return absl::StrCat(name, ", ", DTypeName(dt), ", ", LayoutName(l));
}

// ---- convolution

struct ConvCase {
  const char* name;
  Shape x, w;
  Conv2dOptions o;
};

const std::vector<ConvCase>& ConvCases() {
  static const std::vector<ConvCase> cases = {
      {"3x3", {1, 3, 5, 6}, {4, 3, 3, 3}, {}},
      {"stride 2, padding, 3x2 kernel, batch 3", {3, 2, 7, 8}, {3, 2, 3, 2}, {{2, 2}, {1, 0}}},
      {"dilation 2, mixed strides", {2, 3, 9, 7}, {2, 3, 3, 2}, {{1, 2}, {2, 1}, {2, 2}}},
      {"groups 2", {2, 4, 6, 5}, {6, 2, 2, 3}, {{1, 1}, {1, 1}, {1, 1}, 2}},
      {"depthwise, multiplier 2, stride 2",
       {3, 3, 5, 5},
       {6, 1, 3, 3},
       {{2, 1}, {1, 1}, {1, 2}, 3}},
      {"size-1 dims", {1, 1, 1, 1}, {2, 1, 1, 1}, {}},
      {"batch 0", {0, 2, 4, 4}, {3, 2, 3, 3}, {}},
      {"no input channels", {2, 0, 4, 4}, {3, 0, 3, 3}, {}},
      {"no output channels", {2, 2, 4, 4}, {0, 2, 3, 3}, {}},
      {"zero-height input, all padding", {1, 2, 0, 3}, {2, 2, 1, 2}, {{1, 1}, {1, 0}}},
  };
  return cases;
}

Shape ConvOutShape(const ConvCase& c) {
  return {c.x[0], c.w[0], OutSize(c.x[2], c.w[2], c.o.stride[0], c.o.padding[0], c.o.dilation[0]),
          OutSize(c.x[3], c.w[3], c.o.stride[1], c.o.padding[1], c.o.dilation[1])};
}

TEST_CASE("conv2d matches direct loops") {
  for (const ConvCase& c : ConvCases()) {
    for (DType dt : kDTypes) {
      const Tensor x = Random(c.x, dt, 1), w = Random(c.w, dt, 2);
      const Tensor expected = RefConv(x.to(DType::kF64), w.to(DType::kF64), c.o);
      for (Layout l : kLayouts) {
        INFO(Describe(c.name, dt, l));
        const Tensor y = conv2d(InLayout(x, l), InLayout(w, l), c.o);
        REQUIRE(y.dtype() == dt);
        REQUIRE_TENSORS_CLOSE(y, expected, Tol(dt), Tol(dt));
      }
    }
  }
}

TEST_CASE("a frozen convolution weight is packed once, and a new one again") {
  Conv2dOptions o;
  o.padding = {1, 1};
  const Tensor x = Random({2, 8, 10, 10}, DType::kF32, 3);
  Tensor w = Random({16, 8, 3, 3}, DType::kF32, 4);
  w.storage()->Freeze();
  const Tensor expected = RefConv(x.to(DType::kF64), w.to(DType::kF64), o);
  const int64_t before = kernels::OneDnnPacks();
  REQUIRE_TENSORS_CLOSE(conv2d(x, w, o), expected, Tol(DType::kF32), Tol(DType::kF32));
  // One reorder, where oneDNN prefers a blocked layout for these weights.
  const int64_t packs = kernels::OneDnnPacks() - before;
  CHECK(packs <= 1);
  REQUIRE_TENSORS_CLOSE(conv2d(x, w, o), expected, Tol(DType::kF32), Tol(DType::kF32));
  CHECK(kernels::OneDnnPacks() - before == packs);
  Tensor v = Random({16, 8, 3, 3}, DType::kF32, 5);
  v.storage()->Freeze();
  REQUIRE_TENSORS_CLOSE(conv2d(x, v, o), RefConv(x.to(DType::kF64), v.to(DType::kF64), o),
                        Tol(DType::kF32), Tol(DType::kF32));
  CHECK(kernels::OneDnnPacks() - before == 2 * packs);
}

TEST_CASE("conv2d_backward_data matches direct loops and is the adjoint of conv2d") {
  for (const ConvCase& c : ConvCases()) {
    for (DType dt : kDTypes) {
      const Tensor dy = Random(ConvOutShape(c), dt, 3), w = Random(c.w, dt, 2);
      const Tensor expected = RefConvBackwardData(dy.to(DType::kF64), w.to(DType::kF64), c.x, c.o);
      for (Layout l : kLayouts) {
        INFO(Describe(c.name, dt, l));
        const Tensor dx = conv2d_backward_data(InLayout(dy, l), InLayout(w, l), c.x, c.o);
        REQUIRE(dx.dtype() == dt);
        REQUIRE_TENSORS_CLOSE(dx, expected, Tol(dt), Tol(dt));
      }
    }
    // The definition: <dy, conv2d(x, w)> = <dx, x> for every x.
    INFO(c.name);
    const Tensor x = Random(c.x, DType::kF64, 4), w = Random(c.w, DType::kF64, 5);
    const Tensor dy = Random(ConvOutShape(c), DType::kF64, 6);
    CHECK(Dot(conv2d_backward_data(dy, w, c.x, c.o), x) ==
          Approx(Dot(dy, conv2d(x, w, c.o))).margin(1e-10));
  }
}

TEST_CASE("conv2d_backward_weight matches direct loops and is the adjoint of conv2d") {
  for (const ConvCase& c : ConvCases()) {
    for (DType dt : kDTypes) {
      const Tensor dy = Random(ConvOutShape(c), dt, 3), x = Random(c.x, dt, 1);
      const Tensor expected =
          RefConvBackwardWeight(dy.to(DType::kF64), x.to(DType::kF64), c.w, c.o);
      for (Layout l : kLayouts) {
        INFO(Describe(c.name, dt, l));
        const Tensor dw = conv2d_backward_weight(InLayout(dy, l), InLayout(x, l), c.w, c.o);
        REQUIRE(dw.dtype() == dt);
        REQUIRE_TENSORS_CLOSE(dw, expected, Tol(dt), Tol(dt));
      }
    }
    // The definition: <dy, conv2d(x, w)> = <dw, w> for every w.
    INFO(c.name);
    const Tensor x = Random(c.x, DType::kF64, 4), w = Random(c.w, DType::kF64, 5);
    const Tensor dy = Random(ConvOutShape(c), DType::kF64, 6);
    CHECK(Dot(conv2d_backward_weight(dy, x, c.w, c.o), w) ==
          Approx(Dot(dy, conv2d(x, w, c.o))).margin(1e-10));
  }
}

// ---- pooling

struct PoolCase {
  const char* name;
  Shape x;
  Pool2dOptions o;
};

const std::vector<PoolCase>& PoolCases() {
  static const std::vector<PoolCase> cases = {
      {"2x2 stride 2", {1, 2, 6, 6}, {}},
      {"padding, 3x2 kernel, batch 3", {3, 2, 7, 8}, {{3, 2}, {2, 1}, {1, 1}}},
      {"overlapping windows", {2, 3, 5, 5}, {{3, 3}, {1, 1}, {1, 1}}},
      {"stride larger than kernel", {2, 1, 7, 5}, {{2, 1}, {3, 2}, {1, 0}}},
      {"size-1 dims", {1, 1, 1, 1}, {{1, 1}, {1, 1}, {0, 0}}},
      {"batch 0", {0, 2, 4, 4}, {}},
  };
  return cases;
}

// Max pooling's cases: the shared ones and dilated windows (taps dilation
// apart, some of them in the padding).
const std::vector<PoolCase>& MaxPoolCases() {
  static const std::vector<PoolCase> cases = [] {
    std::vector<PoolCase> all = PoolCases();
    all.push_back({"dilation 2, 3x3, stride 1", {2, 3, 7, 7}, {{3, 3}, {1, 1}, {0, 0}, {2, 2}}});
    all.push_back(
        {"dilation (3, 2), padding, stride 2", {2, 2, 9, 8}, {{3, 2}, {2, 2}, {1, 1}, {3, 2}}});
    all.push_back({"dilation 2, kernel == stride", {1, 2, 8, 8}, {{2, 2}, {2, 2}, {0, 0}, {2, 2}}});
    return all;
  }();
  return cases;
}

// Values in {-1, 0, 1}: windows full of ties, and all-negative windows next to
// the padding.
Tensor Ties(const Shape& shape, DType dt) {
  std::vector<double> v(NumElements(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7 / 3) % 3) - 1;
  return from_vector(v, shape).to(dt);
}

TEST_CASE("max_pool2d matches direct loops") {
  for (const PoolCase& c : MaxPoolCases()) {
    for (DType dt : kDTypes) {
      const Tensor x = Random(c.x, dt, 1);
      const Tensor expected = RefMaxPool(x.to(DType::kF64), c.o);
      for (Layout l : kLayouts) {
        INFO(Describe(c.name, dt, l));
        const Tensor y = max_pool2d(InLayout(x, l), c.o);
        REQUIRE(y.dtype() == dt);
        REQUIRE_TENSORS_CLOSE(y, expected, 0, 0);  // a max is exact
      }
    }
  }
  SECTION("a window holding only padding (zero-height input) is -inf") {
    for (DType dt : kDTypes) {
      const Tensor y = max_pool2d(zeros({1, 2, 0, 4}, dt), {{2, 2}, {1, 2}, {1, 0}});
      REQUIRE(y.shape() == Shape{1, 2, 1, 2});
      for (double v : y.to_vector<double>()) CHECK(v == -std::numeric_limits<double>::infinity());
    }
  }
  SECTION("a dilated window wholly in the padding is -inf and takes no gradient") {
    // Columns: taps at -1 and 3 of a 3-wide input.
    const Pool2dOptions o{{2, 2}, {1, 1}, {0, 1}, {1, 4}};
    for (DType dt : kDTypes) {
      for (Layout l : kLayouts) {
        INFO(Describe("wholly in the padding", dt, l));
        const Tensor x = InLayout(Random({1, 2, 4, 3}, dt, 1), l);
        const Tensor y = max_pool2d(x, o);
        REQUIRE(y.shape() == Shape{1, 2, 3, 1});
        for (double v : y.to_vector<double>()) CHECK(v == -std::numeric_limits<double>::infinity());
        const Tensor dx = max_pool2d_backward(InLayout(ones({1, 2, 3, 1}, dt), l), x, o);
        REQUIRE_TENSORS_CLOSE(dx, zeros({1, 2, 4, 3}, DType::kF64), 0, 0);
      }
    }
  }
}

TEST_CASE("max_pool2d_backward matches direct loops, ties and finite differences") {
  for (const PoolCase& c : MaxPoolCases()) {
    for (DType dt : kDTypes) {
      for (bool ties : {false, true}) {
        const Tensor x = ties ? Ties(c.x, dt) : Random(c.x, dt, 1);
        const Tensor dy = Random(PoolOutShape(c.x, c.o), dt, 2);
        const Tensor expected = RefMaxPoolBackward(dy.to(DType::kF64), x.to(DType::kF64), c.o);
        for (Layout l : kLayouts) {
          INFO(Describe(c.name, dt, l));
          INFO((ties ? "ties" : "random"));
          const Tensor dx = max_pool2d_backward(InLayout(dy, l), InLayout(x, l), c.o);
          REQUIRE(dx.dtype() == dt);
          REQUIRE_TENSORS_CLOSE(dx, expected, Tol(dt), Tol(dt));
        }
      }
    }
    // Random inputs have no ties: max pooling is linear near x.
    INFO(c.name);
    const Tensor x = Random(c.x, DType::kF64, 3), v = Random(c.x, DType::kF64, 4);
    const Tensor dy = Random(PoolOutShape(c.x, c.o), DType::kF64, 5);
    const double eps = 1e-6;
    const double fd =
        (Dot(dy, max_pool2d(x + v * eps, c.o)) - Dot(dy, max_pool2d(x - v * eps, c.o))) / (2 * eps);
    CHECK(Dot(max_pool2d_backward(dy, x, c.o), v) == Approx(fd).margin(1e-6));
  }
  SECTION("equal values: the first in-bounds element of each window, never the padding") {
    // 3x3 windows, stride 1, padding 1 over a 4x4 plane of -1: window (oh, ow)
    // starts at row max(oh - 1, 0), so rows 0..3 start 2, 1, 1, 0 windows; the
    // same for columns, and dx[h][w] = rows[h] * cols[w].
    const std::vector<double> counts = {2, 1, 1, 0};
    std::vector<double> expected;
    for (double r : counts) {
      for (double col : counts) expected.push_back(r * col);
    }
    for (DType dt : kDTypes) {
      INFO(DTypeName(dt));
      const Tensor dx = max_pool2d_backward(ones({1, 1, 4, 4}, dt), full({1, 1, 4, 4}, -1, dt),
                                            {{3, 3}, {1, 1}, {1, 1}});
      REQUIRE_TENSORS_CLOSE(dx, from_vector(expected, {1, 1, 4, 4}), 0, 0);
    }
  }
}

TEST_CASE("avg_pool2d matches direct loops, padding counted in the divisor") {
  for (const PoolCase& c : PoolCases()) {
    for (DType dt : kDTypes) {
      const Tensor x = Random(c.x, dt, 1);
      const Tensor expected = RefAvgPool(x.to(DType::kF64), c.o);
      for (Layout l : kLayouts) {
        INFO(Describe(c.name, dt, l));
        const Tensor y = avg_pool2d(InLayout(x, l), c.o);
        REQUIRE(y.dtype() == dt);
        REQUIRE_TENSORS_CLOSE(y, expected, Tol(dt), Tol(dt));
      }
    }
  }
  SECTION("a corner window with padding 1 divides by the whole 3x3 kernel") {
    for (DType dt : kDTypes) {
      const Tensor y = avg_pool2d(ones({1, 1, 3, 3}, dt), {{3, 3}, {2, 2}, {1, 1}});
      REQUIRE_TENSORS_CLOSE(y, full({1, 1, 2, 2}, 4.0 / 9, DType::kF64), Tol(dt), Tol(dt));
    }
  }
  SECTION("a window holding only padding (zero-height input) is 0") {
    const Tensor y = avg_pool2d(zeros({1, 2, 0, 4}, DType::kF32), {{2, 2}, {1, 2}, {1, 0}});
    REQUIRE_TENSORS_CLOSE(y, zeros({1, 2, 1, 2}, DType::kF32), 0, 0);
  }
}

TEST_CASE("avg_pool2d_backward matches direct loops and is the adjoint of avg_pool2d") {
  for (const PoolCase& c : PoolCases()) {
    for (DType dt : kDTypes) {
      const Tensor dy = Random(PoolOutShape(c.x, c.o), dt, 2);
      const Tensor expected = RefAvgPoolBackward(dy.to(DType::kF64), c.x, c.o);
      for (Layout l : kLayouts) {
        INFO(Describe(c.name, dt, l));
        const Tensor dx = avg_pool2d_backward(InLayout(dy, l), c.x, c.o);
        REQUIRE(dx.dtype() == dt);
        REQUIRE_TENSORS_CLOSE(dx, expected, Tol(dt), Tol(dt));
      }
    }
    INFO(c.name);
    const Tensor x = Random(c.x, DType::kF64, 3);
    const Tensor dy = Random(PoolOutShape(c.x, c.o), DType::kF64, 5);
    CHECK(Dot(avg_pool2d_backward(dy, c.x, c.o), x) ==
          Approx(Dot(dy, avg_pool2d(x, c.o))).margin(1e-10));
  }
}

// ---- errors

using Ints = std::vector<int64_t>;

Attrs ConvAttrs(Ints stride = {1, 1}, Ints padding = {0, 0}, Ints dilation = {1, 1},
                int64_t groups = 1) {
  return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
}

Attrs PoolAttrs(Ints kernel = {2, 2}, Ints stride = {2, 2}, Ints padding = {0, 0}) {
  return {{"kernel", kernel}, {"stride", stride}, {"padding", padding}};
}

Attrs With(Attrs attrs, const char* name, Ints value) {
  attrs.Set(name, std::move(value));
  return attrs;
}

// The status message of calling `op`, or "ok".
std::string ErrorOf(OpKind op, std::vector<Tensor> inputs, const Attrs& attrs) {
  absl::StatusOr<TensorList> out = Call(op, inputs, attrs);
  return out.ok() ? "ok" : std::string(out.status().message());
}

Tensor T(Shape shape, DType dt = DType::kF32) { return zeros(shape, dt); }

TEST_CASE("conv2d shape errors") {
  const OpKind op = OpKind::kConv2d;
  const Tensor w = T({4, 3, 3, 3});
  CHECK(ErrorOf(op, {T({3, 5, 5}), w}, ConvAttrs()) ==
        "conv2d: input (N,C,H,W) must have rank 4, got f32[3,5,5]");
  CHECK(ErrorOf(op, {T({1, 3, 5, 5}), T({4, 3, 3})}, ConvAttrs()) ==
        "conv2d: weight (O,C/groups,KH,KW) must have rank 4, got f32[4,3,3]");
  CHECK(ErrorOf(op, {T({1, 3, 5, 5}, DType::kF64), w}, ConvAttrs()) ==
        "conv2d: dtypes differ: f64[1,3,5,5] vs f32[4,3,3,3]");
  CHECK(ErrorOf(op, {T({1, 3, 5, 5}, DType::kI64), T({4, 3, 3, 3}, DType::kI64)}, ConvAttrs()) ==
        "conv2d: input must be floating point, got i64[1,3,5,5]");
  CHECK(ErrorOf(op, {T({1, 3, 5, 5}), w}, ConvAttrs({0, 1})) ==
        "conv2d: stride must be 2 values in [1, 2^31], got [0,1]");
  CHECK(ErrorOf(op, {T({1, 3, 5, 5}), w}, ConvAttrs({1, 1}, {-1, 0})) ==
        "conv2d: padding must be 2 values in [0, 2^31], got [-1,0]");
  CHECK(ErrorOf(op, {T({1, 3, 5, 5}), w}, ConvAttrs({1, 1}, {0, 0}, {2})) ==
        "conv2d: dilation must be 2 values in [1, 2^31], got [2]");
  // Sizes from graph text once overflowed the window arithmetic.
  CHECK(ErrorOf(op, {T({1, 3, 5, 5}), w}, ConvAttrs({1, 1}, {int64_t{1} << 62, 0})) ==
        "conv2d: padding must be 2 values in [0, 2^31], got [4611686018427387904,0]");
  CHECK(ErrorOf(op, {T({1, 3, 5, 5}), T({4, 1, 3, 3})}, ConvAttrs({1, 1}, {0, 0}, {1, 1}, 2)) ==
        "conv2d: groups 2 must divide input channels 3 and output channels 4");
  CHECK(ErrorOf(op, {T({1, 4, 5, 5}), T({3, 2, 3, 3})}, ConvAttrs({1, 1}, {0, 0}, {1, 1}, 2)) ==
        "conv2d: groups 2 must divide input channels 4 and output channels 3");
  CHECK(ErrorOf(op, {T({1, 4, 5, 5}), w}, ConvAttrs({1, 1}, {0, 0}, {1, 1}, 0)) ==
        "conv2d: groups 0 must divide input channels 4 and output channels 4");
  CHECK(ErrorOf(op, {T({1, 4, 5, 5}), w}, ConvAttrs()) ==
        "conv2d: weight [4,3,3,3] expects 3 input channels, input [1,4,5,5] has 4");
  CHECK(ErrorOf(op, {T({1, 4, 5, 5}), T({4, 1, 3, 3})}, ConvAttrs({1, 1}, {0, 0}, {1, 1}, 2)) ==
        "conv2d: weight [4,1,3,3] expects 2 input channels, input [1,4,5,5] has 4");
  CHECK(ErrorOf(op, {T({1, 3, 2, 5}), w}, ConvAttrs()) ==
        "conv2d: kernel [4,3,3,3] larger than padded input [1,3,2,5]");
  CHECK(ErrorOf(op, {T({1, 3, 5, 4}), w}, ConvAttrs({1, 1}, {0, 0}, {1, 2})) ==
        "conv2d: kernel [4,3,3,3] larger than padded input [1,3,5,4]");
  // Padding makes the same kernel fit.
  CHECK(ErrorOf(op, {T({1, 3, 2, 5}), w}, ConvAttrs({1, 1}, {1, 0})) == "ok");
}

TEST_CASE("conv2d_backward_data shape errors") {
  const OpKind op = OpKind::kConv2dBackwardData;
  const Tensor w = T({4, 3, 3, 3});
  const Attrs attrs = With(ConvAttrs(), "input_shape", {2, 3, 5, 5});
  CHECK(ErrorOf(op, {T({2, 4, 3, 3}), w}, attrs) == "ok");
  CHECK(ErrorOf(op, {T({2, 4, 3, 4}), w}, attrs) ==
        "conv2d_backward_data: grad f32[2,4,3,4] does not match the conv output [2,4,3,3]");
  CHECK(ErrorOf(op, {T({2, 4, 3, 3}, DType::kF64), w}, attrs) ==
        "conv2d_backward_data: grad f64[2,4,3,3] does not match the conv output [2,4,3,3]");
  CHECK(ErrorOf(op, {T({2, 4, 3, 3}), w}, With(attrs, "input_shape", {2, 3, 5})) ==
        "conv2d_backward_data: input (N,C,H,W) must have rank 4, got f32[2,3,5]");
  CHECK(ErrorOf(op, {T({2, 4, 3, 3}), w}, With(attrs, "input_shape", {2, 6, 5, 5})) ==
        "conv2d_backward_data: weight [4,3,3,3] expects 3 input channels, input [2,6,5,5] has 6");
  CHECK(ErrorOf(op, {T({2, 4, 3, 3}), w}, With(attrs, "input_shape", {2, 3, 2, 2})) ==
        "conv2d_backward_data: kernel [4,3,3,3] larger than padded input [2,3,2,2]");
}

TEST_CASE("conv2d_backward_weight shape errors") {
  const OpKind op = OpKind::kConv2dBackwardWeight;
  const Tensor x = T({2, 4, 5, 5});
  const Attrs attrs = With(ConvAttrs({1, 1}, {0, 0}, {1, 1}, 2), "weight_shape", {6, 2, 3, 3});
  CHECK(ErrorOf(op, {T({2, 6, 3, 3}), x}, attrs) == "ok");
  CHECK(ErrorOf(op, {T({2, 4, 3, 3}), x}, attrs) ==
        "conv2d_backward_weight: grad f32[2,4,3,3] does not match the conv output [2,6,3,3]");
  CHECK(ErrorOf(op, {T({2, 6, 3, 3}), x}, With(attrs, "weight_shape", {6, 2, 3})) ==
        "conv2d_backward_weight: weight (O,C/groups,KH,KW) must have rank 4, got f32[6,2,3]");
  CHECK(ErrorOf(op, {T({2, 6, 3, 3}), x}, With(attrs, "weight_shape", {6, 4, 3, 3})) ==
        "conv2d_backward_weight: weight [6,4,3,3] expects 8 input channels, input [2,4,5,5] has "
        "4");
  CHECK(ErrorOf(op, {T({2, 5, 3, 3}), x}, With(attrs, "weight_shape", {5, 2, 3, 3})) ==
        "conv2d_backward_weight: groups 2 must divide input channels 4 and output channels 5");
  CHECK(ErrorOf(op, {T({2, 6, 3, 3}), T({2, 4, 5})}, attrs) ==
        "conv2d_backward_weight: input (N,C,H,W) must have rank 4, got f32[2,4,5]");
}

// The errors max_pool2d and avg_pool2d share.
void CheckPoolErrors(OpKind op, absl::string_view name) {
  const std::string prefix = absl::StrCat(name, ": ");
  CHECK(ErrorOf(op, {T({2, 4, 4})}, PoolAttrs()) ==
        prefix + "input (N,C,H,W) must have rank 4, got f32[2,4,4]");
  CHECK(ErrorOf(op, {T({1, 2, 4, 4}, DType::kI64)}, PoolAttrs()) ==
        prefix + "input must be floating point, got i64[1,2,4,4]");
  CHECK(ErrorOf(op, {T({1, 2, 4, 4})}, PoolAttrs({0, 2})) ==
        prefix + "kernel must be 2 values in [1, 2^31], got [0,2]");
  CHECK(ErrorOf(op, {T({1, 2, 4, 4})}, PoolAttrs({2, 2}, {2, 2, 2})) ==
        prefix + "stride must be 2 values in [1, 2^31], got [2,2,2]");
  CHECK(ErrorOf(op, {T({1, 2, 4, 4})}, PoolAttrs({3, 3}, {1, 1}, {1, 2})) ==
        prefix + "padding 2 exceeds half the kernel 3");
  CHECK(ErrorOf(op, {T({1, 2, 4, 4})}, PoolAttrs({2, 2}, {1, 1}, {1, 1})) == "ok");
  CHECK(ErrorOf(op, {T({1, 2, 2, 4})}, PoolAttrs({3, 3}, {1, 1}, {0, 0})) ==
        prefix + "window larger than padded input [1,2,2,4]");
}

TEST_CASE("max_pool2d and avg_pool2d shape errors") {
  CheckPoolErrors(OpKind::kMaxPool2d, "max_pool2d");
  CheckPoolErrors(OpKind::kAvgPool2d, "avg_pool2d");
}

TEST_CASE("max_pool2d's dilation: its output size, its range, and only max pooling takes it") {
  const Tensor x = T({1, 2, 7, 7});
  // A 3x3 kernel with dilation 2 spans 5 rows: 7 - 5 + 1 = 3 windows a side.
  CHECK(ErrorOf(OpKind::kMaxPool2d, {x}, With(PoolAttrs({3, 3}, {1, 1}), "dilation", {2, 2})) ==
        "ok");
  CHECK(max_pool2d(zeros({1, 2, 7, 7}), {{3, 3}, {1, 1}, {0, 0}, {2, 2}}).shape() ==
        Shape{1, 2, 3, 3});
  CHECK(ErrorOf(OpKind::kMaxPool2d, {x}, With(PoolAttrs(), "dilation", {0, 1})) ==
        "max_pool2d: dilation must be 2 values in [1, 2^31], got [0,1]");
  CHECK(ErrorOf(OpKind::kMaxPool2d, {x}, With(PoolAttrs({3, 3}), "dilation", {4, 4})) ==
        "max_pool2d: window larger than padded input [1,2,7,7]");
  CHECK(ErrorOf(OpKind::kAvgPool2d, {x}, With(PoolAttrs(), "dilation", {2, 2})) ==
        "avg_pool2d: unknown attribute 'dilation'");
}

TEST_CASE("max_pool2d_backward shape errors") {
  const OpKind op = OpKind::kMaxPool2dBackward;
  const Tensor x = T({1, 2, 4, 4});
  CHECK(ErrorOf(op, {T({1, 2, 2, 2}), x}, PoolAttrs()) == "ok");
  CHECK(ErrorOf(op, {T({1, 2, 3, 3}), x}, PoolAttrs()) ==
        "max_pool2d_backward: grad f32[1,2,3,3] does not match the pool output [1,2,2,2]");
  CHECK(ErrorOf(op, {T({1, 2, 2, 2}, DType::kF64), x}, PoolAttrs()) ==
        "max_pool2d_backward: grad f64[1,2,2,2] does not match the pool output [1,2,2,2]");
  CHECK(ErrorOf(op, {T({1, 2, 2, 2}), T({2, 4, 4})}, PoolAttrs()) ==
        "max_pool2d_backward: input (N,C,H,W) must have rank 4, got f32[2,4,4]");
  CHECK(ErrorOf(op, {T({1, 2, 2, 2}), x}, PoolAttrs({2, 2}, {2, 2}, {2, 0})) ==
        "max_pool2d_backward: padding 2 exceeds half the kernel 2");
}

TEST_CASE("avg_pool2d_backward shape errors") {
  const OpKind op = OpKind::kAvgPool2dBackward;
  const Attrs attrs = With(PoolAttrs(), "input_shape", {1, 2, 4, 4});
  CHECK(ErrorOf(op, {T({1, 2, 2, 2})}, attrs) == "ok");
  CHECK(ErrorOf(op, {T({1, 2, 2, 3})}, attrs) ==
        "avg_pool2d_backward: grad f32[1,2,2,3] does not match the pool output [1,2,2,2]");
  CHECK(ErrorOf(op, {T({1, 2, 2, 2})}, With(attrs, "input_shape", {2, 4, 4})) ==
        "avg_pool2d_backward: input (N,C,H,W) must have rank 4, got f32[2,4,4]");
  CHECK(ErrorOf(op, {T({1, 2, 2, 2})}, With(attrs, "input_shape", {1, 2, 1, 4})) ==
        "avg_pool2d_backward: window larger than padded input [1,2,1,4]");
}

}  // namespace
}  // namespace tc
