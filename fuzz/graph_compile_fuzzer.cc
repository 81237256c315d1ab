// Graph compilation: a parsed, verified graph compiled by both compilers
// (each wrapped per size, so symbolic graphs run too) and run on small
// inputs. Each compile and each run gives a status or outputs of the types
// the graph declares, and where both compilers run, they agree; a crash, a
// hang, another type or a disagreement is a finding.
#include <algorithm>
#include <cmath>
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
  auto fits = [&](const tc::Value* v) {
    const tc::TensorType type = AtHints(v->type());
    if (!tc::CheckShapeSize(type.shape).ok()) return false;
    const int64_t item = tc::ItemSize(type.dtype);
    if (type.numel() > (kMaxValueBytes - bytes) / item) return false;
    bytes += type.numel() * item;
    return true;
  };
  for (const tc::Value* p : graph.placeholders()) {
    if (!fits(p)) return false;
  }
  for (const tc::Node* n : graph.nodes()) {
    for (const tc::Value* v : n->results()) {
      if (!fits(v)) return false;
    }
  }
  return true;
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

// The outputs as float64, row-major.
std::vector<std::vector<double>> Values(const std::vector<tc::Tensor>& outputs) {
  std::vector<std::vector<double>> values;
  for (const tc::Tensor& t : outputs) {
    const tc::Tensor f64 = tc::cast(t, tc::DType::kF64).contiguous();
    values.emplace_back(f64.data<double>(), f64.data<double>() + f64.numel());
  }
  return values;
}

// Whether two compilers' results agree: exactly for integers and booleans;
// for floating types within a tolerance that allows another order of
// summation, and anything where either is not finite.
bool Agree(double a, double b, tc::DType dtype) {
  if (!tc::IsFloating(dtype)) return a == b;
  if (!std::isfinite(a) || !std::isfinite(b)) return true;
  const double tolerance = dtype == tc::DType::kBF16 ? 5e-2 : 1e-2;
  return std::abs(a - b) <= tolerance * (1 + std::max(std::abs(a), std::abs(b)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::StatusOr<tc::Graph> graph =
      tc::Parse(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!graph.ok() || !tc::Verify(*graph).ok() || !IsSmall(*graph)) return 0;
  const std::vector<tc::Tensor> args = Arguments(*graph);
  const size_t num_outputs = graph->outputs().size();
  std::vector<std::vector<std::vector<double>>> results;  // per compiler that ran
  for (const tc::codegen::Compiler& compiler : {tc::codegen::PerSize(tc::codegen::interpreter()),
                                                tc::codegen::PerSize(tc::codegen::fusing())}) {
    const absl::StatusOr<tc::codegen::Executable> executable = compiler(*graph);
    if (!executable.ok()) continue;
    const absl::StatusOr<std::vector<tc::Tensor>> outputs = (*executable)(args);
    if (!outputs.ok()) continue;
    if (outputs->size() != num_outputs) {
      tc::fuzz::Fail(absl::StrCat(outputs->size(), " outputs, the graph has ", num_outputs));
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      const tc::TensorType declared = AtHints(graph->outputs()[i]->type());
      if ((*outputs)[i].type() != declared) {
        tc::fuzz::Fail(absl::StrCat("output ", i, " is ", (*outputs)[i].type().ToString(),
                                    ", the graph declares ", declared.ToString()));
      }
    }
    results.push_back(Values(*outputs));
  }
  if (results.size() < 2) return 0;
  for (size_t i = 0; i < num_outputs; ++i) {
    const tc::DType dtype = graph->outputs()[i]->type().dtype;
    for (size_t k = 0; k < results[0][i].size(); ++k) {
      if (!Agree(results[0][i][k], results[1][i][k], dtype)) {
        tc::fuzz::Fail(absl::StrCat("output ", i, " element ", k, ": the interpreter gives ",
                                    results[0][i][k], ", the fusing compiler ", results[1][i][k]));
      }
    }
  }
  return 0;
}
