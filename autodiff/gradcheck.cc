#include "autodiff/gradcheck.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "autodiff/engine.h"
#include "base/status_macros.h"
#include "runtime/ops.h"

namespace tc {
namespace {

// A copy of `t` with its own storage and the same strides and offset, so a
// non-contiguous input stays non-contiguous while we perturb it.
Tensor DeepCopy(const Tensor& t) {
  auto storage = std::make_shared<Storage>(t.storage() ? t.storage()->bytes() : 0);
  if (t.storage() && t.storage()->bytes() > 0) {
    std::memcpy(storage->data(), t.storage()->data(), t.storage()->bytes());
  }
  return Tensor::View(storage, t.dtype(), t.shape(), t.strides(), t.offset());
}

// Storage offset (in elements, from data()) of row-major element `flat`.
int64_t StridedOffset(const Tensor& t, int64_t flat) {
  int64_t offset = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    offset += (flat % t.shape()[d]) * t.strides()[d];
    flat /= t.shape()[d];
  }
  return offset;
}

std::string IndexString(const Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return ShapeToString(index);
}

// sum_k <outputs[k], cotangents[k]> over the floating outputs.
Tensor Contract(const TensorList& outputs, const TensorList& cotangents) {
  Tensor total = scalar(0, DType::kF64);
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (cotangents[k].defined()) total = total + sum(outputs[k] * cotangents[k]);
  }
  return total;
}

}  // namespace

absl::Status gradcheck(const std::function<TensorList(const TensorList&)>& fn,
                       const TensorList& inputs, const GradcheckOptions& options) {
  TensorList args, checked;
  std::vector<size_t> checked_index;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (in.requires_grad() && in.dtype() != DType::kF64) {
      return absl::InvalidArgumentError(
          absl::StrCat("gradcheck: input ", i, " must be f64, got ", in.type().ToString()));
    }
    for (int64_t d = 0; d < in.dim(); ++d) {
      if (in.strides()[d] == 0 && in.shape()[d] > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("gradcheck: input ", i, " is an expanded view; pass a copy"));
      }
    }
    Tensor arg = DeepCopy(in.detach());
    if (in.requires_grad()) {
      arg.requires_grad_();
      checked.push_back(arg);
      checked_index.push_back(i);
    }
    args.push_back(arg);
  }
  if (checked.empty()) return absl::InvalidArgumentError("gradcheck: no input requires grad");

  TensorList outputs = fn(args);
  Generator gen(options.seed);
  TensorList cotangents;
  for (const Tensor& out : outputs) {
    cotangents.push_back(
        out.defined() && out.requires_grad() ? randn(out.shape(), DType::kF64, &gen) : Tensor());
  }
  TC_ASSIGN_OR_RETURN(TensorList analytic, grad({Contract(outputs, cotangents)}, checked));

  NoGradGuard no_grad;
  for (size_t c = 0; c < checked.size(); ++c) {
    const Tensor& x = args[checked_index[c]];
    double* p = static_cast<double*>(x.raw_data());
    const std::vector<double> a = analytic[c].to_vector<double>();
    for (int64_t j = 0; j < x.numel(); ++j) {
      double& v = p[StridedOffset(x, j)];
      const double saved = v;
      v = saved + options.eps;
      const double plus = Contract(fn(args), cotangents).item<double>();
      v = saved - options.eps;
      const double minus = Contract(fn(args), cotangents).item<double>();
      v = saved;
      const double numeric = (plus - minus) / (2 * options.eps);
      if (!(std::abs(a[j] - numeric) <= options.atol + options.rtol * std::abs(numeric))) {
        return absl::InternalError(absl::StrCat(
            "gradcheck: input ", checked_index[c], " ", x.type().ToString(), " element ",
            IndexString(x.shape(), j), ": analytic ", a[j], ", numeric ", numeric));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tc
