#include "runtime/dispatch.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/autograd_meta.h"
#include "runtime/error.h"
#include "runtime/kernels/registry.h"

namespace tc {
namespace {

const kernels::KernelTable& Kernels() {
  static const kernels::KernelTable* table = [] {
    auto* t = new kernels::KernelTable{};
    kernels::RegisterElementwiseKernels(*t);
    kernels::RegisterCreationKernels(*t);
    kernels::RegisterReductionKernels(*t);
    kernels::RegisterLayoutKernels(*t);
    kernels::RegisterConvPoolKernels(*t);
    kernels::RegisterNormKernels(*t);
    kernels::RegisterAttentionKernels(*t);
    kernels::RegisterCollectiveKernels(*t);
    return t;
  }();
  return *table;
}

thread_local std::vector<DispatchHook*> hooks;

absl::StatusOr<TensorList> RunFromHook(size_t depth, OpKind op, absl::Span<const Tensor> inputs,
                                       const Attrs& attrs, absl::Span<const TensorType> out_types) {
  if (depth == 0) return RunKernel(op, inputs, attrs, out_types);
  DispatchHook* hook = hooks[depth - 1];
  return hook->Dispatch(op, inputs, attrs, out_types,
                        [&]() { return RunFromHook(depth - 1, op, inputs, attrs, out_types); });
}

}  // namespace

KernelFn GetKernel(OpKind kind) { return Kernels().eager[static_cast<int>(kind)]; }
IntoKernelFn GetIntoKernel(OpKind kind) { return Kernels().into[static_cast<int>(kind)]; }

PostOpKernelFn GetPostOpKernel(OpKind kind) { return Kernels().post_op[static_cast<int>(kind)]; }

RandomState DrawRandomState(Generator& gen, int64_t n) {
  for (auto hook = hooks.rbegin(); hook != hooks.rend(); ++hook) {
    if (std::optional<RandomState> state = (*hook)->RandomStateFor(gen, n)) return *state;
  }
  auto scalar = [](uint64_t value) {
    Tensor t = Tensor::Empty({}, DType::kI64);
    *t.data<int64_t>() = static_cast<int64_t>(value);
    return t;
  };
  if (IsSymbolic(n)) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("a random op of ", DimToString(n), " elements outside a trace")));
  }
  const uint64_t seed = gen.seed();
  return {scalar(seed), scalar(gen.Advance(static_cast<uint64_t>(n)))};
}

absl::StatusOr<TensorList> RunKernel(OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs,
                                     absl::Span<const TensorType> out_types) {
  KernelFn kernel = GetKernel(op);
  if (kernel == nullptr) {
    return absl::UnimplementedError(absl::StrCat(OpName(op), ": no eager kernel"));
  }
  absl::StatusOr<TensorList> out = kernel(inputs, attrs, out_types);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat(OpName(op), ": ", out.status().message()));
  }
  return out;
}

absl::StatusOr<TensorList> Call(OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs) {
  std::vector<TensorType> in_types;
  in_types.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat(OpName(op), ": input ", i, " is an undefined tensor"));
    }
    in_types.push_back(inputs[i].type());
  }
  TC_ASSIGN_OR_RETURN(std::vector<TensorType> out_types, InferTypes(op, in_types, attrs));
  absl::StatusOr<TensorList> out = RunFromHook(hooks.size(), op, inputs, attrs, out_types);
  if (out.ok() && GradMode::IsEnabled() && !GetOpDef(op).Has(kTraitNonDifferentiable)) {
    for (const Tensor& t : inputs) {
      if (t.requires_grad()) {
        // An output must own its autograd state: give a kernel's pass-through
        // result a handle of its own.
        for (Tensor& o : *out) {
          for (const Tensor& i : inputs) {
            if (o.same(i)) o = o.detach();
          }
        }
        GetGradRecorder()(op, inputs, attrs, *out);
        break;
      }
    }
  }
  return out;
}

ScopedDispatchHook::ScopedDispatchHook(DispatchHook* hook) { hooks.push_back(hook); }
ScopedDispatchHook::~ScopedDispatchHook() { hooks.pop_back(); }

}  // namespace tc
