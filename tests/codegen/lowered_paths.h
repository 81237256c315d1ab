// How a program runs each node of its lowered graph (Program::graph()), one
// line per node, for tests that check which path the fusing compiler took:
//
//   "linear+gelu+add"        an epilogue region: its kernel, then its chain
//   "fused{mul exp sum}"     a loop region: its body's ops
//   "conv2d+bias:nhwc"       any other node: its op, "+bias" for a biased
//                            convolution
//
// ":nhwc" follows when the node's first result is channels-last (for a loop
// region: when its pass runs in that order).
#ifndef TENSORCUT_TESTS_CODEGEN_LOWERED_PATHS_H_
#define TENSORCUT_TESTS_CODEGEN_LOWERED_PATHS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/ir.h"

namespace tc::testing {

std::vector<std::string> LoweredPaths(const Graph& lowered);

// Whether some path matches `pattern`, where '*' matches any characters.
bool HasPath(const std::vector<std::string>& paths, absl::string_view pattern);

}  // namespace tc::testing

#endif  // TENSORCUT_TESTS_CODEGEN_LOWERED_PATHS_H_
