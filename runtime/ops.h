// The op set as plain C++ functions over Tensors: what models, VJP rules and
// tests call. Each function builds one call of an op from the op table
// (graph/ops.def) and goes through tc::Call, so the same code runs eagerly,
// records onto the autograd tape, or records into a graph while tracing.
// Errors throw tc::Error carrying the op's status (runtime/error.h).
//
//   Tensor h = tc::relu(tc::matmul(x, w) + b);
//   Tensor loss = tc::mean(tc::pow(h - y, 2.0));
#ifndef TENSORCUT_RUNTIME_OPS_H_
#define TENSORCUT_RUNTIME_OPS_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "graph/op_attrs.h"
#include "runtime/dispatch.h"
#include "runtime/error.h"
#include "runtime/random.h"
#include "runtime/tensor.h"

namespace tc {

// One call of `op`, throwing on error; returns output 0 / all outputs.
Tensor Call1(OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs = {});
TensorList CallN(OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs = {});

// ---- creation
Tensor empty(absl::Span<const int64_t> shape, DType dtype = DType::kF32);
Tensor full(absl::Span<const int64_t> shape, double value, DType dtype = DType::kF32);
Tensor zeros(absl::Span<const int64_t> shape, DType dtype = DType::kF32);
Tensor ones(absl::Span<const int64_t> shape, DType dtype = DType::kF32);
Tensor scalar(double value, DType dtype = DType::kF32);  // 0-d
Tensor arange(double start, double end, double step = 1, DType dtype = DType::kI64);
Tensor arange(int64_t end, DType dtype = DType::kI64);
// A scalar holding `size`: a constant for a number, a size_scalar node for a
// symbolic dim (a traced graph's batch size), valued when the graph runs.
Tensor size_scalar(int64_t size, DType dtype);
Tensor randn(absl::Span<const int64_t> shape, DType dtype = DType::kF32, Generator* gen = nullptr);
// Uniform in [low, high).
Tensor rand(absl::Span<const int64_t> shape, DType dtype = DType::kF32, Generator* gen = nullptr,
            double low = 0, double high = 1);
template <typename T>
Tensor from_vector(const std::vector<T>& values, absl::Span<const int64_t> shape);

// ---- elementwise (NumPy broadcasting; no implicit dtype promotion)
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
// Integers divide truncating toward zero (the most negative value over -1
// wraps to itself); a zero divisor is an error, eager and compiled.
Tensor div(const Tensor& a, const Tensor& b);
// Ties: the gradient goes half to each input. NaN propagates.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// Truth values (nonzero is true) combined elementwise, broadcasting -> bool.
Tensor logical_not(const Tensor& x);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
// x with `value` where the bool `mask` (which broadcasts to x's shape) is
// true; the filled elements take no gradient.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);  // log(1 + x), exact for small x
Tensor erf(const Tensor& x);    // the error function
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);  // gradient 0 at 0, as relu's
Tensor sign(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
// approximate: "none" (erf form) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor gelu_backward(const Tensor& grad, const Tensor& x, const std::string& approximate = "none");
Tensor pow(const Tensor& x, double exponent);
Tensor cast(const Tensor& x, DType dtype);
// x, through which no gradient flows (a floating x; what Tensor::detach()
// records for a traced tensor). Eagerly a copy.
Tensor stop_gradient(const Tensor& x);

// Scalars become 0-d tensors of the tensor operand's dtype.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

// ---- reductions ({} dims = all dims). Gradients: max/min share the
// gradient evenly among the elements equal to the extremum.
// A bool x is counted: the sum is i64, as PyTorch's.
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor max(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor min(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
// correction 1: unbiased (Bessel), 0: biased.
Tensor var(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           int64_t correction = 1);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// ---- linear algebra and layout
// 2-D or batched (rank >= 2, batch dims broadcast).
Tensor matmul(const Tensor& a, const Tensor& b);
// x [.., in] w [out, in] b [out] -> [.., out]; without a bias (an undefined b),
// x w^T.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = Tensor());
Tensor permute(const Tensor& x, std::vector<int64_t> dims);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor reshape(const Tensor& x, std::vector<int64_t> shape);  // one dim may be -1
Tensor expand(const Tensor& x, std::vector<int64_t> shape);
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
// The gradient of slice: `grad` placed into zeros of `input_shape`.
Tensor slice_backward(const Tensor& grad, std::vector<int64_t> input_shape, int64_t dim,
                      int64_t start, int64_t end, int64_t step);
Tensor concat(absl::Span<const Tensor> xs, int64_t dim);
// As PyTorch's (a negative dim or index counts from the end):
// x at `index` along `dim`, without that dim;
Tensor select(const Tensor& x, int64_t dim, int64_t index);
// xs (one type) along a new dim `dim` of size xs.size();
Tensor stack(absl::Span<const Tensor> xs, int64_t dim);
// x with a new dim of size 1 at `dim` (in [-rank - 1, rank]);
Tensor unsqueeze(const Tensor& x, int64_t dim);
// x without dim `dim` if its size is 1, else x; without `dim`, every size-1 dim gone.
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor squeeze(const Tensor& x);
// pads: [lo0, hi0, lo1, hi1, ...], one pair per dim, non-negative.
Tensor pad(const Tensor& x, std::vector<int64_t> pads, double value = 0);

// ---- neural-net primitives (NCHW)
Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dOptions& options = {});
// With a per-channel bias, [O] or [1, O, 1, 1].
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias,
              const Conv2dOptions& options = {});
Tensor conv2d_backward_data(const Tensor& grad, const Tensor& w, std::vector<int64_t> input_shape,
                            const Conv2dOptions& options);
Tensor conv2d_backward_weight(const Tensor& grad, const Tensor& x,
                              std::vector<int64_t> weight_shape, const Conv2dOptions& options);

// Ties: the first maximum in the window (row-major) takes the gradient.
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options);
Tensor max_pool2d_backward(const Tensor& grad, const Tensor& x, const Pool2dOptions& options);
// Padding counts in the divisor (PyTorch's count_include_pad=True).
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options);
Tensor avg_pool2d_backward(const Tensor& grad, std::vector<int64_t> input_shape,
                           const Pool2dOptions& options);

struct NormResult {
  Tensor y, mean, var;  // var is biased
};
struct NormGrads {
  Tensor x, weight, bias;
};
// Training mode: normalises by the batch statistics over (N, H, W) per channel.
NormResult batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
Tensor batch_norm_inference(const Tensor& x, const Tensor& weight, const Tensor& bias,
                            const Tensor& running_mean, const Tensor& running_var, double eps);
NormGrads batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                              const Tensor& mean, const Tensor& var, double eps);
// Normalises over dims [axis, rank); weight and bias have shape x.shape[axis:].
NormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t axis,
                      double eps);
NormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                              const Tensor& mean, const Tensor& var, int64_t axis, double eps);
// weight [num, dim], indices i64 of any shape -> indices.shape + [dim].
Tensor embedding(const Tensor& weight, const Tensor& indices);
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights);
// Zeroes each element with probability p and scales the rest by 1/(1-p); the
// mask is a pure function of (seed, offset + element index). seed and
// offset: i64 scalars, graph values when traced.
Tensor dropout(const Tensor& x, double p, const Tensor& seed, const Tensor& offset);
Tensor dropout(const Tensor& x, double p, uint64_t seed, uint64_t offset);
// Draws seed and offset from `gen` (default: the default generator; traced,
// from the captured graph's random inputs: DrawRandomState).
Tensor dropout(const Tensor& x, double p, Generator* gen = nullptr);

// `targets` (i64 class indices), checked when it runs: each one is a class
// in [0, classes) or ignore_index, else the call is an error (what the
// class losses read, eager and compiled).
Tensor check_class_index(const Tensor& targets, int64_t classes, int64_t ignore_index);

// Scaled dot-product attention, as torch.nn.functional.scaled_dot_product_attention:
// softmax(q k^T * scale + mask) v over q [..., S, D], k [..., T, D], v [..., T, Dv]
// (batch dims equal). `mask` (optional) broadcasts to [..., S, T]: bool, where
// true keys take part and false ones are masked out, or of q's dtype, added to
// the scores. `causal` masks keys j > i (top left aligned, as PyTorch's
// is_causal). `scale` defaults to 1/sqrt(D). A row with every key masked is NaN.
// Runs as one fused op that never stores the [S, T] probabilities.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& mask = Tensor(), bool causal = false,
                                    std::optional<double> scale = std::nullopt);
struct AttentionResult {
  Tensor out, lse;  // lse [..., S]: each row's log-sum-exp of its scores
};
struct AttentionGrads {
  Tensor q, k, v;
};
// The op itself (what the function above calls) and its backward.
AttentionResult sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                     bool causal, double scale);
AttentionGrads sdpa_backward(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& out, const Tensor& lse, const Tensor& mask, bool causal,
                             double scale);

// Collectives over the process group named `group` (runtime/collectives.h;
// "self": this process alone). all_reduce_start packs `tensors` (one dtype,
// f32 or f64) times `weight` (an f64 scalar) into a bucket and starts its sum
// over the group's processes; all_reduce_wait(bucket) returns it summed.
Tensor all_reduce_start(absl::Span<const Tensor> tensors, const Tensor& weight,
                        const std::string& group);
Tensor all_reduce_wait(const Tensor& bucket, const std::string& group);
// Both at once: each of `tensors` summed over the group, in one bucket.
TensorList all_reduce_sum(absl::Span<const Tensor> tensors, const std::string& group);
// A bucket's slices in the shapes of the `tensors` packed into it, in order.
TensorList unpack_bucket(const Tensor& bucket, absl::Span<const Tensor> tensors);

}  // namespace tc

#endif  // TENSORCUT_RUNTIME_OPS_H_
