#include "codegen/executable.h"

#include <deque>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace tc::codegen {
namespace {

class FunctionExecutable : public Executable::Impl {
 public:
  FunctionExecutable(Executable::Fn fn, int num_outputs)
      : fn_(std::move(fn)), num_outputs_(num_outputs) {}

  absl::Status Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const override {
    TC_ASSIGN_OR_RETURN(std::vector<Tensor> out, fn_(args));
    if (out.size() != outputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("the compiled function returned ", out.size(),
                                                     " outputs, its graph has ", outputs.size()));
    }
    for (size_t i = 0; i < out.size(); ++i) outputs[i] = std::move(out[i]);
    return absl::OkStatus();
  }
  int num_outputs() const override { return num_outputs_; }

 private:
  Executable::Fn fn_;
  int num_outputs_;
};

// `inner` with trailing arguments that stay bound.
class BoundExecutable : public Executable::Impl {
 public:
  BoundExecutable(Executable inner, std::vector<Tensor> bound)
      : inner_(std::move(inner)), bound_(std::move(bound)) {}

  absl::Status Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const override {
    // Reused from call to call, so that a steady-state call allocates
    // nothing here; one per depth, since the inner executable may be bound
    // too (a deque: its elements stay where they are as it grows).
    thread_local std::deque<std::vector<Tensor>> argument_lists;
    thread_local size_t depth = 0;
    if (argument_lists.size() <= depth) argument_lists.emplace_back();
    std::vector<Tensor>& all = argument_lists[depth];
    all.assign(args.begin(), args.end());
    all.insert(all.end(), bound_.begin(), bound_.end());
    ++depth;
    const absl::Status s = inner_.Run(all, outputs);
    --depth;
    all.clear();
    return s;
  }
  int num_outputs() const override { return inner_.num_outputs(); }
  DimOrder output_order(int i) const override { return inner_.output_order(i); }
  PlannedMemory planned_memory() const override { return inner_.planned_memory(); }
  PlanCacheStats plan_cache() const override { return inner_.plan_cache(); }

 private:
  Executable inner_;
  std::vector<Tensor> bound_;
};

}  // namespace

Executable WithTrailingArguments(Executable inner, std::vector<Tensor> bound) {
  return Executable(std::make_shared<const BoundExecutable>(std::move(inner), std::move(bound)));
}

Executable::Executable(Fn fn, int num_outputs)
    : impl_(std::make_shared<FunctionExecutable>(std::move(fn), num_outputs)) {}

absl::StatusOr<std::vector<Tensor>> Executable::operator()(absl::Span<const Tensor> args) const {
  std::vector<Tensor> outputs(impl_->num_outputs());
  TC_RETURN_IF_ERROR(impl_->Run(args, absl::MakeSpan(outputs)));
  return outputs;
}

absl::Status Executable::Run(absl::Span<const Tensor> args, absl::Span<Tensor> outputs) const {
  if (static_cast<int>(outputs.size()) != impl_->num_outputs()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected room for ", impl_->num_outputs(), " outputs, got ", outputs.size()));
  }
  return impl_->Run(args, outputs);
}

}  // namespace tc::codegen
