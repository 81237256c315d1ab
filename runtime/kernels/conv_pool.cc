// Eager kernels: conv2d and its backwards, max/avg pooling and their backwards.
//
// f32 runs on oneDNN; f64 runs on direct reference loops, and so does any call
// with a zero-size operand (the loops need no special case for it). Both paths follow
// the same conventions: NCHW; weight [O, C/groups, KH, KW]; symmetric padding;
// average pooling divides by the full kernel area (padding counts); max pooling
// ignores padding and gives a window's gradient to its first maximum in
// row-major order.
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "runtime/kernels/dtype_dispatch.h"
#include "runtime/kernels/onednn.h"
#include "runtime/kernels/registry.h"

namespace tc::kernels {
namespace {

using dnnl::memory;
using Pair = std::array<int64_t, 2>;

Pair ReadPair(const Attrs& attrs, absl::string_view name) {
  const std::vector<int64_t>& v = attrs.Ints(name);
  return {v[0], v[1]};
}

// Element offset of (n, c, h, w) in a rank-4 tensor with `strides`.
int64_t Offset(const std::vector<int64_t>& strides, int64_t n, int64_t c, int64_t h, int64_t w) {
  return n * strides[0] + c * strides[1] + h * strides[2] + w * strides[3];
}

// Whether oneDNN runs this call: f32 with no zero-size operand.
bool UseOneDnn(std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands) {
    if (!OneDnnSupports(t->dtype()) || t->numel() == 0) return false;
  }
  return true;
}

// A new output of type `t` computed from `inputs`: uninitialised when oneDNN
// runs the call and writes every element, zeros for the reference loops, which
// accumulate.
Tensor NewOutput(const TensorType& t, std::initializer_list<const Tensor*> inputs) {
  const bool onednn = UseOneDnn(inputs) && NumElements(t.shape) > 0;
  return onednn ? Tensor::Uninitialized(t.shape, t.dtype) : Tensor::Empty(t.shape, t.dtype);
}

memory::dims Dims(const Pair& p) { return {p[0], p[1]}; }

memory::desc AnyLayout(const memory::desc& plain) {
  return memory::desc(plain.dims(), plain.data_type(), memory::format_tag::any);
}

// A memory of `desc` over this thread's scratch buffer for execution argument
// `arg`, grown as needed and kept between calls (a fresh buffer per call costs
// page faults on every first touch). Every primitive here has finished when
// its kernel returns, so the buffer is free for the next call.
memory Scratch(int arg, const memory::desc& desc) {
  thread_local absl::flat_hash_map<int, std::unique_ptr<Storage>> buffers;
  std::unique_ptr<Storage>& buffer = buffers[arg];
  const int64_t bytes = static_cast<int64_t>(desc.get_size());
  if (buffer == nullptr || buffer->bytes() < bytes) {
    buffer = std::make_unique<Storage>(bytes, /*zeroed=*/false);
  }
  return memory(desc, Engine(), buffer->data());
}

// `t`'s data as a memory in the layout `want`: the tensor itself when its own
// layout already is `want`, else a reordered copy in `arg`'s scratch buffer.
memory InLayout(int arg, const Tensor& t, const memory::desc& plain, const memory::desc& want) {
  memory own = Memory(plain, t);
  if (plain == want) return own;
  memory copy = Scratch(arg, want);
  dnnl::reorder(own, copy).execute(Stream(), own, copy);
  return copy;
}

// An execution argument held by a tensor, with the tensor's plain desc.
struct PlainArg {
  int arg;
  const Tensor& t;
  memory::desc plain;
};

// Executes `prim` from `pd` on plain tensors: each input is reordered into the
// layout the primitive chose (when it differs), the output is written in that
// layout and reordered back into `out.t`. `extra` holds arguments already in
// the primitive's layouts (a pooling workspace).
void Execute(const dnnl::primitive_desc& pd, const dnnl::primitive& prim,
             std::initializer_list<PlainArg> inputs, const PlainArg& out,
             std::unordered_map<int, memory> extra = {}) {
  for (const PlainArg& in : inputs) {
    extra[in.arg] = InLayout(in.arg, in.t, in.plain, pd.query_md(dnnl::query::exec_arg_md, in.arg));
  }
  const memory::desc out_want = pd.query_md(dnnl::query::exec_arg_md, out.arg);
  memory out_plain = Memory(out.plain, out.t);
  memory out_mem = out.plain == out_want ? out_plain : Scratch(out.arg, out_want);
  extra[out.arg] = out_mem;
  prim.execute(Stream(), extra);
  if (out_mem != out_plain) dnnl::reorder(out_mem, out_plain).execute(Stream(), out_mem, out_plain);
  Stream().wait();
}

// ---- convolution

struct ConvParams {
  Pair stride, padding, dilation;
  int64_t groups;
};

ConvParams ReadConv(const Attrs& attrs) {
  return {ReadPair(attrs, "stride"), ReadPair(attrs, "padding"), ReadPair(attrs, "dilation"),
          attrs.Int("groups")};
}

enum class ConvPass { kForward, kBackwardData, kBackwardWeight };

// Calls fn(x_offset, w_offset, y_offset) once per multiply-add of conv2d(x, w)
// = y: for every output element, each (input channel, kernel tap) whose input
// position is inside the (unpadded) input.
template <typename Fn>
void ForEachConvTap(const Tensor& x, const Tensor& w, const Tensor& y, const ConvParams& p, Fn fn) {
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

// The reference loops; the pass's output (y, x or w) is a zero-filled tensor.
template <typename T>
void RefConv(ConvPass pass, const Tensor& x, const Tensor& w, const Tensor& y,
             const ConvParams& p) {
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

// Layouts: every primitive is created with format_tag::any, so oneDNN picks its
// fastest (blocked) layouts, and Execute reorders the plain NCHW tensors in and
// out. The reorders also take non-contiguous inputs without a separate copy.
void OneDnnConv(ConvPass pass, const Tensor& x, const Tensor& w, const Tensor& y,
                const ConvParams& p) {
  const memory::desc xd = PlainDesc(x), wd = WeightDesc(w, p.groups), yd = PlainDesc(y);
  const memory::dims stride = Dims(p.stride), pad = Dims(p.padding);
  const memory::dims dilation = {p.dilation[0] - 1, p.dilation[1] - 1};  // oneDNN: 0 = dense
  const dnnl::prop_kind prop = pass == ConvPass::kForward ? dnnl::prop_kind::forward_inference
                                                          : dnnl::prop_kind::forward_training;
  const dnnl::algorithm alg = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::primitive_desc fwd(
      {prop, alg, AnyLayout(xd), AnyLayout(wd), AnyLayout(yd), stride, dilation, pad, pad},
      Engine());
  switch (pass) {
    case ConvPass::kForward:
      Execute(fwd, dnnl::convolution_forward(fwd),
              {{DNNL_ARG_SRC, x, xd}, {DNNL_ARG_WEIGHTS, w, wd}}, {DNNL_ARG_DST, y, yd});
      break;
    case ConvPass::kBackwardData: {
      const dnnl::convolution_backward_data::primitive_desc bwd(
          {alg, AnyLayout(xd), AnyLayout(wd), AnyLayout(yd), stride, dilation, pad, pad}, Engine(),
          fwd);
      Execute(bwd, dnnl::convolution_backward_data(bwd),
              {{DNNL_ARG_DIFF_DST, y, yd}, {DNNL_ARG_WEIGHTS, w, wd}}, {DNNL_ARG_DIFF_SRC, x, xd});
      break;
    }
    case ConvPass::kBackwardWeight: {
      const dnnl::convolution_backward_weights::primitive_desc bwd(
          {alg, AnyLayout(xd), AnyLayout(wd), AnyLayout(yd), stride, dilation, pad, pad}, Engine(),
          fwd);
      Execute(bwd, dnnl::convolution_backward_weights(bwd),
              {{DNNL_ARG_DIFF_DST, y, yd}, {DNNL_ARG_SRC, x, xd}}, {DNNL_ARG_DIFF_WEIGHTS, w, wd});
      break;
    }
  }
}

// Runs `pass` of conv2d(x, w) = y; the pass's output is a new zero-filled tensor.
void Conv(ConvPass pass, const Tensor& x, const Tensor& w, const Tensor& y, const ConvParams& p) {
  if (UseOneDnn({&x, &w, &y})) return OneDnnConv(pass, x, w, y, p);
  VisitFloatDType(x.dtype(), [&](auto zero) { RefConv<decltype(zero)>(pass, x, w, y, p); });
}

absl::StatusOr<TensorList> Conv2dKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                        absl::Span<const TensorType> out_types) {
  Tensor y = NewOutput(out_types[0], {&in[0], &in[1]});
  Conv(ConvPass::kForward, in[0], in[1], y, ReadConv(attrs));
  return TensorList{y};
}

// conv2d_backward_data(grad, w){input_shape} -> dL/dx.
absl::StatusOr<TensorList> Conv2dBackwardDataKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                                    absl::Span<const TensorType> out_types) {
  Tensor dx = NewOutput(out_types[0], {&in[0], &in[1]});
  Conv(ConvPass::kBackwardData, dx, in[1], in[0], ReadConv(attrs));
  return TensorList{dx};
}

// conv2d_backward_weight(grad, x){weight_shape} -> dL/dw.
absl::StatusOr<TensorList> Conv2dBackwardWeightKernel(absl::Span<const Tensor> in,
                                                      const Attrs& attrs,
                                                      absl::Span<const TensorType> out_types) {
  Tensor dw = NewOutput(out_types[0], {&in[0], &in[1]});
  Conv(ConvPass::kBackwardWeight, in[1], dw, in[0], ReadConv(attrs));
  return TensorList{dw};
}

// ---- pooling

struct PoolParams {
  Pair kernel, stride, padding;
};

PoolParams ReadPool(const Attrs& attrs) {
  return {ReadPair(attrs, "kernel"), ReadPair(attrs, "stride"), ReadPair(attrs, "padding")};
}

// One pooling window clipped to the input: rows [h0, h1), cols [w0, w1) of
// plane (n, c); `out` is the row-major index of its output element.
struct Window {
  int64_t out, n, c, h0, h1, w0, w1;
};

// Calls fn(window) for every output element of pooling an input of `in` shape.
template <typename Fn>
void ForEachWindow(const Shape& in, const Shape& out, const PoolParams& p, Fn fn) {
  int64_t index = 0;
  for (int64_t n = 0; n < out[0]; ++n) {
    for (int64_t c = 0; c < out[1]; ++c) {
      for (int64_t oh = 0; oh < out[2]; ++oh) {
        const int64_t h = oh * p.stride[0] - p.padding[0];
        for (int64_t ow = 0; ow < out[3]; ++ow) {
          const int64_t w = ow * p.stride[1] - p.padding[1];
          fn(Window{index++, n, c, std::max<int64_t>(h, 0), std::min(h + p.kernel[0], in[2]),
                    std::max<int64_t>(w, 0), std::min(w + p.kernel[1], in[3])});
        }
      }
    }
  }
}

// Position (h, w) of the window's first maximum in row-major order; h < 0
// for a window holding no input element (only for a zero-size input).
struct Pos {
  int64_t h = -1, w = -1;
};

template <typename T>
Pos ArgMax(const Tensor& x, const Window& win) {
  const T* xp = x.data<T>();
  Pos best;
  T best_value = 0;
  for (int64_t h = win.h0; h < win.h1; ++h) {
    for (int64_t w = win.w0; w < win.w1; ++w) {
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
void RefMaxPool(const Tensor& x, const Tensor& y, const PoolParams& p) {
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  ForEachWindow(x.shape(), y.shape(), p, [&](const Window& win) {
    const Pos m = ArgMax<T>(x, win);
    yp[win.out] = m.h < 0 ? -std::numeric_limits<T>::infinity()
                          : xp[Offset(x.strides(), win.n, win.c, m.h, m.w)];
  });
}

// dx (contiguous, zero-filled) gets each window's grad at the window's argmax.
template <typename T>
void RefMaxPoolBackward(const Tensor& grad, const Tensor& x, const Tensor& dx,
                        const PoolParams& p) {
  const Tensor g = grad.contiguous();
  const T* gp = g.data<T>();
  T* dxp = dx.data<T>();
  ForEachWindow(x.shape(), g.shape(), p, [&](const Window& win) {
    const Pos m = ArgMax<T>(x, win);
    if (m.h >= 0) dxp[Offset(dx.strides(), win.n, win.c, m.h, m.w)] += gp[win.out];
  });
}

template <typename T>
void RefAvgPool(const Tensor& x, const Tensor& y, const PoolParams& p) {
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  const T area = static_cast<T>(p.kernel[0] * p.kernel[1]);
  ForEachWindow(x.shape(), y.shape(), p, [&](const Window& win) {
    T sum = 0;
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) sum += xp[Offset(x.strides(), win.n, win.c, h, w)];
    }
    yp[win.out] = sum / area;
  });
}

template <typename T>
void RefAvgPoolBackward(const Tensor& grad, const Tensor& dx, const PoolParams& p) {
  const Tensor g = grad.contiguous();
  const T* gp = g.data<T>();
  T* dxp = dx.data<T>();
  const T area = static_cast<T>(p.kernel[0] * p.kernel[1]);
  ForEachWindow(dx.shape(), g.shape(), p, [&](const Window& win) {
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) {
        dxp[Offset(dx.strides(), win.n, win.c, h, w)] += gp[win.out] / area;
      }
    }
  });
}

// Pooling primitives take plain contiguous NCHW descs directly (oneDNN's
// pooling has fast kernels for plain layouts; callers pass contiguous tensors).
dnnl::pooling_forward::primitive_desc PoolForward(dnnl::prop_kind prop, dnnl::algorithm alg,
                                                  const Tensor& x, const Tensor& y,
                                                  const PoolParams& p) {
  return {{prop, alg, PlainDesc(x), PlainDesc(y), Dims(p.stride), Dims(p.kernel), Dims(p.padding),
           Dims(p.padding)},
          Engine()};
}

// Pooling backward from grad into dx (both contiguous).
dnnl::pooling_backward::primitive_desc PoolBackward(
    dnnl::algorithm alg, const Tensor& grad, const Tensor& dx, const PoolParams& p,
    const dnnl::pooling_forward::primitive_desc& hint) {
  return {{alg, PlainDesc(dx), PlainDesc(grad), Dims(p.stride), Dims(p.kernel), Dims(p.padding),
           Dims(p.padding)},
          Engine(),
          hint};
}

void OneDnnPool(dnnl::algorithm alg, const Tensor& x, const Tensor& y, const PoolParams& p) {
  const auto pd = PoolForward(dnnl::prop_kind::forward_inference, alg, x, y, p);
  Execute(pd, dnnl::pooling_forward(pd), {{DNNL_ARG_SRC, x, PlainDesc(x)}},
          {DNNL_ARG_DST, y, PlainDesc(y)});
}

absl::StatusOr<TensorList> MaxPool2dKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                           absl::Span<const TensorType> out_types) {
  const PoolParams p = ReadPool(attrs);
  Tensor y = Tensor::Uninitialized(out_types[0].shape, out_types[0].dtype);  // all written
  if (UseOneDnn({&in[0], &y})) {
    OneDnnPool(dnnl::algorithm::pooling_max, in[0].contiguous(), y, p);
  } else {
    VisitFloatDType(y.dtype(), [&](auto zero) { RefMaxPool<decltype(zero)>(in[0], y, p); });
  }
  return TensorList{y};
}

// max_pool2d_backward(grad, x): oneDNN's backward reads the argmax positions
// from the forward's workspace, so the forward is rerun in training mode.
absl::StatusOr<TensorList> MaxPool2dBackwardKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                                   absl::Span<const TensorType> out_types) {
  const PoolParams p = ReadPool(attrs);
  Tensor dx = NewOutput(out_types[0], {&in[0], &in[1]});
  if (!UseOneDnn({&in[0], &in[1]})) {
    VisitFloatDType(dx.dtype(),
                    [&](auto zero) { RefMaxPoolBackward<decltype(zero)>(in[0], in[1], dx, p); });
    return TensorList{dx};
  }
  const Tensor grad = in[0].contiguous(), x = in[1].contiguous();
  const dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  const auto fwd = PoolForward(dnnl::prop_kind::forward_training, alg, x, grad, p);
  memory y = Scratch(DNNL_ARG_DST, fwd.dst_desc());
  memory workspace = Scratch(DNNL_ARG_WORKSPACE, fwd.workspace_desc());
  dnnl::pooling_forward(fwd).execute(Stream(), {{DNNL_ARG_SRC, Memory(PlainDesc(x), x)},
                                                {DNNL_ARG_DST, y},
                                                {DNNL_ARG_WORKSPACE, workspace}});
  const auto bwd = PoolBackward(alg, grad, dx, p, fwd);
  Execute(bwd, dnnl::pooling_backward(bwd), {{DNNL_ARG_DIFF_DST, grad, PlainDesc(grad)}},
          {DNNL_ARG_DIFF_SRC, dx, PlainDesc(dx)}, {{DNNL_ARG_WORKSPACE, workspace}});
  return TensorList{dx};
}

absl::StatusOr<TensorList> AvgPool2dKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                           absl::Span<const TensorType> out_types) {
  const PoolParams p = ReadPool(attrs);
  Tensor y = Tensor::Uninitialized(out_types[0].shape, out_types[0].dtype);  // all written
  if (UseOneDnn({&in[0], &y})) {
    OneDnnPool(dnnl::algorithm::pooling_avg_include_padding, in[0].contiguous(), y, p);
  } else {
    VisitFloatDType(y.dtype(), [&](auto zero) { RefAvgPool<decltype(zero)>(in[0], y, p); });
  }
  return TensorList{y};
}

// avg_pool2d_backward(grad){input_shape}.
absl::StatusOr<TensorList> AvgPool2dBackwardKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                                   absl::Span<const TensorType> out_types) {
  const PoolParams p = ReadPool(attrs);
  Tensor dx = NewOutput(out_types[0], {&in[0]});
  if (!UseOneDnn({&in[0], &dx})) {
    VisitFloatDType(dx.dtype(),
                    [&](auto zero) { RefAvgPoolBackward<decltype(zero)>(in[0], dx, p); });
    return TensorList{dx};
  }
  const Tensor grad = in[0].contiguous();
  const dnnl::algorithm alg = dnnl::algorithm::pooling_avg_include_padding;
  const auto fwd = PoolForward(dnnl::prop_kind::forward_training, alg, dx, grad, p);
  const auto bwd = PoolBackward(alg, grad, dx, p, fwd);
  Execute(bwd, dnnl::pooling_backward(bwd), {{DNNL_ARG_DIFF_DST, grad, PlainDesc(grad)}},
          {DNNL_ARG_DIFF_SRC, dx, PlainDesc(dx)});
  return TensorList{dx};
}

}  // namespace

void RegisterConvPoolKernels(KernelTable& t) {
  auto set = [&](OpKind op, KernelFn fn) { t.eager[static_cast<int>(op)] = fn; };
  set(OpKind::kConv2d, &Conv2dKernel);
  set(OpKind::kConv2dBackwardData, &Conv2dBackwardDataKernel);
  set(OpKind::kConv2dBackwardWeight, &Conv2dBackwardWeightKernel);
  set(OpKind::kMaxPool2d, &MaxPool2dKernel);
  set(OpKind::kMaxPool2dBackward, &MaxPool2dBackwardKernel);
  set(OpKind::kAvgPool2d, &AvgPool2dKernel);
  set(OpKind::kAvgPool2dBackward, &AvgPool2dBackwardKernel);
}

}  // namespace tc::kernels
