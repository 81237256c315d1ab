#include "nn/named_tensors.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tc::nn {

std::string DescribeMismatch(const NamedTensors& expected, const NamedTensors& actual,
                             absl::string_view actual_label) {
  absl::flat_hash_map<absl::string_view, const Tensor*> by_name;
  for (const auto& [name, t] : actual) by_name.emplace(name, &t);
  absl::flat_hash_map<absl::string_view, bool> wanted;
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, want] : expected) {
    wanted.emplace(name, true);
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      missing.push_back(name);
    } else if (it->second->dtype() != want.dtype() || it->second->shape() != want.shape()) {
      mismatched.push_back(absl::StrCat(name, " (expected ", want.type().ToString(), ", ",
                                        actual_label, " ", it->second->type().ToString(), ")"));
    }
  }
  for (const auto& [name, t] : actual) {
    if (!wanted.contains(name)) unexpected.push_back(name);
  }
  std::vector<std::string> parts;
  if (!missing.empty()) parts.push_back(absl::StrCat("missing: ", absl::StrJoin(missing, ", ")));
  if (!unexpected.empty()) {
    parts.push_back(absl::StrCat("unexpected: ", absl::StrJoin(unexpected, ", ")));
  }
  if (!mismatched.empty()) {
    parts.push_back(absl::StrCat("mismatched: ", absl::StrJoin(mismatched, ", ")));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace tc::nn
