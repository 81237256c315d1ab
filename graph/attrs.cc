#include "graph/attrs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "graph/shape.h"

namespace tc {
namespace {

template <typename T>
const T& Get(const Attrs& attrs, absl::string_view name, const char* kind) {
  const AttrValue* v = attrs.Find(name);
  TC_CHECK(v != nullptr && std::holds_alternative<T>(*v), "attribute '", name, "' (", kind,
           ") missing in ", attrs.ToString());
  return std::get<T>(*v);
}

}  // namespace

Attrs::Attrs(std::initializer_list<Entry> entries) {
  for (const Entry& e : entries) Set(e.first, e.second);
}

void Attrs::Set(std::string name, AttrValue value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry& e, const std::string& n) { return e.first < n; });
  if (it != entries_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    entries_.insert(it, Entry(std::move(name), std::move(value)));
  }
}

const AttrValue* Attrs::Find(absl::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry& e, absl::string_view n) { return e.first < n; });
  return it != entries_.end() && it->first == name ? &it->second : nullptr;
}

bool Attrs::Has(absl::string_view name) const { return Find(name) != nullptr; }

int64_t Attrs::Int(absl::string_view name) const { return Get<int64_t>(*this, name, "int"); }
double Attrs::Float(absl::string_view name) const {
  const AttrValue* v = Find(name);
  if (v != nullptr && std::holds_alternative<int64_t>(*v)) return std::get<int64_t>(*v);
  return Get<double>(*this, name, "float");
}
bool Attrs::Bool(absl::string_view name) const { return Get<bool>(*this, name, "bool"); }
const std::vector<int64_t>& Attrs::Ints(absl::string_view name) const {
  return Get<std::vector<int64_t>>(*this, name, "ints");
}
DType Attrs::Dtype(absl::string_view name) const { return Get<DType>(*this, name, "dtype"); }
const std::string& Attrs::Str(absl::string_view name) const {
  return Get<std::string>(*this, name, "string");
}

std::string AttrValueToString(const AttrValue& value) {
  struct Printer {
    std::string operator()(int64_t v) const { return DimToString(v); }
    std::string operator()(double v) const {
      // %.17g round-trips every double; a trailing ".0" marks integral values
      // as floats so the parser does not read them back as ints.
      std::string s = absl::StrFormat("%.17g", v);
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::vector<int64_t>& v) const { return ShapeToString(v); }
    std::string operator()(DType v) const { return std::string(DTypeName(v)); }
    std::string operator()(const std::string& v) const { return absl::StrCat("\"", v, "\""); }
  };
  return std::visit(Printer{}, value);
}

std::string Attrs::ToString() const {
  if (entries_.empty()) return "";
  return absl::StrCat("{",
                      absl::StrJoin(entries_, ", ",
                                    [](std::string* out, const Entry& e) {
                                      absl::StrAppend(out, e.first, "=",
                                                      AttrValueToString(e.second));
                                    }),
                      "}");
}

}  // namespace tc
