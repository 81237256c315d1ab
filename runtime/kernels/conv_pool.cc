// Out-variant kernels: conv2d and its backwards, max/avg pooling and their
// backwards.
//
// f32 runs on oneDNN; f64 runs on direct reference loops, and so does any call
// with a zero-size operand (the loops need no special case for it). Both paths follow
// the same conventions: logical NCHW shapes; weight [O, C/groups, KH, KW];
// symmetric padding; average pooling divides by the full kernel area (padding
// counts); max pooling ignores padding and gives a window's gradient to its
// first maximum in row-major order.
//
// Layouts: inputs may have any strides; outputs are dense, row-major or
// channels-last (NHWC in memory), and every path writes them through their
// strides. Max pooling whose windows tile the input has loops of its own for
// row-major and for channels-last data; pooling primitives run on NHWC when x
// is channels-last, so neither layout is reordered.
//
// Each f32 call runs a OneDnnPlan cached per key (op, shapes, strides,
// attributes): its primitives, the reorders between the tensors' plain layouts
// and the layouts oneDNN picks, and the memories those need (reorder buffers,
// the max-pooling workspace) are built on the first call; later calls only
// bind the tensors' pointers and execute.
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "graph/op_attrs.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/onednn.h"
#include "runtime/kernels/primitive_cache.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/strided.h"
#include "runtime/threads.h"

namespace tc::kernels {
namespace {

using dnnl::memory;
using Pair = std::array<int64_t, 2>;

// Element offset of (n, c, h, w) in a rank-4 tensor with `strides`.
int64_t Offset(const std::vector<int64_t>& strides, int64_t n, int64_t c, int64_t h, int64_t w) {
  return n * strides[0] + c * strides[1] + h * strides[2] + w * strides[3];
}

// Whether oneDNN runs this call: f32, or bf16 in a mixed-precision
// convolution, with no zero-size operand.
bool UseOneDnn(std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands) {
    if (!(OneDnnSupports(t->dtype()) || t->dtype() == DType::kBF16) || t->numel() == 0) {
      return false;
    }
  }
  return true;
}

memory::dims Dims(const Pair& p) { return {p[0], p[1]}; }

memory::desc AnyLayout(const memory::desc& plain) {
  return memory::desc(plain.dims(), plain.data_type(), memory::format_tag::any);
}

// The rank-4 `t`'s shape in a dense layout: NHWC when `channels_last`, else NCHW.
memory::desc DenseDesc(const Tensor& t, bool channels_last) {
  return memory::desc(memory::dims(t.shape().begin(), t.shape().end()), PlainDesc(t).data_type(),
                      channels_last ? memory::format_tag::nhwc : memory::format_tag::nchw);
}

// `d`'s shape and layout (its strides, or any) holding elements of `type`.
memory::desc WithType(const memory::desc& d, memory::data_type type) {
  if (d.data_type() == type) return d;
  if (d.data.format_kind != dnnl_blocked)
    return memory::desc(d.dims(), type, memory::format_tag::any);
  const dnnl_dims_t& strides = d.data.format_desc.blocking.strides;
  return memory::desc(d.dims(), type, memory::dims(strides, strides + d.data.ndims));
}

// ---- plans
//
// A plan's external memories are the caller's tensors in their own (plain,
// strided) layouts. Where a primitive wants another layout, the plan owns a
// memory in that layout and reorders into it before the primitive (an input)
// or out of it afterwards (an output); the reorders also take non-contiguous
// tensors without a separate copy.

void AddReorder(OneDnnPlan& plan, const memory& from, const memory& to) {
  plan.Add(dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

// The memory `pd` reads as argument `arg` from the tensor of external `slot`
// (layout `plain`): that tensor, or a plan-owned copy in the primitive's layout.
memory Input(OneDnnPlan& plan, const dnnl::primitive_desc& pd, int arg, int slot,
             const memory::desc& plain) {
  const memory::desc want = pd.query_md(dnnl::query::exec_arg_md, arg);
  memory own = plan.External(slot, plain);
  if (plain == want) return own;
  memory copy = plan.Internal(want);
  AddReorder(plan, own, copy);
  return copy;
}

// Adds `prim` (of `pd`) with `args`, its argument `arg` written into the
// tensor of external `slot` (layout `plain`): directly, or through a
// plan-owned memory reordered into the tensor afterwards.
void AddWritingTo(OneDnnPlan& plan, const dnnl::primitive_desc& pd, const dnnl::primitive& prim,
                  std::vector<std::pair<int, memory>> args, int arg, int slot,
                  const memory::desc& plain) {
  const memory::desc want = pd.query_md(dnnl::query::exec_arg_md, arg);
  memory own = plan.External(slot, plain);
  memory result = plain == want ? own : plan.Internal(want);
  args.emplace_back(arg, result);
  plan.Add(prim, std::move(args));
  if (result != own) AddReorder(plan, result, own);
}

// ---- convolution

enum class ConvPass { kForward, kBackwardData, kBackwardWeight };

// Calls fn(x_offset, w_offset, y_offset) once per multiply-add of conv2d(x, w)
// = y: for every output element, each (input channel, kernel tap) whose input
// position is inside the (unpadded) input.
template <typename Fn>
void ForEachConvTap(const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dOptions& p,
                    Fn fn) {
  const Shape &xs = x.shape(), &ws = w.shape(), &ys = y.shape();
  const int64_t out_per_group = ws[0] / p.groups, in_per_group = ws[1];
  for (int64_t n = 0; n < ys[0]; ++n) {
    for (int64_t o = 0; o < ys[1]; ++o) {
      const int64_t c0 = (o / out_per_group) * in_per_group;
      for (int64_t oh = 0; oh < ys[2]; ++oh) {
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          const int64_t yo = Offset(y.strides(), n, o, oh, ow);
          for (int64_t ic = 0; ic < in_per_group; ++ic) {
            for (int64_t kh = 0; kh < ws[2]; ++kh) {
              const int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
              if (ih < 0 || ih >= xs[2]) continue;
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                const int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
                if (iw < 0 || iw >= xs[3]) continue;
                fn(Offset(x.strides(), n, c0 + ic, ih, iw), Offset(w.strides(), o, ic, kh, kw), yo);
              }
            }
          }
        }
      }
    }
  }
}

// The reference loops; the pass's output (y, x or w) is zero-filled.
template <typename T>
void RefConv(ConvPass pass, const Tensor& x, const Tensor& w, const Tensor& y,
             const Conv2dOptions& p) {
  T *xp = x.data<T>(), *wp = w.data<T>(), *yp = y.data<T>();
  switch (pass) {
    case ConvPass::kForward:
      ForEachConvTap(x, w, y, p, [&](int64_t i, int64_t j, int64_t k) { yp[k] += xp[i] * wp[j]; });
      break;
    case ConvPass::kBackwardData:
      ForEachConvTap(x, w, y, p, [&](int64_t i, int64_t j, int64_t k) { xp[i] += yp[k] * wp[j]; });
      break;
    case ConvPass::kBackwardWeight:
      ForEachConvTap(x, w, y, p, [&](int64_t i, int64_t j, int64_t k) { wp[j] += yp[k] * xp[i]; });
      break;
  }
}

// oneDNN's weights: [O, C/g, KH, KW], or [g, O/g, C/g, KH, KW] when grouped
// (the same memory: the O dim split in two).
memory::desc WeightDesc(const Tensor& w, int64_t groups) {
  if (groups == 1) return PlainDesc(w);
  const Shape& s = w.shape();
  const std::vector<int64_t>& st = w.strides();
  return PlainDesc(w.dtype(), {groups, s[0] / groups, s[1], s[2], s[3]},
                   {st[0] * (s[0] / groups), st[0], st[1], st[2], st[3]});
}

// The plan of `pass` over x (slot 0), w (slot 1), y (slot 2) and, for a
// forward with `bias` defined, the bias (slot 3, C contiguous values).
void BuildConvPlan(ConvPass pass, const Tensor& x, const Tensor& w, const Tensor& y,
                   const Tensor& bias, const Conv2dOptions& p, OneDnnPlan& plan) {
  const memory::desc xd = PlainDesc(x), wd = WeightDesc(w, p.groups), yd = PlainDesc(y);
  // With a channels-last activation, both activations are NHWC for the
  // primitive (the row-major one reordered): oneDNN has NHWC kernels for
  // every pass, but left to choose, its backward passes pick a blocked layout
  // (reorders in and out), and given one NHWC and one free activation, its
  // reference loops. Otherwise (and always for the weights) oneDNN chooses.
  const bool nhwc = x.is_channels_last() || y.is_channels_last();
  const memory::desc xa = nhwc ? DenseDesc(x, true) : AnyLayout(xd);
  const memory::desc ya = nhwc ? DenseDesc(y, true) : AnyLayout(yd);
  const memory::dims stride = Dims(p.stride), pad = Dims(p.padding);
  const memory::dims dilation = {p.dilation[0] - 1, p.dilation[1] - 1};  // oneDNN: 0 = dense
  const dnnl::prop_kind prop = pass == ConvPass::kForward ? dnnl::prop_kind::forward_inference
                                                          : dnnl::prop_kind::forward_training;
  const dnnl::algorithm alg = dnnl::algorithm::convolution_direct;
  const memory::desc bd =
      bias.defined() ? PlainDesc(bias.dtype(), {y.shape()[1]}, {1}) : memory::desc();
  // A backward pass's forward (the hint its primitive is made from) is the
  // convolution of its operands' dtype: bf16 throughout for a mixed-precision
  // pass writing f32.
  const memory::data_type operands =
      PlainDesc(pass == ConvPass::kBackwardWeight ? x : w).data_type();
  const bool hint = pass != ConvPass::kForward;
  const memory::desc fx = hint ? WithType(xa, operands) : xa,
                     fy = hint ? WithType(ya, operands) : ya;
  const memory::desc fw = WithType(AnyLayout(wd), operands);
  const dnnl::convolution_forward::primitive_desc fwd(
      bias.defined()
          ? dnnl::convolution_forward::desc(prop, alg, fx, fw, bd, fy, stride, dilation, pad, pad)
          : dnnl::convolution_forward::desc(prop, alg, fx, fw, fy, stride, dilation, pad, pad),
      Engine());
  switch (pass) {
    case ConvPass::kForward: {
      // Frozen weights are reordered once (runtime/kernels/primitive_cache.h).
      const memory::desc w_layout = fwd.weights_desc();
      const memory weights = !w.is_frozen()   ? Input(plan, fwd, DNNL_ARG_WEIGHTS, 1, wd)
                             : w_layout == wd ? plan.External(1, wd)
                                              : plan.Packed(1, wd, w_layout);
      std::vector<std::pair<int, memory>> args = {
          {DNNL_ARG_SRC, Input(plan, fwd, DNNL_ARG_SRC, 0, xd)}, {DNNL_ARG_WEIGHTS, weights}};
      if (bias.defined()) args.emplace_back(DNNL_ARG_BIAS, plan.External(3, bd));
      AddWritingTo(plan, fwd, dnnl::convolution_forward(fwd), std::move(args), DNNL_ARG_DST, 2, yd);
      break;
    }
    case ConvPass::kBackwardData: {
      const dnnl::convolution_backward_data::primitive_desc bwd(
          {alg, xa, AnyLayout(wd), ya, stride, dilation, pad, pad}, Engine(), fwd);
      AddWritingTo(plan, bwd, dnnl::convolution_backward_data(bwd),
                   {{DNNL_ARG_DIFF_DST, Input(plan, bwd, DNNL_ARG_DIFF_DST, 2, yd)},
                    {DNNL_ARG_WEIGHTS, Input(plan, bwd, DNNL_ARG_WEIGHTS, 1, wd)}},
                   DNNL_ARG_DIFF_SRC, 0, xd);
      break;
    }
    case ConvPass::kBackwardWeight: {
      const dnnl::convolution_backward_weights::primitive_desc bwd(
          {alg, xa, AnyLayout(wd), ya, stride, dilation, pad, pad}, Engine(), fwd);
      AddWritingTo(plan, bwd, dnnl::convolution_backward_weights(bwd),
                   {{DNNL_ARG_DIFF_DST, Input(plan, bwd, DNNL_ARG_DIFF_DST, 2, yd)},
                    {DNNL_ARG_SRC, Input(plan, bwd, DNNL_ARG_SRC, 0, xd)}},
                   DNNL_ARG_DIFF_WEIGHTS, 1, wd);
      break;
    }
  }
}

// Runs `pass` of conv2d(x, w) = y, plus a per-channel `bias` (contiguous, C
// values) when it is defined; the pass's output (dense) is fully written.
void Conv(ConvPass pass, const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dOptions& p,
          const Tensor& bias = Tensor()) {
  if (UseOneDnn({&x, &w, &y})) {
    PrimitiveKey key(PrimitiveKey::kConvolution);
    key.Add(static_cast<int64_t>(pass)).Add(x).Add(w).Add(y).Add(bias.defined());
    key.Add(p.stride).Add(p.padding).Add(p.dilation).Add(p.groups);
    const bool pack_w = pass == ConvPass::kForward && w.is_frozen();
    key.Add(pack_w);
    CachedPlan(key, [&](OneDnnPlan& plan) { BuildConvPlan(pass, x, w, y, bias, p, plan); })
        .Run({x.raw_data(), w.raw_data(), y.raw_data(), bias.defined() ? bias.raw_data() : nullptr},
             pack_w ? w : Tensor());
    return;
  }
  ZeroDense(pass == ConvPass::kForward ? y : pass == ConvPass::kBackwardData ? x : w);
  VisitFloatDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    RefConv<T>(pass, x, w, y, p);
    if (!bias.defined()) return;
    // After the sums, as a separate add would: the same roundings.
    const T* bp = bias.data<T>();
    T* yp = y.data<T>();
    const int64_t per_channel[] = {0, 1, 0, 0};  // bias strides seen from y
    ForEachOffset<2>(y.shape(), {y.strides(), per_channel},
                     [&](int64_t yo, int64_t bo) { yp[yo] += bp[bo]; });
  });
}

// conv2d(x, w), or with a third input, conv2d(x, w) + bias: one value per
// output channel, shaped [O] or [1, O, 1, 1] (a bias that is not dense, an
// expand's, is made so first).
absl::Status Conv2dInto(absl::Span<const Tensor> in, const Attrs& attrs,
                        absl::Span<const Tensor> out) {
  TC_RETURN_IF_ERROR(CheckBf16Runs(in, "conv2d"));
  Conv(ConvPass::kForward, in[0], in[1], out[0], Conv2dOptionsOf(attrs),
       in.size() > 2 ? in[2].contiguous() : Tensor());
  return absl::OkStatus();
}

// conv2d_backward_data(grad, w){input_shape} -> dL/dx.
absl::Status Conv2dBackwardDataInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                    absl::Span<const Tensor> out) {
  TC_RETURN_IF_ERROR(CheckBf16Runs(in, "conv2d_backward_data"));
  Conv(ConvPass::kBackwardData, out[0], in[1], in[0], Conv2dOptionsOf(attrs));
  return absl::OkStatus();
}

// conv2d_backward_weight(grad, x){weight_shape} -> dL/dw.
absl::Status Conv2dBackwardWeightInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                      absl::Span<const Tensor> out) {
  TC_RETURN_IF_ERROR(CheckBf16Runs(in, "conv2d_backward_weight"));
  Conv(ConvPass::kBackwardWeight, in[1], out[0], in[0], Conv2dOptionsOf(attrs));
  return absl::OkStatus();
}

// ---- pooling

// The pooling window of output element (n, c, oh, ow) clipped to the input:
// rows h0, h0 + dh, ... below h1 and cols w0, w0 + dw, ... below w1 of plane
// (n, c) (the steps are the dilation).
struct Window {
  int64_t n, c, oh, ow, h0, h1, dh, w0, w1, dw;
};

// The taps start, start + step, ... (kernel of them) that fall in [0, size):
// the first one's position and the end of the last.
std::pair<int64_t, int64_t> TapsInside(int64_t start, int64_t kernel, int64_t step, int64_t size) {
  const int64_t first = start >= 0 ? start : start + (-start + step - 1) / step * step;
  return {first, std::min(start + (kernel - 1) * step + 1, size)};
}

// Whether every window of pooling an input of `in` shape into `out` holds an
// input element. A dilated one can fall wholly in the padding (taps at -1
// and 3 of a 3-wide input): the reference loops give it -inf and no
// gradient; oneDNN would not.
bool EveryWindowReachesInput(const Shape& in, const Shape& out, const Pool2dOptions& p) {
  for (int d = 0; d < 2; ++d) {
    for (int64_t o = 0; o < out[2 + d]; ++o) {
      const auto [first, end] =
          TapsInside(o * p.stride[d] - p.padding[d], p.kernel[d], p.dilation[d], in[2 + d]);
      if (first >= end) return false;
    }
  }
  return true;
}

// Calls fn(window) for every output element of pooling an input of `in` shape.
template <typename Fn>
void ForEachWindow(const Shape& in, const Shape& out, const Pool2dOptions& p, Fn fn) {
  for (int64_t n = 0; n < out[0]; ++n) {
    for (int64_t c = 0; c < out[1]; ++c) {
      for (int64_t oh = 0; oh < out[2]; ++oh) {
        const auto [h0, h1] =
            TapsInside(oh * p.stride[0] - p.padding[0], p.kernel[0], p.dilation[0], in[2]);
        for (int64_t ow = 0; ow < out[3]; ++ow) {
          const auto [w0, w1] =
              TapsInside(ow * p.stride[1] - p.padding[1], p.kernel[1], p.dilation[1], in[3]);
          fn(Window{n, c, oh, ow, h0, h1, p.dilation[0], w0, w1, p.dilation[1]});
        }
      }
    }
  }
}

// Position (h, w) of the window's first maximum in row-major order; h < 0
// for a window holding no input element (a zero-size input, or a dilated
// window wholly in the padding).
struct Pos {
  int64_t h = -1, w = -1;
};

template <typename T>
Pos ArgMax(const Tensor& x, const Window& win) {
  const T* xp = x.data<T>();
  Pos best;
  T best_value = 0;
  for (int64_t h = win.h0; h < win.h1; h += win.dh) {
    for (int64_t w = win.w0; w < win.w1; w += win.dw) {
      const T v = xp[Offset(x.strides(), win.n, win.c, h, w)];
      if (best.h < 0 || v > best_value) {
        best = {h, w};
        best_value = v;
      }
    }
  }
  return best;
}

template <typename T>
void RefMaxPool(const Tensor& x, const Tensor& y, const Pool2dOptions& p) {
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  ForEachWindow(x.shape(), y.shape(), p, [&](const Window& win) {
    const Pos m = ArgMax<T>(x, win);
    yp[Offset(y.strides(), win.n, win.c, win.oh, win.ow)] =
        m.h < 0 ? -std::numeric_limits<T>::infinity()
                : xp[Offset(x.strides(), win.n, win.c, m.h, m.w)];
  });
}

// dx (dense, zero-filled) gets each window's grad at the window's argmax.
template <typename T>
void RefMaxPoolBackward(const Tensor& grad, const Tensor& x, const Tensor& dx,
                        const Pool2dOptions& p) {
  const T* gp = grad.data<T>();
  T* dxp = dx.data<T>();
  ForEachWindow(x.shape(), grad.shape(), p, [&](const Window& win) {
    const Pos m = ArgMax<T>(x, win);
    if (m.h < 0) return;
    dxp[Offset(dx.strides(), win.n, win.c, m.h, m.w)] +=
        gp[Offset(grad.strides(), win.n, win.c, win.oh, win.ow)];
  });
}

template <typename T>
void RefAvgPool(const Tensor& x, const Tensor& y, const Pool2dOptions& p) {
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  const T area = static_cast<T>(p.kernel[0] * p.kernel[1]);
  ForEachWindow(x.shape(), y.shape(), p, [&](const Window& win) {
    T sum = 0;
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) sum += xp[Offset(x.strides(), win.n, win.c, h, w)];
    }
    yp[Offset(y.strides(), win.n, win.c, win.oh, win.ow)] = sum / area;
  });
}

template <typename T>
void RefAvgPoolBackward(const Tensor& grad, const Tensor& dx, const Pool2dOptions& p) {
  const T* gp = grad.data<T>();
  T* dxp = dx.data<T>();
  const T area = static_cast<T>(p.kernel[0] * p.kernel[1]);
  ForEachWindow(dx.shape(), grad.shape(), p, [&](const Window& win) {
    const T g = gp[Offset(grad.strides(), win.n, win.c, win.oh, win.ow)];
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) {
        dxp[Offset(dx.strides(), win.n, win.c, h, w)] += g / area;
      }
    }
  });
}

// Max pooling whose windows tile the input (kernel == stride, no padding or
// dilation, as MaxPool2d(k) has), on dense NCHW or NHWC data: the forward takes each
// window's maximum many outputs at a time (a row of windows, or a window's
// channels), which vectorises, and the backward finds each window's first
// maximum again from x instead of keeping a workspace. All follow ArgMax's
// rule (the first maximum in row-major order), so they give exactly the
// reference's results; oneDNN's pooling on plain NCHW took 3-4x longer, and
// its backward must rerun the forward.
enum class Tiling { kNone, kRowMajor, kChannelsLast };

// How max pooling of x runs tiled: `row_major` must all be contiguous for the
// NCHW loops, `channels_last` all channels-last for the NHWC loops (which
// take the others with any strides).
Tiling MaxPoolTiling(const Pool2dOptions& p, const Tensor& x,
                     std::initializer_list<const Tensor*> row_major,
                     std::initializer_list<const Tensor*> channels_last) {
  if (p.kernel != p.stride || p.padding != Pair{0, 0} || p.dilation != Pair{1, 1} ||
      x.numel() == 0) {
    return Tiling::kNone;
  }
  auto all = [](std::initializer_list<const Tensor*> ts, auto pred) {
    return std::all_of(ts.begin(), ts.end(), pred);
  };
  if (all(row_major, [](const Tensor* t) { return t->is_contiguous(); })) return Tiling::kRowMajor;
  if (all(channels_last, [](const Tensor* t) { return t->is_channels_last(); })) {
    return Tiling::kChannelsLast;
  }
  return Tiling::kNone;
}

template <typename T>
void TiledMaxPoolForward(const Tensor& x, const Tensor& y, const Pool2dOptions& p) {
  const int64_t kh = p.kernel[0], kw = p.kernel[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = y.shape()[2], ow = y.shape()[3], planes = x.shape()[0] * x.shape()[1];
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
#pragma omp parallel for if (x.numel() >= kParallelElements)
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t r = 0; r < oh; ++r) {
      const T* window_row = xp + (plane * h + r * kh) * w;
      T* out = yp + (plane * oh + r) * ow;
      for (int64_t c = 0; c < ow; ++c) out[c] = window_row[c * kw];
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = i == 0 ? 1 : 0; j < kw; ++j) {
          const T* in = window_row + i * w + j;
          for (int64_t c = 0; c < ow; ++c) out[c] = in[c * kw] > out[c] ? in[c * kw] : out[c];
        }
      }
    }
  }
}

template <typename T>
void TiledMaxPoolBackward(const Tensor& grad, const Tensor& x, const Tensor& dx,
                          const Pool2dOptions& p) {
  const int64_t kh = p.kernel[0], kw = p.kernel[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = grad.shape()[2], ow = grad.shape()[3], planes = x.shape()[0] * x.shape()[1];
  const T* xp = x.data<T>();
  const T* gp = grad.data<T>();
  T* dxp = dx.data<T>();
  ZeroDense(dx);  // rows and columns no window covers stay 0
  // A row of windows at a time, in chunks: each window's first maximum is
  // tracked by selects across the chunk (which vectorise; a branch per
  // element mispredicts on relu's many tied zeros), then its grad is stored
  // at that position.
  constexpr int64_t kChunk = 256;
#pragma omp parallel for if (x.numel() >= kParallelElements)
  for (int64_t plane = 0; plane < planes; ++plane) {
    T best[kChunk];
    int64_t at[kChunk];
    for (int64_t r = 0; r < oh; ++r) {
      const T* window_row = xp + (plane * h + r * kh) * w;
      T* dx_row = dxp + (plane * h + r * kh) * w;
      const T* g = gp + (plane * oh + r) * ow;
      for (int64_t c0 = 0; c0 < ow; c0 += kChunk) {
        const int64_t n = std::min(kChunk, ow - c0);
        for (int64_t c = 0; c < n; ++c) {
          best[c] = window_row[(c0 + c) * kw];
          at[c] = 0;
        }
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = i == 0 ? 1 : 0; j < kw; ++j) {
            const T* in = window_row + i * w + j + c0 * kw;
            for (int64_t c = 0; c < n; ++c) {
              const bool larger = in[c * kw] > best[c];
              best[c] = larger ? in[c * kw] : best[c];
              at[c] = larger ? i * w + j : at[c];
            }
          }
        }
        for (int64_t c = 0; c < n; ++c) dx_row[(c0 + c) * kw + at[c]] = g[c0 + c];
      }
    }
  }
}

// The NHWC loops: a window's C channels are contiguous in x, so each step
// takes a chunk of them at once into a local buffer, whose results are then
// stored through the strides of y (or read through those of grad). The loops
// across a chunk carry `omp simd`: GCC vectorises them at -O2, which this
// library builds with, only when told to.
constexpr int64_t kChannelChunk = 128;

// best[c] = the maximum of channel c over the kh x kw window of NHWC data
// whose first tap is at `first` (`len` channels, taps `channels` apart along a
// row and `row_stride` down), with ArgMax's comparison.
template <typename T>
void WindowMax(const T* first, int64_t kh, int64_t kw, int64_t row_stride, int64_t channels,
               int64_t len, T* best) {
  std::copy(first, first + len, best);
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = i == 0 ? 1 : 0; j < kw; ++j) {
      const T* in = first + i * row_stride + j * channels;
#pragma omp simd
      for (int64_t c = 0; c < len; ++c) best[c] = in[c] > best[c] ? in[c] : best[c];
    }
  }
}

template <typename T>
void TiledMaxPoolForwardChannelsLast(const Tensor& x, const Tensor& y, const Pool2dOptions& p) {
  const int64_t kh = p.kernel[0], kw = p.kernel[1];
  const int64_t channels = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = y.shape()[2], ow = y.shape()[3], rows = x.shape()[0] * oh;
  const std::vector<int64_t>& ys = y.strides();
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
#pragma omp parallel for if (x.numel() >= kParallelElements)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t n = row / oh, r = row % oh;
    T best[kChannelChunk];
    for (int64_t col = 0; col < ow; ++col) {
      const T* window = xp + ((n * h + r * kh) * w + col * kw) * channels;
      T* out = yp + Offset(ys, n, 0, r, col);
      for (int64_t c0 = 0; c0 < channels; c0 += kChannelChunk) {
        const int64_t len = std::min(kChannelChunk, channels - c0);
        WindowMax(window + c0, kh, kw, w * channels, channels, len, best);
        for (int64_t c = 0; c < len; ++c) out[(c0 + c) * ys[1]] = best[c];
      }
    }
  }
}

// The backward writes each window's part of dx whole: the grad at the
// window's first maximum, 0 elsewhere. That maximum is the first tap equal to
// the window's maximum; and the first tap is it unless a later one is larger
// (so also when it is NaN, which no later tap replaces). Selects, not
// branches, since relu's many tied zeros would mispredict.
template <typename T>
void TiledMaxPoolBackwardChannelsLast(const Tensor& grad, const Tensor& x, const Tensor& dx,
                                      const Pool2dOptions& p) {
  const int64_t kh = p.kernel[0], kw = p.kernel[1];
  const int64_t channels = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = grad.shape()[2], ow = grad.shape()[3], rows = x.shape()[0] * oh;
  const std::vector<int64_t>& gs = grad.strides();
  const T* xp = x.data<T>();
  const T* gp = grad.data<T>();
  T* dxp = dx.data<T>();
  // Rows and columns no window covers stay 0.
  if (oh * kh != h || ow * kw != w) ZeroDense(dx);
#pragma omp parallel for if (x.numel() >= kParallelElements)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t n = row / oh, r = row % oh;
    T best[kChannelChunk], unclaimed[kChannelChunk];
    for (int64_t col = 0; col < ow; ++col) {
      const int64_t window = ((n * h + r * kh) * w + col * kw) * channels;
      const T* g = gp + Offset(gs, n, 0, r, col);
      for (int64_t c0 = 0; c0 < channels; c0 += kChannelChunk) {
        const int64_t len = std::min(kChannelChunk, channels - c0);
        const T* first = xp + window + c0;
        T* dx_first = dxp + window + c0;
        WindowMax(first, kh, kw, w * channels, channels, len, best);
        for (int64_t c = 0; c < len; ++c) unclaimed[c] = g[(c0 + c) * gs[1]];
#pragma omp simd
        for (int64_t c = 0; c < len; ++c) {
          const bool hit = !(first[c] < best[c]);
          dx_first[c] = hit ? unclaimed[c] : T(0);
          unclaimed[c] = hit ? T(0) : unclaimed[c];
        }
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = i == 0 ? 1 : 0; j < kw; ++j) {
            const int64_t tap = (i * w + j) * channels;
#pragma omp simd
            for (int64_t c = 0; c < len; ++c) {
              const bool hit = first[tap + c] == best[c];
              dx_first[tap + c] = hit ? unclaimed[c] : T(0);
              unclaimed[c] = hit ? T(0) : unclaimed[c];
            }
          }
        }
      }
    }
  }
}

// Pooling primitives run on dense descs (oneDNN's pooling has fast kernels
// for plain layouts), NHWC when the pooled input is channels-last (x, or dx
// for the average's backward), else NCHW; a tensor in another layout is
// reordered.
// oneDNN's pooling_v2 takes a dilation, counted as the gap between taps (0
// for adjacent ones).
dnnl::memory::dims Gaps(const Pool2dOptions& p) { return {p.dilation[0] - 1, p.dilation[1] - 1}; }

dnnl::pooling_v2_forward::primitive_desc PoolForward(dnnl::prop_kind prop, dnnl::algorithm alg,
                                                     const Tensor& x, const Tensor& y,
                                                     const Pool2dOptions& p) {
  const bool nhwc = x.is_channels_last();
  return {{prop, alg, DenseDesc(x, nhwc), DenseDesc(y, nhwc), Dims(p.stride), Dims(p.kernel),
           Gaps(p), Dims(p.padding), Dims(p.padding)},
          Engine()};
}

// Pooling backward from grad into dx, in the layouts of the forward `hint`.
dnnl::pooling_v2_backward::primitive_desc PoolBackward(
    dnnl::algorithm alg, const Pool2dOptions& p,
    const dnnl::pooling_v2_forward::primitive_desc& hint) {
  return {{alg, hint.src_desc(), hint.dst_desc(), Dims(p.stride), Dims(p.kernel), Gaps(p),
           Dims(p.padding), Dims(p.padding)},
          Engine(),
          hint};
}

PrimitiveKey PoolKey(PrimitiveKey::Kind kind, dnnl::algorithm alg, const Pool2dOptions& p) {
  PrimitiveKey key(kind);
  key.Add(static_cast<int64_t>(alg)).Add(p.kernel).Add(p.stride).Add(p.padding).Add(p.dilation);
  return key;
}

// y = pooling of x (slot 0) into y (slot 1).
void OneDnnPool(dnnl::algorithm alg, const Tensor& x, const Tensor& y, const Pool2dOptions& p) {
  PrimitiveKey key = PoolKey(PrimitiveKey::kPooling, alg, p);
  key.Add(x).Add(y);
  CachedPlan(key, [&](OneDnnPlan& plan) {
    const auto pd = PoolForward(dnnl::prop_kind::forward_inference, alg, x, y, p);
    AddWritingTo(plan, pd, dnnl::pooling_v2_forward(pd),
                 {{DNNL_ARG_SRC, Input(plan, pd, DNNL_ARG_SRC, 0, PlainDesc(x))}}, DNNL_ARG_DST, 1,
                 PlainDesc(y));
  }).Run({x.raw_data(), y.raw_data()});
}

absl::Status MaxPool2dInto(absl::Span<const Tensor> in, const Attrs& attrs,
                           absl::Span<const Tensor> out) {
  const Pool2dOptions p = Pool2dOptionsOf(attrs);
  const Tensor &x = in[0], &y = out[0];
  const Tiling tiling = MaxPoolTiling(p, x, {&x, &y}, {&x});
  if (tiling == Tiling::kRowMajor) {
    VisitFloatDType(y.dtype(), [&](auto zero) { TiledMaxPoolForward<decltype(zero)>(x, y, p); });
  } else if (tiling == Tiling::kChannelsLast) {
    VisitFloatDType(y.dtype(),
                    [&](auto zero) { TiledMaxPoolForwardChannelsLast<decltype(zero)>(x, y, p); });
  } else if (UseOneDnn({&x, &y}) && EveryWindowReachesInput(x.shape(), y.shape(), p)) {
    OneDnnPool(dnnl::algorithm::pooling_max, x, y, p);
  } else {
    VisitFloatDType(y.dtype(), [&](auto zero) { RefMaxPool<decltype(zero)>(x, y, p); });
  }
  return absl::OkStatus();
}

// max_pool2d_backward(grad, x): oneDNN's backward reads the argmax positions
// from the forward's workspace, so the plan reruns the forward in training
// mode into a pooled output and a workspace it owns, then runs the backward:
// grad (slot 0), x (slot 1), dx (slot 2).
void BuildMaxPoolBackwardPlan(const Tensor& grad, const Tensor& x, const Tensor& dx,
                              const Pool2dOptions& p, OneDnnPlan& plan) {
  const dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  const auto fwd = PoolForward(dnnl::prop_kind::forward_training, alg, x, grad, p);
  const memory workspace = plan.Internal(fwd.workspace_desc());
  plan.Add(dnnl::pooling_v2_forward(fwd),
           {{DNNL_ARG_SRC, Input(plan, fwd, DNNL_ARG_SRC, 1, PlainDesc(x))},
            {DNNL_ARG_DST, plan.Internal(fwd.dst_desc())},
            {DNNL_ARG_WORKSPACE, workspace}});
  const auto bwd = PoolBackward(alg, p, fwd);
  AddWritingTo(plan, bwd, dnnl::pooling_v2_backward(bwd),
               {{DNNL_ARG_DIFF_DST, Input(plan, bwd, DNNL_ARG_DIFF_DST, 0, PlainDesc(grad))},
                {DNNL_ARG_WORKSPACE, workspace}},
               DNNL_ARG_DIFF_SRC, 2, PlainDesc(dx));
}

absl::Status MaxPool2dBackwardInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                   absl::Span<const Tensor> out) {
  const Pool2dOptions p = Pool2dOptionsOf(attrs);
  const Tensor &grad = in[0], &x = in[1], &dx = out[0];
  const Tiling tiling = MaxPoolTiling(p, x, {&grad, &x, &dx}, {&x, &dx});
  if (tiling == Tiling::kRowMajor) {
    VisitFloatDType(dx.dtype(),
                    [&](auto zero) { TiledMaxPoolBackward<decltype(zero)>(grad, x, dx, p); });
    return absl::OkStatus();
  }
  if (tiling == Tiling::kChannelsLast) {
    VisitFloatDType(dx.dtype(), [&](auto zero) {
      TiledMaxPoolBackwardChannelsLast<decltype(zero)>(grad, x, dx, p);
    });
    return absl::OkStatus();
  }
  if (!UseOneDnn({&grad, &x, &dx}) || !EveryWindowReachesInput(x.shape(), grad.shape(), p)) {
    ZeroDense(dx);
    VisitFloatDType(dx.dtype(),
                    [&](auto zero) { RefMaxPoolBackward<decltype(zero)>(grad, x, dx, p); });
    return absl::OkStatus();
  }
  PrimitiveKey key = PoolKey(PrimitiveKey::kPoolingBackward, dnnl::algorithm::pooling_max, p);
  key.Add(grad).Add(x).Add(dx);
  CachedPlan(key, [&](OneDnnPlan& plan) {
    BuildMaxPoolBackwardPlan(grad, x, dx, p, plan);
  }).Run({grad.raw_data(), x.raw_data(), dx.raw_data()});
  return absl::OkStatus();
}

absl::Status AvgPool2dInto(absl::Span<const Tensor> in, const Attrs& attrs,
                           absl::Span<const Tensor> out) {
  const Pool2dOptions p = Pool2dOptionsOf(attrs);
  const Tensor &x = in[0], &y = out[0];
  if (UseOneDnn({&x, &y})) {
    OneDnnPool(dnnl::algorithm::pooling_avg_include_padding, x, y, p);
  } else {
    VisitFloatDType(y.dtype(), [&](auto zero) { RefAvgPool<decltype(zero)>(x, y, p); });
  }
  return absl::OkStatus();
}

// avg_pool2d_backward(grad){input_shape}: grad (slot 0) into dx (slot 1).
absl::Status AvgPool2dBackwardInto(absl::Span<const Tensor> in, const Attrs& attrs,
                                   absl::Span<const Tensor> out) {
  const Pool2dOptions p = Pool2dOptionsOf(attrs);
  const Tensor &grad = in[0], &dx = out[0];
  if (!UseOneDnn({&grad, &dx})) {
    ZeroDense(dx);
    VisitFloatDType(dx.dtype(),
                    [&](auto zero) { RefAvgPoolBackward<decltype(zero)>(grad, dx, p); });
    return absl::OkStatus();
  }
  const dnnl::algorithm alg = dnnl::algorithm::pooling_avg_include_padding;
  PrimitiveKey key = PoolKey(PrimitiveKey::kPoolingBackward, alg, p);
  key.Add(grad).Add(dx);
  CachedPlan(key, [&](OneDnnPlan& plan) {
    const auto fwd = PoolForward(dnnl::prop_kind::forward_training, alg, dx, grad, p);
    const auto bwd = PoolBackward(alg, p, fwd);
    AddWritingTo(plan, bwd, dnnl::pooling_v2_backward(bwd),
                 {{DNNL_ARG_DIFF_DST, Input(plan, bwd, DNNL_ARG_DIFF_DST, 0, PlainDesc(grad))}},
                 DNNL_ARG_DIFF_SRC, 1, PlainDesc(dx));
  }).Run({grad.raw_data(), dx.raw_data()});
  return absl::OkStatus();
}

}  // namespace

void RegisterConvPoolKernels(KernelTable& t) {
  BindInto<&Conv2dInto>(t, OpKind::kConv2d);
  BindInto<&Conv2dBackwardDataInto>(t, OpKind::kConv2dBackwardData);
  BindInto<&Conv2dBackwardWeightInto>(t, OpKind::kConv2dBackwardWeight);
  BindInto<&MaxPool2dInto>(t, OpKind::kMaxPool2d);
  BindInto<&MaxPool2dBackwardInto>(t, OpKind::kMaxPool2dBackward);
  BindInto<&AvgPool2dInto>(t, OpKind::kAvgPool2d);
  BindInto<&AvgPool2dBackwardInto>(t, OpKind::kAvgPool2dBackward);
}

}  // namespace tc::kernels
