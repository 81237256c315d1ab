// The op declarations of each family, assembled into the op table by
// graph/op_def.cc. One function per file in this folder.
#ifndef TENSORCUT_GRAPH_OPS_FAMILIES_H_
#define TENSORCUT_GRAPH_OPS_FAMILIES_H_

#include <vector>

#include "graph/op_def.h"

namespace tc::ops_internal {

std::vector<OpDef> ElementwiseOpDefs();
std::vector<OpDef> CreationOpDefs();
std::vector<OpDef> ReductionOpDefs();
std::vector<OpDef> LayoutOpDefs();
std::vector<OpDef> NnOpDefs();
std::vector<OpDef> AttentionOpDefs();
std::vector<OpDef> LoweredOpDefs();
std::vector<OpDef> CollectiveOpDefs();

}  // namespace tc::ops_internal

#endif  // TENSORCUT_GRAPH_OPS_FAMILIES_H_
