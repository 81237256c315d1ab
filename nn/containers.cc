#include "nn/containers.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "nn/layer_checks.h"

namespace tc::nn {
namespace {

[[noreturn]] void ThrowNoForward(absl::string_view container) {
  internal::ThrowInvalid(absl::StrCat(container, " has no forward of its own; call its modules"));
}

}  // namespace

// ---- Sequential

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  modules_.push_back(register_module(absl::StrCat(modules_.size()), std::move(module)));
}

TensorTree Sequential::forward(const TensorTree& input) {
  TensorTree out = input;
  for (const auto& m : modules_) out = (*m)(out);
  return out;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor out = x;
  for (const auto& m : modules_) out = (*m)(out);
  return out;
}

// ---- ModuleList

ModuleList::ModuleList(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  modules_.push_back(register_module(absl::StrCat(modules_.size()), std::move(module)));
}

const std::shared_ptr<Module>& ModuleList::operator[](size_t i) const {
  if (i >= modules_.size()) {
    throw Error(absl::OutOfRangeError(absl::StrCat("ModuleList: index ", i, " is out of range for ",
                                                   modules_.size(), " modules")));
  }
  return modules_[i];
}

std::string ModuleList::ToString() const {
  if (modules_.empty()) return "ModuleList()";
  std::vector<std::string> lines;
  for (size_t i = 0; i < modules_.size();) {
    const std::string repr = modules_[i]->ToString();
    size_t end = i + 1;
    while (end < modules_.size() && modules_[end]->ToString() == repr) ++end;
    const std::string indented = absl::StrReplaceAll(repr, {{"\n", "\n  "}});
    lines.push_back(end - i == 1
                        ? absl::StrCat("(", i, "): ", indented)
                        : absl::StrCat("(", i, "-", end - 1, "): ", end - i, " x ", indented));
    i = end;
  }
  return absl::StrCat("ModuleList(\n  ", absl::StrJoin(lines, "\n  "), "\n)");
}

Tensor ModuleList::forward(const Tensor&) { ThrowNoForward("ModuleList"); }
TensorTree ModuleList::forward(const TensorTree&) { ThrowNoForward("ModuleList"); }

// ---- ModuleDict

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> module) {
  if (key.empty() || absl::StrContains(key, '.')) {
    internal::ThrowInvalid(absl::StrCat(
        "ModuleDict: a key must be non-empty and contain no \".\", got \"", key, "\""));
  }
  if (contains(key)) internal::ThrowInvalid(absl::StrCat("ModuleDict: key \"", key, "\" exists"));
  register_module(key, std::move(module));
}

bool ModuleDict::contains(const std::string& key) const {
  for (const auto& [name, m] : named_children()) {
    if (name == key) return true;
  }
  return false;
}

const std::shared_ptr<Module>& ModuleDict::at(const std::string& key) const {
  for (const auto& [name, m] : named_children()) {
    if (name == key) return m;
  }
  throw Error(absl::NotFoundError(
      absl::StrCat("ModuleDict: no key \"", key, "\" (keys: ", absl::StrJoin(keys(), ", "), ")")));
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [name, m] : named_children()) out.push_back(name);
  return out;
}

Tensor ModuleDict::forward(const Tensor&) { ThrowNoForward("ModuleDict"); }
TensorTree ModuleDict::forward(const TensorTree&) { ThrowNoForward("ModuleDict"); }

// ---- Flatten

Tensor Flatten::forward(const Tensor& x) {
  const int64_t rank = x.dim();
  const absl::StatusOr<int64_t> start_or = WrapDim(start_dim_, rank);
  const absl::StatusOr<int64_t> end_or = WrapDim(end_dim_, rank);
  const int64_t start = start_or.value_or(-1), end = end_or.value_or(-1);
  if (!start_or.ok() || !end_or.ok() || start > end) {
    internal::ThrowInvalid(absl::StrCat("Flatten: dims [", start_dim_, ", ", end_dim_,
                                        "] do not fit an input ", x.type().ToString()));
  }
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged = DimMul(merged, x.size(d));
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + end + 1, x.shape().end());
  return reshape(x, std::move(shape));
}

std::string Flatten::extra_repr() const {
  return absl::StrCat("start_dim=", start_dim_, ", end_dim=", end_dim_);
}

}  // namespace tc::nn
