#include "codegen/step_profile.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace tc::codegen {
namespace {

thread_local StepProfile* active = nullptr;

StepGroup GroupOfOp(OpKind op) {
  switch (op) {
    case OpKind::kMatmul:
    case OpKind::kLinear:
    case OpKind::kConv2d:
    case OpKind::kConv2dBackwardData:
    case OpKind::kConv2dBackwardWeight:
      return StepGroup::kProducts;
    case OpKind::kSdpa:
    case OpKind::kSdpaBackward:
      return StepGroup::kAttention;
    case OpKind::kBatchNorm:
    case OpKind::kBatchNormInference:
    case OpKind::kBatchNormBackward:
    case OpKind::kLayerNorm:
    case OpKind::kLayerNormBackward:
      return StepGroup::kNorms;
    case OpKind::kFused:
      return StepGroup::kElementwise;
    case OpKind::kCast:
    case OpKind::kConcat:
    case OpKind::kPad:
    case OpKind::kSliceBackward:
    case OpKind::kPermute:
    case OpKind::kReshape:
    case OpKind::kExpand:
    case OpKind::kSlice:
      return StepGroup::kCopies;
    default:
      break;
  }
  const OpDef& def = GetOpDef(op);
  if (def.Has(kTraitElementwise)) return StepGroup::kElementwise;
  return def.family == OpFamily::kReduction ? StepGroup::kReductions : StepGroup::kOther;
}

// A fused region led by a kernel (an epilogue, codegen/fold_post_ops.h):
// that kernel's node, else null.
const Node* EpilogueKernel(const Node& node) {
  if (node.op() != OpKind::kFused || node.body() == nullptr) return nullptr;
  const std::vector<Node*> body = node.body()->nodes();
  if (body.empty() || GetOpDef(body.front()->op()).Has(kTraitFusible)) return nullptr;
  return body.front();
}

}  // namespace

absl::string_view StepGroupName(StepGroup group) {
  switch (group) {
    case StepGroup::kProducts:
      return "products";
    case StepGroup::kAttention:
      return "attention";
    case StepGroup::kNorms:
      return "norms";
    case StepGroup::kElementwise:
      return "elementwise";
    case StepGroup::kReductions:
      return "reductions";
    case StepGroup::kCopies:
      return "copies";
    case StepGroup::kOther:
      return "other";
  }
  return "?";
}

std::string StepName(const Node& node) {
  if (const Node* kernel = EpilogueKernel(node)) {
    std::string name(OpName(kernel->op()));
    bool first = true;
    for (const Node* inner : node.body()->nodes()) {
      if (!first) absl::StrAppend(&name, "+", OpName(inner->op()));
      first = false;
    }
    return name;
  }
  return std::string(OpName(node.op()));
}

StepGroup StepGroupOf(const Node& node) {
  const Node* kernel = EpilogueKernel(node);
  return GroupOfOp(kernel != nullptr ? kernel->op() : node.op());
}

void StepProfile::Add(const std::string& name, StepGroup group, double seconds) {
  Entry& e = entries_[name];
  e.group = group;
  ++e.calls;
  e.seconds += seconds;
}

double StepProfile::seconds(StepGroup group) const {
  double s = 0;
  for (const auto& [name, e] : entries_) {
    if (e.group == group) s += e.seconds;
  }
  return s;
}

double StepProfile::total_seconds() const {
  double s = 0;
  for (const auto& [name, e] : entries_) s += e.seconds;
  return s;
}

ScopedStepProfile::ScopedStepProfile(StepProfile& profile) : saved_(active) { active = &profile; }
ScopedStepProfile::~ScopedStepProfile() { active = saved_; }

StepProfile* ActiveStepProfile() { return active; }

}  // namespace tc::codegen
