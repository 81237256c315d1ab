// Shape arithmetic over known integers. Exporters compute a reshape's target
// from the input's own shape (Shape -> Gather -> Unsqueeze -> Concat); run as
// tensor ops it would be data the compiler cannot see through, so it runs
// here, on numbers and symbols, while the forward is built.
#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/symbolic.h"
#include "nn/onnx/operators.h"
#include "runtime/ops.h"

namespace tc::onnx {
namespace {

using Result = std::optional<std::vector<IntValue>>;

IntValue Vector(std::vector<int64_t> values) { return IntValue{std::move(values), false}; }

// Python's slice bounds as ONNX clamps them: negative counts from the end.
int64_t Clamp(int64_t index, int64_t size, int64_t low, int64_t high) {
  if (index < 0) index = index < -size ? low : index + size;
  return std::clamp(index, low, high);
}

Result Shape(const NodeCall& call) {
  std::vector<int64_t> dims;
  if (const IntValue* known = call.known_ints(0); known != nullptr) {
    if (!known->scalar) dims.push_back(static_cast<int64_t>(known->values.size()));
  } else {
    const Tensor& x = call.input(0);
    dims.assign(x.shape().begin(), x.shape().end());
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t start = Clamp(call.attr_int("start", 0), rank, 0, rank);
  const int64_t end = Clamp(call.attr_int("end", rank), rank, 0, rank);
  return std::vector<IntValue>{
      Vector(std::vector<int64_t>(dims.begin() + start, dims.begin() + std::max(start, end)))};
}

Result Gather(const NodeCall& call) {
  const IntValue &data = *call.known_ints(0), &indices = *call.known_ints(1);
  if (data.scalar || call.attr_int("axis", 0) != 0) return std::nullopt;
  const int64_t size = static_cast<int64_t>(data.values.size());
  IntValue out{{}, indices.scalar};
  for (int64_t i : indices.values) {
    if (IsSymbolic(i) || i < -size || i >= size) {
      call.Fail(absl::StrCat("index ", i, " is outside a dim of size ", size));
    }
    out.values.push_back(data.values[static_cast<size_t>(i < 0 ? i + size : i)]);
  }
  return std::vector<IntValue>{out};
}

Result Unsqueeze(const NodeCall& call) {
  const IntValue& data = *call.known_ints(0);
  if (!data.scalar || call.constant_ints(1) != std::vector<int64_t>{0}) return std::nullopt;
  return std::vector<IntValue>{Vector(data.values)};
}

Result Squeeze(const NodeCall& call) {
  const IntValue& data = *call.known_ints(0);
  if (data.scalar || data.values.size() != 1) return std::nullopt;
  if (call.has_input(1) && call.constant_ints(1) != std::vector<int64_t>{0} &&
      call.constant_ints(1) != std::vector<int64_t>{-1}) {
    return std::nullopt;
  }
  return std::vector<IntValue>{IntValue{data.values, true}};
}

Result Concat(const NodeCall& call) {
  std::vector<int64_t> values;
  for (size_t i = 0; i < call.node().inputs.size(); ++i) {
    const IntValue& part = *call.known_ints(i);
    if (part.scalar) return std::nullopt;
    values.insert(values.end(), part.values.begin(), part.values.end());
  }
  return std::vector<IntValue>{Vector(std::move(values))};
}

Result Slice(const NodeCall& call) {
  const IntValue& data = *call.known_ints(0);
  const std::vector<int64_t> starts = call.constant_ints(1), ends = call.constant_ints(2);
  if (data.scalar || starts.size() != 1 || ends.size() != 1) return std::nullopt;
  if (call.has_input(3) && call.constant_ints(3) != std::vector<int64_t>{0}) return std::nullopt;
  if (call.has_input(4) && call.constant_ints(4) != std::vector<int64_t>{1}) return std::nullopt;
  const int64_t size = static_cast<int64_t>(data.values.size());
  const int64_t begin = Clamp(starts[0], size, 0, size), end = Clamp(ends[0], size, 0, size);
  return std::vector<IntValue>{Vector(std::vector<int64_t>(
      data.values.begin() + begin, data.values.begin() + std::max(begin, end)))};
}

// Integer Add, Sub, Mul and Div, a scalar broadcast against a vector.
Result Arithmetic(const NodeCall& call) {
  const IntValue &a = *call.known_ints(0), &b = *call.known_ints(1);
  const size_t n = std::max(a.values.size(), b.values.size());
  if ((a.values.size() != n && a.values.size() != 1) ||
      (b.values.size() != n && b.values.size() != 1)) {
    return std::nullopt;
  }
  const std::string& op = call.node().op_type;
  IntValue out{{}, a.scalar && b.scalar};
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = a.values[a.values.size() == 1 ? 0 : i];
    const int64_t y = b.values[b.values.size() == 1 ? 0 : i];
    if (op == "Add") {
      out.values.push_back(DimAdd(x, y));
    } else if (op == "Sub") {
      out.values.push_back(DimSub(x, y));
    } else if (op == "Mul") {
      out.values.push_back(DimMul(x, y));
    } else {  // Div
      if (y == 0) call.Fail("integer division by zero");
      if (IsSymbolic(x) || IsSymbolic(y)) {
        const std::optional<int64_t> q = DimDivide(x, y);
        if (!q.has_value()) return std::nullopt;
        out.values.push_back(*q);
      } else {
        out.values.push_back(x / y);  // ONNX's integer Div truncates, as C++
      }
    }
  }
  return std::vector<IntValue>{out};
}

Result Cast(const NodeCall& call) {
  const int64_t to = call.attr_int("to", 0);
  if (to != 7 && to != 6) return std::nullopt;  // INT64, INT32
  return std::vector<IntValue>{*call.known_ints(0)};
}

Result Identity(const NodeCall& call) { return std::vector<IntValue>{*call.known_ints(0)}; }

}  // namespace

Tensor Materialize(const IntValue& value) {
  std::vector<int64_t> shape;
  if (!value.scalar) shape.push_back(static_cast<int64_t>(value.values.size()));
  if (!HasSymbolic(value.values)) return from_vector(value.values, shape);
  std::vector<Tensor> parts;
  for (int64_t v : value.values) parts.push_back(size_scalar(v, DType::kI64));
  return value.scalar ? parts.at(0) : stack(parts, 0);
}

std::optional<std::vector<IntValue>> EvaluateShapeArithmetic(const NodeCall& call) {
  // Each operator's evaluation and how many inputs it always reads (the
  // others are optional).
  struct Rule {
    size_t required;
    Result (*evaluate)(const NodeCall&);
  };
  static const auto* kRules = new absl::flat_hash_map<std::string, Rule>{
      {"Shape", {1, Shape}},       {"Gather", {2, Gather}},  {"Unsqueeze", {2, Unsqueeze}},
      {"Squeeze", {1, Squeeze}},   {"Slice", {3, Slice}},    {"Cast", {1, Cast}},
      {"Identity", {1, Identity}}, {"Concat", {1, Concat}},  {"Add", {2, Arithmetic}},
      {"Sub", {2, Arithmetic}},    {"Mul", {2, Arithmetic}}, {"Div", {2, Arithmetic}}};
  const Node& node = call.node();
  const auto rule = kRules->find(node.op_type);
  if (rule == kRules->end() || node.inputs.size() < rule->second.required) return std::nullopt;
  for (size_t i = 0; i < rule->second.required; ++i) {
    if (node.inputs[i].empty()) return std::nullopt;  // the kernel says what is missing
  }
  // Shape reads only its input's shape; the others need every input known.
  for (size_t i = 0; node.op_type != "Shape" && i < node.inputs.size(); ++i) {
    const bool optional_absent = node.inputs[i].empty() && node.op_type != "Concat";
    if (!optional_absent && call.known_ints(i) == nullptr) return std::nullopt;
  }
  return rule->second.evaluate(call);
}

}  // namespace tc::onnx
