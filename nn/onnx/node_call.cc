// NodeCall: a node's inputs and attributes as a kernel reads them.
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/symbolic.h"
#include "nn/onnx/operators.h"
#include "runtime/error.h"

namespace tc::onnx {

NodeCall::NodeCall(const Node& node, int64_t opset, bool training, std::vector<Tensor> inputs,
                   const KnownValues& known)
    : node_(node), opset_(opset), training_(training), inputs_(std::move(inputs)), known_(known) {}

void NodeCall::Fail(absl::string_view what) const {
  throw Error(absl::InvalidArgumentError(
      absl::StrCat("node '", node_.name, "' (", node_.op_type, ", opset ", opset_, "): ", what)));
}

const Tensor& NodeCall::input(size_t i) const {
  if (!has_input(i)) Fail(absl::StrCat("input ", i, " is required"));
  return inputs_[i];
}

const IntValue* NodeCall::known_ints(size_t i) const {
  if (i >= node_.inputs.size() || node_.inputs[i].empty()) return nullptr;
  const auto it = known_.ints.find(node_.inputs[i]);
  return it == known_.ints.end() ? nullptr : &it->second;
}

void NodeCall::FailNotKnown(size_t i) const {
  Fail(absl::StrCat("input ", i, " ('", i < node_.inputs.size() ? node_.inputs[i] : "",
                    "') must be known when the model is built (a constant, or computed from "
                    "shapes and constants); values computed from the data are not supported"));
}

std::vector<int64_t> NodeCall::constant_ints(size_t i) const {
  const IntValue* known = known_ints(i);
  if (known == nullptr) FailNotKnown(i);
  return known->values;
}

double NodeCall::constant_scalar(size_t i) const {
  if (const IntValue* known = known_ints(i); known != nullptr) {
    if (known->values.size() != 1 || IsSymbolic(known->values[0])) {
      Fail(absl::StrCat("input ", i, " ('", node_.inputs[i], "') must hold one number"));
    }
    return static_cast<double>(known->values[0]);
  }
  const auto it =
      i < node_.inputs.size() ? known_.constants.find(node_.inputs[i]) : known_.constants.end();
  if (it == known_.constants.end()) FailNotKnown(i);
  const Tensor& t = it->second;
  if (t.numel() != 1) {
    Fail(absl::StrCat("input ", i, " ('", node_.inputs[i], "') must hold one value, got ",
                      t.type().ToString()));
  }
  return t.to_vector<double>()[0];
}

template <typename T>
const T* NodeCall::Find(absl::string_view name) const {
  const auto it = node_.attributes.find(std::string(name));
  if (it == node_.attributes.end()) return nullptr;
  const T* value = std::get_if<T>(&it->second);
  if (value == nullptr) Fail(absl::StrCat("attribute '", name, "' has the wrong type"));
  return value;
}

int64_t NodeCall::attr_int(absl::string_view name, int64_t fallback) const {
  const int64_t* v = Find<int64_t>(name);
  return v != nullptr ? *v : fallback;
}

double NodeCall::attr_float(absl::string_view name, double fallback) const {
  const double* v = Find<double>(name);
  return v != nullptr ? *v : fallback;
}

std::string NodeCall::attr_string(absl::string_view name, absl::string_view fallback) const {
  const std::string* v = Find<std::string>(name);
  return v != nullptr ? *v : std::string(fallback);
}

std::vector<int64_t> NodeCall::attr_ints(absl::string_view name,
                                         std::vector<int64_t> fallback) const {
  const std::vector<int64_t>* v = Find<std::vector<int64_t>>(name);
  return v != nullptr ? *v : fallback;
}

}  // namespace tc::onnx
