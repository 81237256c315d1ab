#include "graph/op_def.h"

#include <algorithm>
#include <array>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "graph/ops/families.h"

namespace tc {
namespace {

constexpr absl::string_view kNames[] = {
#define TC_OP(enum_name, text, family) text,
#include "graph/ops.def"
#undef TC_OP
};
constexpr OpFamily kFamilies[] = {
#define TC_OP(enum_name, text, family) OpFamily::k##family,
#include "graph/ops.def"
#undef TC_OP
};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == kNumOps);

struct OpTable {
  std::array<OpDef, kNumOps> defs;
  std::array<OpKind, kNumOps> kinds;
  absl::flat_hash_map<absl::string_view, OpKind> by_name;
};

OpTable* BuildTable() {
  auto* table = new OpTable();
  std::array<bool, kNumOps> seen{};
  for (auto* family : {&ops_internal::ElementwiseOpDefs, &ops_internal::CreationOpDefs,
                       &ops_internal::ReductionOpDefs, &ops_internal::LayoutOpDefs,
                       &ops_internal::NnOpDefs, &ops_internal::AttentionOpDefs,
                       &ops_internal::LoweredOpDefs, &ops_internal::CollectiveOpDefs}) {
    for (OpDef& def : (*family)()) {
      const int i = static_cast<int>(def.kind);
      TC_CHECK(!seen[i], "op table: op '", kNames[i], "' declared twice");
      TC_CHECK(def.infer != nullptr, "op table: op '", kNames[i], "' has no shape inference");
      TC_CHECK(def.family == kFamilies[i], "op table: op '", kNames[i], "' in wrong family");
      seen[i] = true;
      def.name = kNames[i];
      table->defs[i] = std::move(def);
    }
  }
  for (int i = 0; i < kNumOps; ++i) {
    TC_CHECK(seen[i], "op table: op '", kNames[i], "' is in ops.def but not declared");
    table->kinds[i] = static_cast<OpKind>(i);
    table->by_name[kNames[i]] = static_cast<OpKind>(i);
  }
  return table;
}

const OpTable& Table() {
  static const OpTable* table = BuildTable();
  return *table;
}

bool AttrMatches(const AttrValue& v, AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt:
      return std::holds_alternative<int64_t>(v);
    case AttrKind::kFloat:
      return std::holds_alternative<double>(v) || std::holds_alternative<int64_t>(v);
    case AttrKind::kBool:
      return std::holds_alternative<bool>(v);
    case AttrKind::kInts:
      return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrKind::kDType:
      return std::holds_alternative<DType>(v);
    case AttrKind::kString:
    case AttrKind::kEnum:
      return std::holds_alternative<std::string>(v);
  }
  return false;
}

bool IsChoice(const AttrValue& v, absl::Span<const absl::string_view> choices) {
  return std::find(choices.begin(), choices.end(), std::get<std::string>(v)) != choices.end();
}

absl::string_view AttrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt:
      return "int";
    case AttrKind::kFloat:
      return "float";
    case AttrKind::kBool:
      return "bool";
    case AttrKind::kInts:
      return "int list";
    case AttrKind::kDType:
      return "dtype";
    case AttrKind::kString:
      return "string";
    case AttrKind::kEnum:
      return "string";
  }
  return "?";
}

}  // namespace

const OpDef& GetOpDef(OpKind kind) { return Table().defs[static_cast<int>(kind)]; }

absl::string_view OpName(OpKind kind) { return kNames[static_cast<int>(kind)]; }

bool OpDef::TakesEpilogue(DType dtype, absl::Span<const OpKind> chain) const {
  if (chain.empty()) return true;
  if (epilogue.max_length >= 0 && static_cast<int>(chain.size()) > epilogue.max_length) {
    return false;
  }
  const auto has = [](const auto& list, auto x) {
    return std::find(list.begin(), list.end(), x) != list.end();
  };
  if (!has(epilogue.dtypes, dtype)) return false;
  return std::all_of(chain.begin(), chain.end(), [&](OpKind op) { return has(epilogue.ops, op); });
}

absl::StatusOr<OpKind> OpKindFromName(absl::string_view name) {
  const auto& by_name = Table().by_name;
  auto it = by_name.find(name);
  if (it == by_name.end()) return absl::NotFoundError(absl::StrCat("unknown op '", name, "'"));
  return it->second;
}

absl::Span<const OpKind> AllOps() { return Table().kinds; }

bool OpDef::DeclaresAttr(absl::string_view name) const {
  return std::any_of(attrs.begin(), attrs.end(),
                     [&](const AttrSpec& spec) { return spec.name == name; });
}

absl::StatusOr<std::vector<TensorType>> InferTypes(OpKind kind, absl::Span<const TensorType> inputs,
                                                   const Attrs& attrs) {
  const OpDef& def = GetOpDef(kind);
  const int n = static_cast<int>(inputs.size());
  if (n < def.min_inputs || (def.max_inputs >= 0 && n > def.max_inputs)) {
    std::string expected = def.max_inputs < 0 ? absl::StrCat("at least ", def.min_inputs)
                           : def.min_inputs == def.max_inputs
                               ? absl::StrCat(def.min_inputs)
                               : absl::StrCat(def.min_inputs, " to ", def.max_inputs);
    return absl::InvalidArgumentError(
        absl::StrCat(def.name, ": expected ", expected, " inputs, got ", n));
  }
  for (const AttrSpec& spec : def.attrs) {
    const AttrValue* v = attrs.Find(spec.name);
    if (v == nullptr) {
      if (spec.optional) continue;
      return absl::InvalidArgumentError(
          absl::StrCat(def.name, ": missing attribute '", spec.name, "'"));
    }
    if (!AttrMatches(*v, spec.kind)) {
      return absl::InvalidArgumentError(absl::StrCat(def.name, ": attribute '", spec.name,
                                                     "' must be ", AttrKindName(spec.kind),
                                                     ", got ", AttrValueToString(*v)));
    }
    if (spec.kind == AttrKind::kEnum && !IsChoice(*v, spec.choices)) {
      return absl::InvalidArgumentError(absl::StrCat(
          def.name, ": attribute '", spec.name, "' must be one of ",
          absl::StrJoin(
              spec.choices, ", ",
              [](std::string* out, absl::string_view c) { absl::StrAppend(out, "\"", c, "\""); }),
          ", got ", AttrValueToString(*v)));
    }
  }
  for (const auto& [name, value] : attrs.entries()) {
    bool known = false;
    for (const AttrSpec& spec : def.attrs) known |= spec.name == name;
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(def.name, ": unknown attribute '", name, "'"));
    }
  }
  absl::StatusOr<std::vector<TensorType>> out = def.infer(inputs, attrs);
  if (!out.ok()) {
    return absl::Status(out.status().code(), absl::StrCat(def.name, ": ", out.status().message()));
  }
  return out;
}

OpCost EstimateCost(OpKind kind, absl::Span<const TensorType> inputs,
                    absl::Span<const TensorType> outputs, const Attrs& attrs) {
  const OpDef& def = GetOpDef(kind);
  if (def.cost != nullptr) return def.cost(inputs, outputs, attrs);
  OpCost cost;
  for (const TensorType& t : outputs) {
    cost.flops += t.numel();
    cost.bytes += t.bytes();
  }
  for (const TensorType& t : inputs) cost.bytes += t.bytes();
  return cost;
}

}  // namespace tc
