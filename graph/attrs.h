// Attributes of an op call: named constants such as a reduction's dims, a
// convolution's stride or a dropout's probability. Kept sorted by name, so equal
// attribute sets print identically and compare equal.
//
//   Attrs a{{"dims", std::vector<int64_t>{1}}, {"keepdim", true}};
//   int64_t d = a.Int("dim");   // aborts if absent: a missing attr is a bug
#ifndef TENSORCUT_GRAPH_ATTRS_H_
#define TENSORCUT_GRAPH_ATTRS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/dtype.h"

namespace tc {

using AttrValue = std::variant<int64_t, double, bool, std::vector<int64_t>, DType, std::string>;

class Attrs {
 public:
  using Entry = std::pair<std::string, AttrValue>;

  Attrs() = default;
  Attrs(std::initializer_list<Entry> entries);

  void Set(std::string name, AttrValue value);
  bool Has(absl::string_view name) const;
  const AttrValue* Find(absl::string_view name) const;

  // Typed getters; an absent or mistyped attribute is an internal error.
  int64_t Int(absl::string_view name) const;
  double Float(absl::string_view name) const;  // also accepts an int attribute
  bool Bool(absl::string_view name) const;
  const std::vector<int64_t>& Ints(absl::string_view name) const;
  DType Dtype(absl::string_view name) const;
  const std::string& Str(absl::string_view name) const;

  const std::vector<Entry>& entries() const { return entries_; }
  bool operator==(const Attrs& o) const { return entries_ == o.entries_; }
  bool operator!=(const Attrs& o) const { return !(*this == o); }

  // "{dims=[1], keepdim=true}"; "" when empty. Doubles print so that parsing
  // them back gives the same bits.
  std::string ToString() const;

 private:
  std::vector<Entry> entries_;  // sorted by name
};

std::string AttrValueToString(const AttrValue& value);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_ATTRS_H_
