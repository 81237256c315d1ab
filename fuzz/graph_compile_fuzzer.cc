// Graph compilation: a parsed, verified graph compiled by both compilers
// (each wrapped per size, so symbolic graphs run too) and run on small
// inputs. Each compile and each run gives a status or outputs of the types
// the graph declares; a crash, a hang or another type is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/fusing_compiler.h"
#include "codegen/interpreter.h"
#include "codegen/per_size.h"
#include "fuzz/fuzz_input.h"
#include "graph/parser.h"
#include "graph/symbolic.h"
#include "graph/verifier.h"
#include "runtime/ops.h"

namespace {

// Graphs whose values need more than this are skipped: the target fuzzes the
// compilers, not the machine's memory.
constexpr int64_t kMaxValueBytes = 16 << 20;

// A type with each symbolic dim at its hint.
tc::TensorType AtHints(const tc::TensorType& type) {
  tc::TensorType out = type;
  for (int64_t& dim : out.shape) dim = tc::DimHint(dim);
  return out;
}

bool IsSmall(const tc::Graph& graph) {
  int64_t bytes = 0;
  auto add = [&](const tc::Value* v) {
    const tc::TensorType type = AtHints(v->type());
    if (tc::CheckShapeSize(type.shape).ok())
      bytes += type.numel() * tc::ItemSize(type.dtype);
    else
      bytes = kMaxValueBytes + 1;
  };
  for (const tc::Value* p : graph.placeholders()) add(p);
  for (const tc::Node* n : graph.nodes()) {
    for (const tc::Value* v : n->results()) add(v);
    if (bytes > kMaxValueBytes) return false;
  }
  return bytes <= kMaxValueBytes;
}

// Small values of every dtype: -1, 0, 1, 2, -1, ...
std::vector<tc::Tensor> Arguments(const tc::Graph& graph) {
  std::vector<tc::Tensor> args;
  for (const tc::Value* p : graph.placeholders()) {
    const tc::TensorType type = AtHints(p->type());
    tc::Tensor values = tc::Tensor::Empty(type.shape, tc::DType::kF64);
    double* v = values.data<double>();
    for (int64_t i = 0; i < values.numel(); ++i) v[i] = static_cast<double>(i % 4 - 1);
    args.push_back(tc::cast(values, type.dtype));
  }
  return args;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::StatusOr<tc::Graph> graph =
      tc::Parse(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!graph.ok() || !tc::Verify(*graph).ok() || !IsSmall(*graph)) return 0;
  const std::vector<tc::Tensor> args = Arguments(*graph);
  for (const tc::codegen::Compiler& compiler : {tc::codegen::PerSize(tc::codegen::interpreter()),
                                                tc::codegen::PerSize(tc::codegen::fusing())}) {
    const absl::StatusOr<tc::codegen::Executable> executable = compiler(*graph);
    if (!executable.ok()) continue;
    const absl::StatusOr<std::vector<tc::Tensor>> outputs = (*executable)(args);
    if (!outputs.ok()) continue;
    for (size_t i = 0; i < outputs->size(); ++i) {
      const tc::TensorType declared = AtHints(graph->outputs()[i]->type());
      if ((*outputs)[i].type() != declared) {
        tc::fuzz::Fail(absl::StrCat("output ", i, " is ", (*outputs)[i].type().ToString(),
                                    ", the graph declares ", declared.ToString()));
      }
    }
  }
  return 0;
}
