#include "graph/op_attrs.h"

#include <string>
#include <vector>

#include "base/check.h"

namespace tc {
namespace {

std::array<int64_t, 2> PairOf(const Attrs& attrs, absl::string_view name) {
  const std::vector<int64_t>& v = attrs.Ints(name);
  TC_CHECK(v.size() == 2, "attribute '", name, "' has ", v.size(), " values, not 2");
  return {v[0], v[1]};
}

std::vector<int64_t> Vec(const std::array<int64_t, 2>& a) { return {a[0], a[1]}; }

}  // namespace

Conv2dOptions Conv2dOptionsOf(const Attrs& attrs) {
  return {PairOf(attrs, "stride"), PairOf(attrs, "padding"), PairOf(attrs, "dilation"),
          attrs.Int("groups")};
}

Pool2dOptions Pool2dOptionsOf(const Attrs& attrs) {
  Pool2dOptions o{PairOf(attrs, "kernel"), PairOf(attrs, "stride"), PairOf(attrs, "padding")};
  if (attrs.Has("dilation")) o.dilation = PairOf(attrs, "dilation");
  return o;
}

GeluApproximation GeluApproximationOf(const Attrs& attrs) {
  const std::string& name = attrs.Str("approximate");
  for (size_t i = 0; i < std::size(kGeluApproximationNames); ++i) {
    if (name == kGeluApproximationNames[i]) return static_cast<GeluApproximation>(i);
  }
  TC_FAIL("approximate=\"", name, "\"");
}

std::vector<int> ReducedDimsOf(const Attrs& attrs, int64_t rank) {
  absl::StatusOr<std::vector<int64_t>> dims = NormalizeDims(attrs.Ints("dims"), rank);
  TC_CHECK(dims.ok(), dims.status().message());
  return std::vector<int>(dims->begin(), dims->end());
}

ElementwiseAttrs ElementwiseAttrsOf(OpKind op, const Attrs& attrs) {
  ElementwiseAttrs decoded;
  if (op == OpKind::kPow) decoded.exponent = attrs.Float("exponent");
  if (op == OpKind::kDropout) decoded.p = attrs.Float("p");
  if (op == OpKind::kGelu || op == OpKind::kGeluBackward) {
    decoded.approximation = GeluApproximationOf(attrs);
  }
  return decoded;
}

Attrs ToAttrs(const Conv2dOptions& o) {
  return {{"stride", Vec(o.stride)},
          {"padding", Vec(o.padding)},
          {"dilation", Vec(o.dilation)},
          {"groups", o.groups}};
}

Attrs ToAttrs(const Pool2dOptions& o) {
  Attrs attrs = {{"kernel", Vec(o.kernel)}, {"stride", Vec(o.stride)}, {"padding", Vec(o.padding)}};
  if (o.dilation != std::array<int64_t, 2>{1, 1}) attrs.Set("dilation", Vec(o.dilation));
  return attrs;
}

Attrs ToAttrs(GeluApproximation approximation) {
  return {{"approximate", std::string(kGeluApproximationNames[static_cast<int>(approximation)])}};
}

}  // namespace tc
