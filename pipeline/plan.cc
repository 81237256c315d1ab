#include "pipeline/plan.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/version.h"
#include "codegen/fusing_compiler.h"
#include "codegen/per_size.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/symbolic.h"
#include "graph/verifier.h"
#include "nlohmann/json.hpp"
#include "nn/checkpoint.h"
#include "runtime/error.h"
#include "runtime/random.h"

namespace tc {
namespace {

using Json = nlohmann::json;
using Kind = InputDescriptor::Kind;

constexpr char kFormatKey[] = "tensorcut.plan.format";
constexpr char kVersionKey[] = "tensorcut.version";
constexpr char kPlanKey[] = "tensorcut.plan";
constexpr char kForwardKey[] = "tensorcut.plan.forward";
constexpr char kBackwardKey[] = "tensorcut.plan.backward";
constexpr char kChecksumKey[] = "tensorcut.plan.crc32";
constexpr char kConstantPrefix[] = "tensorcut.constant.";

constexpr std::pair<Kind, const char*> kKindNames[] = {
    {Kind::kParameter, "parameter"},    {Kind::kBuffer, "buffer"},
    {Kind::kUserInput, "batch"},        {Kind::kConstant, "constant"},
    {Kind::kRandomSeed, "random_seed"}, {Kind::kRandomOffset, "random_offset"},
};

const char* KindName(Kind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "?";
}

std::string Checksum(absl::string_view plan, absl::string_view forward,
                     absl::string_view backward) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (absl::string_view part : {plan, forward, backward}) {
    crc = crc32(crc, reinterpret_cast<const Bytef*>(part.data()), static_cast<uInt>(part.size()));
  }
  return absl::StrCat(crc);
}

// The placeholder `tensor` is bound to, or -1.
int PlaceholderOf(const CompiledStep& step, const Tensor& tensor) {
  const std::vector<Tensor>& bound = step.bound();
  for (size_t i = 0; i < bound.size(); ++i) {
    if (bound[i].defined() && bound[i].impl() == tensor.impl()) return static_cast<int>(i);
  }
  return -1;
}

// A JSON integer that fits an int (nlohmann's get<int> converts any number,
// a float out of range included, which is undefined).
absl::StatusOr<int64_t> Integer(const Json& j, int64_t lo = std::numeric_limits<int>::min(),
                                int64_t hi = std::numeric_limits<int>::max()) {
  if (!j.is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat("expected an integer, got ", j.dump()));
  }
  const int64_t v = j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(hi)
                        ? hi + 1
                        : j.get<int64_t>();
  if (v < lo || v > hi) {
    return absl::InvalidArgumentError(absl::StrCat(v, " is out of range [", lo, ", ", hi, "]"));
  }
  return v;
}

absl::StatusOr<std::vector<int>> Integers(const Json& j) {
  if (!j.is_array())
    return absl::InvalidArgumentError(absl::StrCat("expected an array, got ", j.dump()));
  std::vector<int> out;
  for (const Json& e : j) {
    TC_ASSIGN_OR_RETURN(const int64_t v, Integer(e));
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// Doubles travel as strings ("inf", "0.5"): JSON has no infinity, and
// nlohmann writes one as null.
std::string DoubleText(double v) { return absl::StrFormat("%.17g", v); }
absl::StatusOr<double> DoubleOf(const Json& j) {
  double v = 0;
  if (!j.is_string() || !absl::SimpleAtod(j.get<std::string>(), &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a number as a string, got ", j.dump()));
  }
  return v;
}

Json OptionalJson(const std::optional<double>& v) {
  return v ? Json(DoubleText(*v)) : Json(nullptr);
}

absl::StatusOr<Json> OptimizerJson(const CompiledStep& step) {
  const nn::Optimizer& optimizer = step.optimizer();
  Json groups = Json::array();
  for (int g = 0; g < optimizer.num_groups(); ++g) {
    Json params = Json::array();
    for (const auto& [key, tensor] : optimizer.group_params(g)) {
      const int at = PlaceholderOf(step, tensor);
      if (at < 0 || step.program().inputs[at].kind != Kind::kParameter) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the optimizer updates \"", key, "\", which is not a parameter of the step"));
      }
      params.push_back({{"key", key}, {"input", at}});
    }
    const std::optional<double> initial_lr = optimizer.initial_lr(g);
    groups.push_back({{"params", params}, {"initial_lr", OptionalJson(initial_lr)}});
  }
  return Json{{"name", std::string(optimizer.name())}, {"groups", groups}};
}

}  // namespace

std::string PlanChecksum(const nn::Metadata& metadata) {
  const auto entry = [&metadata](const char* key) -> absl::string_view {
    auto it = metadata.find(key);
    return it == metadata.end() ? absl::string_view() : absl::string_view(it->second);
  };
  return Checksum(entry(kPlanKey), entry(kForwardKey), entry(kBackwardKey));
}

namespace {

// The inputs' descriptions, and with `tensors` the ones they read from
// `bound`.
Json InputsJson(absl::Span<const InputDescriptor> inputs, absl::Span<const Tensor> bound,
                nn::NamedTensors* tensors) {
  Json json = Json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputDescriptor& d = inputs[i];
    json.push_back({{"kind", KindName(d.kind)}, {"name", d.name}});
    if (d.kind == Kind::kConstant) json.back()["constant_index"] = d.constant_index;
    if (tensors == nullptr) continue;
    if (d.kind == Kind::kParameter || d.kind == Kind::kBuffer) {
      tensors->emplace_back(d.name, bound[i]);
    } else if (d.kind == Kind::kConstant) {
      tensors->emplace_back(absl::StrCat(kConstantPrefix, i), bound[i]);
    }
  }
  return json;
}

// A tree's structure: null (None), "*" (a leaf), a number (an int or a
// float scalar, a float as text), or {"tuple": [...]}, {"list": [...]},
// {"dict": [[key, ...], ...]} in order.
Json SpecJson(const TreeSpec& spec) {
  Json items = Json::array();
  for (size_t i = 0; i < spec.items().size(); ++i) {
    items.push_back(spec.kind() == TreeKind::kDict
                        ? Json::array({spec.keys()[i], SpecJson(spec[i])})
                        : SpecJson(spec[i]));
  }
  switch (spec.kind()) {
    case TreeKind::kLeaf:
      return "*";
    case TreeKind::kNone:
      return nullptr;
    case TreeKind::kInt:
      return Json{{"int", spec.int_value()}};
    case TreeKind::kFloat:
      return Json{{"float", DoubleText(spec.float_value())}};
    case TreeKind::kTuple:
      return Json{{"tuple", items}};
    case TreeKind::kList:
      return Json{{"list", items}};
    case TreeKind::kDict:
      return Json{{"dict", items}};
  }
  return nullptr;
}

// The inverse of SpecJson, to a depth of 64.
absl::StatusOr<TreeSpec> ReadSpec(const Json& j, int depth = 0) {
  if (depth > 64) return absl::InvalidArgumentError("a structure nested deeper than 64");
  if (j.is_null()) return TreeSpec::None();
  if (j == "*") return TreeSpec::MakeLeaf(NoLeaf{});
  if (!j.is_object() || j.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("expected a structure, got ", j.dump()));
  }
  const std::string kind = j.begin().key();
  const Json& value = j.begin().value();
  if (kind == "int") {
    TC_ASSIGN_OR_RETURN(const int64_t v, Integer(value, -(int64_t{1} << 62), int64_t{1} << 62));
    return TreeSpec::Int(v);
  }
  if (kind == "float") {
    TC_ASSIGN_OR_RETURN(const double v, DoubleOf(value));
    return TreeSpec::Float(v);
  }
  if (!value.is_array() || (kind != "tuple" && kind != "list" && kind != "dict")) {
    return absl::InvalidArgumentError(absl::StrCat("expected a structure, got ", j.dump()));
  }
  std::vector<TreeSpec> items;
  std::vector<std::pair<std::string, TreeSpec>> entries;
  for (const Json& item : value) {
    if (kind != "dict") {
      TC_ASSIGN_OR_RETURN(items.emplace_back(), ReadSpec(item, depth + 1));
      continue;
    }
    if (!item.is_array() || item.size() != 2 || !item[0].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a dict entry [key, structure], got ", item.dump()));
    }
    const std::string key = item[0].get<std::string>();
    for (const auto& [seen, unused] : entries) {
      if (seen == key)
        return absl::InvalidArgumentError(absl::StrCat("dict key \"", key, "\" repeated"));
    }
    TC_ASSIGN_OR_RETURN(TreeSpec child, ReadSpec(item[1], depth + 1));
    entries.emplace_back(key, std::move(child));
  }
  if (kind == "tuple") return TreeSpec::Tuple(std::move(items));
  if (kind == "list") return TreeSpec::List(std::move(items));
  return TreeSpec::Dict(std::move(entries));
}

// What the program says besides its graphs, with `inputs` (InputsJson).
Json ProgramJson(const StepProgram& program, Json inputs) {
  Json dynamic = Json::object();
  for (const auto& [name, dims] : program.dynamic_dims) dynamic[name] = dims;
  return {
      {"inputs", std::move(inputs)},
      {"batch_words", program.batch_words},
      {"batch_spec", SpecJson(program.batch_spec)},
      {"num_outputs", program.num_outputs},
      {"outputs_spec", SpecJson(program.outputs_spec)},
      {"mutated_buffers", program.mutated_buffers},
      {"num_saved", program.num_saved},
      {"gradient_of", program.gradient_of},
      {"random",
       {{"seed", program.random.seed},
        {"offset", program.random.offset},
        {"numbers", DimToString(program.random.numbers)}}},
      {"dynamic_dims", dynamic},
  };
}

// The file: `plan` and the graphs in the header, `tensors` after it.
absl::Status WritePlan(const Json& plan, const Graph& forward, const Graph* backward,
                       const nn::NamedTensors& tensors, const std::string& path,
                       const nn::Metadata& annotations = {}) {
  std::string plan_text;
  try {
    plan_text = plan.dump(1);
  } catch (const Json::exception& e) {  // a name that is not UTF-8
    return absl::InvalidArgumentError(absl::StrCat("saving plan ", path, ": ", e.what()));
  }
  nn::Metadata metadata = {
      {kFormatKey, absl::StrCat(kPlanFormatVersion)},
      {kVersionKey, version()},
      {kPlanKey, plan_text},
      {kForwardKey, ToString(forward)},
      {kBackwardKey, backward != nullptr ? ToString(*backward) : ""},
  };
  metadata[kChecksumKey] = PlanChecksum(metadata);
  for (const auto& [key, value] : annotations) {
    if (metadata.count(key) > 0 || absl::StartsWith(key, kPlanKey) || key == nn::kDataCrcKey) {
      return absl::InvalidArgumentError(absl::StrCat("saving plan ", path, ": annotation \"", key,
                                                     "\" is a key the plan writes itself"));
    }
    metadata.emplace(key, value);
  }
  return nn::SaveTensors(tensors, path, metadata);
}

}  // namespace

absl::Status SavePlan(const CompiledStep& step, const std::string& path,
                      const nn::Metadata& annotations) {
  const CompiledStepOptions& options = step.options();
  if (options.reduce_gradients || options.backward_rewriter != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "SavePlan ", path,
        ": this step is data-parallel (its gradients are reduced across processes); save the "
        "step of a single process"));
  }
  const StepProgram& program = step.program();
  nn::NamedTensors tensors;
  Json inputs = InputsJson(program.inputs, step.bound(), &tensors);
  for (auto& entry : step.optimizer().state()) tensors.push_back(std::move(entry));
  absl::StatusOr<Json> optimizer = OptimizerJson(step);
  if (!optimizer.ok()) {
    return absl::Status(optimizer.status().code(),
                        absl::StrCat("SavePlan ", path, ": ", optimizer.status().message()));
  }
  const Generator& generator = DefaultGenerator();
  Json plan = ProgramJson(program, std::move(inputs));
  plan["kind"] = "train_step";
  plan["plan_cache_size"] = options.plan_cache_size;
  plan["clip"] = {{"value", OptionalJson(options.clip_grad_value)},
                  {"norm", OptionalJson(options.clip_grad_norm)},
                  {"norm_type", DoubleText(options.clip_norm_type)}};
  plan["optimizer"] = *optimizer;
  // Strings: JSON numbers lose 64-bit integers in many readers.
  plan["generator"] = {{"seed", absl::StrCat(generator.seed())},
                       {"offset", absl::StrCat(generator.offset())}};
  return WritePlan(plan, program.forward, &program.backward, tensors, path, annotations);
}

absl::Status SaveStepProgram(const StepProgram& program, const std::string& path,
                             const nn::Metadata& annotations) {
  Json plan = ProgramJson(program, InputsJson(program.inputs, {}, nullptr));
  plan["kind"] = "step_program";
  return WritePlan(plan, program.forward, &program.backward, {}, path, annotations);
}

absl::Status SaveInferencePlan(const Graph& graph, absl::Span<const InputDescriptor> inputs,
                               absl::Span<const Tensor> constants, const std::string& path) {
  const auto refuse = [&path](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("SaveInferencePlan ", path, ": ", why));
  };
  if (inputs.size() != graph.placeholders().size() || constants.size() != inputs.size()) {
    return refuse(absl::StrCat(inputs.size(), " input descriptors and ", constants.size(),
                               " constants for ", graph.placeholders().size(), " placeholders"));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Kind kind = inputs[i].kind;
    if (kind == Kind::kRandomSeed || kind == Kind::kRandomOffset) {
      return refuse("the function draws random numbers; an inference plan does not draw yet");
    }
    if (kind != Kind::kUserInput &&
        (!constants[i].defined() || constants[i].type() != graph.placeholders()[i]->type())) {
      return refuse(absl::StrCat(inputs[i].name, " must be ",
                                 graph.placeholders()[i]->type().ToString(),
                                 " as the graph reads it"));
    }
  }
  nn::NamedTensors tensors;
  const Json plan = {{"kind", "inference"}, {"inputs", InputsJson(inputs, constants, &tensors)}};
  return WritePlan(plan, graph, nullptr, tensors, path);
}

namespace {

absl::StatusOr<std::string> Entry(const nn::Metadata& metadata, const char* key) {
  auto it = metadata.find(key);
  if (it == metadata.end()) {
    return absl::InvalidArgumentError(absl::StrCat("its header has no ", key));
  }
  return it->second;
}

// The format version and the header's checksum.
absl::Status CheckHeader(const nn::Metadata& metadata) {
  auto format = metadata.find(kFormatKey);
  if (format == metadata.end()) {
    return absl::InvalidArgumentError(absl::StrCat("not a tensorcut plan: its header has no ",
                                                   kFormatKey, " (a checkpoint, perhaps)"));
  }
  int version_read = 0;
  if (!absl::SimpleAtoi(format->second, &version_read) || version_read < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(kFormatKey, ": expected a version number, got \"", format->second, "\""));
  }
  if (version_read > kPlanFormatVersion) {
    auto saved_by = metadata.find(kVersionKey);
    return absl::InvalidArgumentError(absl::StrCat(
        kFormatKey, ": the plan has format ", version_read, ", newer than this tensorcut (",
        version(), ") reads (", kPlanFormatVersion, "); it was saved by tensorcut ",
        saved_by == metadata.end() ? "of an unknown version" : saved_by->second));
  }
  TC_ASSIGN_OR_RETURN(const std::string plan, Entry(metadata, kPlanKey));
  TC_ASSIGN_OR_RETURN(const std::string forward, Entry(metadata, kForwardKey));
  TC_ASSIGN_OR_RETURN(const std::string backward, Entry(metadata, kBackwardKey));
  TC_ASSIGN_OR_RETURN(const std::string checksum, Entry(metadata, kChecksumKey));
  const std::string computed = PlanChecksum(metadata);
  if (checksum != computed) {
    return absl::DataLossError(absl::StrCat(kChecksumKey, ": the header says ", checksum,
                                            ", its plan and graphs give ", computed,
                                            ": the file is damaged"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Graph> ReadGraph(const nn::Metadata& metadata, const char* key) {
  TC_ASSIGN_OR_RETURN(const std::string text, Entry(metadata, key));
  absl::StatusOr<Graph> graph = Parse(text);
  absl::Status s = graph.ok() ? Verify(*graph) : graph.status();
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(key, ": ", s.message()));
  return graph;
}

absl::StatusOr<Kind> KindOf(const std::string& name) {
  for (const auto& [kind, kind_name] : kKindNames) {
    if (name == kind_name) return kind;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown input kind \"", name, "\""));
}

absl::StatusOr<std::unique_ptr<nn::Optimizer>> MakeOptimizer(const std::string& name,
                                                             std::vector<nn::ParamGroup> groups) {
  try {
    if (name == "SGD") return std::make_unique<nn::SGD>(std::move(groups));
    if (name == "Adam") return std::make_unique<nn::Adam>(std::move(groups));
    if (name == "AdamW") return std::make_unique<nn::AdamW>(std::move(groups));
    if (name == "RMSprop") return std::make_unique<nn::RMSprop>(std::move(groups));
    if (name == "Adagrad") return std::make_unique<nn::Adagrad>(std::move(groups));
  } catch (const Error& e) {
    return e.status();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer \"", name, "\" (known: SGD, Adam, AdamW, RMSprop, Adagrad)"));
}

// What a plan holds beside its graphs.
struct PlanParts {
  StepProgram program;        // its graphs read apart
  std::vector<Tensor> bound;  // per forward placeholder
  CompiledStepOptions options;
  std::unique_ptr<nn::Optimizer> optimizer;
  uint64_t generator_seed = 0, generator_offset = 0;
};

// The inputs, and with `tensors` the file's tensors each names, moved out
// of it (without, the bound tensors stay undefined).
absl::Status ReadInputs(const Json& inputs, absl::flat_hash_map<std::string, Tensor>* tensors,
                        PlanParts& parts, std::string& field) {
  const std::vector<Value*>& placeholders = parts.program.forward.placeholders();
  if (!inputs.is_array() || inputs.size() != placeholders.size()) {
    return absl::InvalidArgumentError(absl::StrCat("expected an array of ", placeholders.size(),
                                                   " inputs, one per forward placeholder"));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    field = absl::StrCat("inputs[", i, "]");
    InputDescriptor d;
    TC_ASSIGN_OR_RETURN(d.kind, KindOf(inputs[i].at("kind").get<std::string>()));
    d.name = inputs[i].at("name").get<std::string>();
    std::string key;
    if (d.kind == Kind::kParameter || d.kind == Kind::kBuffer) {
      key = d.name;
    } else if (d.kind == Kind::kConstant) {
      TC_ASSIGN_OR_RETURN(const int64_t index, Integer(inputs[i].at("constant_index"), 0));
      d.constant_index = static_cast<int>(index);
      key = absl::StrCat(kConstantPrefix, i);
    }
    Tensor tensor;
    if (!key.empty() && tensors != nullptr) {
      auto it = tensors->find(key);
      if (it == tensors->end()) {
        return absl::InvalidArgumentError(absl::StrCat("the step takes ", KindName(d.kind), " ",
                                                       key, ", which the file does not hold"));
      }
      tensor = std::move(it->second);
      tensors->erase(it);
      if (tensor.type() != placeholders[i]->type()) {
        return absl::InvalidArgumentError(absl::StrCat(
            KindName(d.kind), " ", key, " must be ", placeholders[i]->type().ToString(),
            " as the graph takes it, got ", tensor.type().ToString()));
      }
    }
    parts.program.inputs.push_back(std::move(d));
    parts.bound.push_back(std::move(tensor));
  }
  return absl::OkStatus();
}

// The optimizer: its groups over the parameters read, with the options its
// saved state holds, then that state (the file's "optim." tensors).
absl::Status ReadOptimizer(const Json& opt, absl::flat_hash_map<std::string, Tensor>& tensors,
                           PlanParts& parts, std::string& field) {
  nn::NamedTensors state;
  for (auto it = tensors.begin(); it != tensors.end();) {
    if (absl::StartsWith(it->first, nn::kOptimizerStatePrefix)) {
      state.emplace_back(it->first, std::move(it->second));
      tensors.erase(it++);
    } else {
      ++it;
    }
  }
  std::sort(state.begin(), state.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const Json& group_list = opt.at("groups");
  if (!group_list.is_array()) return absl::InvalidArgumentError("groups: expected an array");
  std::vector<nn::ParamGroup> groups;
  std::vector<std::optional<double>> initial_lrs;
  for (size_t g = 0; g < group_list.size(); ++g) {
    field = absl::StrCat("optimizer.groups[", g, "]");
    nn::NamedTensors params;
    for (const Json& p : group_list[g].at("params")) {
      TC_ASSIGN_OR_RETURN(const int64_t at,
                          Integer(p.at("input"), 0, static_cast<int64_t>(parts.bound.size()) - 1));
      if (parts.program.inputs[at].kind != Kind::kParameter) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", at, " is not a parameter of the step"));
      }
      params.emplace_back(p.at("key").get<std::string>(), parts.bound[at]);
    }
    std::map<std::string, double> group_options;
    const std::string prefix = absl::StrCat(nn::kOptimizerStatePrefix, "param_groups.", g, ".");
    for (const auto& [name, value] : state) {
      if (absl::StartsWith(name, prefix) && value.dtype() == DType::kF64 && value.dim() == 0) {
        group_options[name.substr(prefix.size())] = *value.data<double>();
      }
    }
    groups.push_back({std::move(params), std::move(group_options)});
    const Json& lr = group_list[g].at("initial_lr");
    if (lr.is_null()) {
      initial_lrs.emplace_back();
    } else {
      TC_ASSIGN_OR_RETURN(initial_lrs.emplace_back(), DoubleOf(lr));
    }
  }
  field = "optimizer.name";
  TC_ASSIGN_OR_RETURN(parts.optimizer,
                      MakeOptimizer(opt.at("name").get<std::string>(), std::move(groups)));
  field = "optimizer state";
  TC_RETURN_IF_ERROR(parts.optimizer->load_state(state));
  for (size_t g = 0; g < initial_lrs.size(); ++g) {
    if (initial_lrs[g]) parts.optimizer->set_initial_lr(static_cast<int>(g), *initial_lrs[g]);
  }
  return absl::OkStatus();
}

// What the plan's JSON says, and the file's tensors it names, into `parts`
// (whose graphs are read). `field` follows the field being read: the error
// of one that is missing, of the wrong type or out of range is about it.
// nlohmann reports the first two by throwing.
absl::Status ReadProgram(const Json& plan, absl::flat_hash_map<std::string, Tensor>* tensors,
                         PlanParts& parts, std::string& field) {
  StepProgram& program = parts.program;
  field = "inputs";
  TC_RETURN_IF_ERROR(ReadInputs(plan.at("inputs"), tensors, parts, field));
  field = "batch_words";
  program.batch_words = plan.at("batch_words").get<std::vector<std::string>>();
  field = "batch_spec";
  TC_ASSIGN_OR_RETURN(program.batch_spec, ReadSpec(plan.at("batch_spec")));
  field = "num_outputs";
  TC_ASSIGN_OR_RETURN(program.num_outputs, Integer(plan.at("num_outputs"), 0));
  field = "outputs_spec";
  TC_ASSIGN_OR_RETURN(program.outputs_spec, ReadSpec(plan.at("outputs_spec")));
  field = "mutated_buffers";
  program.mutated_buffers = plan.at("mutated_buffers").get<std::vector<std::string>>();
  field = "num_saved";
  TC_ASSIGN_OR_RETURN(program.num_saved, Integer(plan.at("num_saved"), 0));
  field = "gradient_of";
  TC_ASSIGN_OR_RETURN(program.gradient_of, Integers(plan.at("gradient_of")));
  field = "random.seed";
  TC_ASSIGN_OR_RETURN(program.random.seed, Integer(plan.at("random").at("seed"), -1));
  field = "random.offset";
  TC_ASSIGN_OR_RETURN(program.random.offset, Integer(plan.at("random").at("offset"), -1));
  field = "random.numbers";
  TC_ASSIGN_OR_RETURN(program.random.numbers,
                      ParseDim(plan.at("random").at("numbers").get<std::string>()));
  for (const auto& [name, dims] : plan.at("dynamic_dims").items()) {
    field = absl::StrCat("dynamic_dims.", name);
    if (!dims.is_array()) return absl::InvalidArgumentError("expected an array of dims");
    std::vector<int64_t>& read = program.dynamic_dims[name];
    for (const Json& d : dims) {
      TC_ASSIGN_OR_RETURN(read.emplace_back(), Integer(d, -64, 63));
    }
  }
  return absl::OkStatus();
}

absl::Status ReadPlan(const Json& plan, absl::flat_hash_map<std::string, Tensor>& tensors,
                      PlanParts& parts, std::string& field) {
  CompiledStepOptions& options = parts.options;
  TC_RETURN_IF_ERROR(ReadProgram(plan, &tensors, parts, field));
  field = "plan_cache_size";
  TC_ASSIGN_OR_RETURN(options.plan_cache_size, Integer(plan.at("plan_cache_size"), 1));
  const Json& clip = plan.at("clip");
  field = "clip.value";
  if (!clip.at("value").is_null()) {
    TC_ASSIGN_OR_RETURN(options.clip_grad_value, DoubleOf(clip.at("value")));
  }
  field = "clip.norm";
  if (!clip.at("norm").is_null()) {
    TC_ASSIGN_OR_RETURN(options.clip_grad_norm, DoubleOf(clip.at("norm")));
  }
  field = "clip.norm_type";
  TC_ASSIGN_OR_RETURN(options.clip_norm_type, DoubleOf(clip.at("norm_type")));
  field = "optimizer";
  TC_RETURN_IF_ERROR(ReadOptimizer(plan.at("optimizer"), tensors, parts, field));
  if (!tensors.empty()) {
    field = "tensors";
    return absl::InvalidArgumentError(absl::StrCat("the file holds ", tensors.begin()->first,
                                                   ", which no input of the plan takes"));
  }
  field = "generator";
  const Json& gen = plan.at("generator");
  if (!absl::SimpleAtoi(gen.at("seed").get<std::string>(), &parts.generator_seed) ||
      !absl::SimpleAtoi(gen.at("offset").get<std::string>(), &parts.generator_offset)) {
    return absl::InvalidArgumentError("expected a seed and an offset as decimal strings");
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// A plan file with its header checked, its JSON and forward graph read and
// its tensors by name; `kind` is what the caller loads.
struct OpenedPlan {
  nn::Metadata metadata;
  Json plan;
  Graph forward;
  absl::flat_hash_map<std::string, Tensor> tensors;
};

absl::StatusOr<OpenedPlan> OpenPlan(const std::string& path, absl::string_view kind) {
  OpenedPlan opened;
  TC_ASSIGN_OR_RETURN(nn::NamedTensors read, nn::LoadTensors(path, &opened.metadata));
  TC_RETURN_IF_ERROR(CheckHeader(opened.metadata));
  opened.plan = Json::parse(opened.metadata[kPlanKey], nullptr, /*allow_exceptions=*/false);
  if (opened.plan.is_discarded() || !opened.plan.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(kPlanKey, ": not a JSON object"));
  }
  const auto found = opened.plan.find("kind");
  if (found == opened.plan.end() || *found != std::string(kind)) {
    const bool inference = found != opened.plan.end() && *found == "inference";
    return absl::InvalidArgumentError(
        absl::StrCat(kPlanKey, ": kind: expected \"", kind, "\", got ",
                     found == opened.plan.end() ? "none" : found->dump(),
                     inference             ? " (load it with LoadInferencePlan)"
                     : kind == "inference" ? " (load it with LoadPlan)"
                                           : ""));
  }
  TC_ASSIGN_OR_RETURN(opened.forward, ReadGraph(opened.metadata, kForwardKey));
  for (auto& [name, tensor] : read) opened.tensors.emplace(name, std::move(tensor));
  return opened;
}

// `s` with the plan file's path before its message.
absl::Status AtPath(const std::string& path, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
}

// `read` with the field and the plan's key before its message.
absl::Status InPlan(const absl::Status& read, const std::string& field) {
  if (read.ok()) return read;
  return absl::Status(read.code(), absl::StrCat(kPlanKey, ": ", field, ": ", read.message()));
}

// A step's file of `kind`: its graphs, then what `read` takes from its JSON
// and tensors into `parts` (the field it was reading named in an error).
using ReadFn = absl::Status (*)(OpenedPlan& opened, PlanParts& parts, std::string& field);
absl::Status ReadStepFile(const std::string& path, absl::string_view kind, ReadFn read,
                          nn::Metadata& metadata, PlanParts& parts) {
  absl::StatusOr<OpenedPlan> opened = OpenPlan(path, kind);
  if (!opened.ok()) return AtPath(path, opened.status());
  absl::StatusOr<Graph> backward = ReadGraph(opened->metadata, kBackwardKey);
  if (!backward.ok()) return AtPath(path, backward.status());
  parts.program.forward = std::move(opened->forward);
  parts.program.backward = std::move(*backward);
  std::string field;
  absl::Status s;
  try {
    s = read(*opened, parts, field);
  } catch (const Json::exception& e) {
    s = absl::InvalidArgumentError(e.what());
  } catch (const Error& e) {  // an optimizer's option it refuses
    s = e.status();
  }
  if (!s.ok()) return AtPath(path, InPlan(s, field));
  metadata = std::move(opened->metadata);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoadedStep>> LoadPlan(const std::string& path) {
  nn::Metadata metadata;
  PlanParts parts;
  TC_RETURN_IF_ERROR(ReadStepFile(
      path, "train_step",
      [](OpenedPlan& opened, PlanParts& parts, std::string& field) {
        return ReadPlan(opened.plan, opened.tensors, parts, field);
      },
      metadata, parts));
  std::unique_ptr<LoadedStep> step(new LoadedStep());
  for (size_t i = 0; i < parts.program.inputs.size(); ++i) {
    const InputDescriptor& d = parts.program.inputs[i];
    if (d.kind == Kind::kParameter) step->parameters_.emplace_back(d.name, parts.bound[i]);
    if (d.kind == Kind::kBuffer) step->buffers_.emplace_back(d.name, parts.bound[i]);
  }
  const bool draws = parts.program.random.seed >= 0;
  step->optimizer_ = std::move(parts.optimizer);
  absl::StatusOr<std::unique_ptr<CompiledStep>> compiled = CompiledStep::Create(
      std::move(parts.program), std::move(parts.bound), *step->optimizer_, parts.options);
  if (!compiled.ok()) return AtPath(path, compiled.status());
  step->compiled_ = std::move(*compiled);
  step->metadata_ = std::move(metadata);
  // Only a plan that loaded moves the generator.
  if (draws) {
    DefaultGenerator().Reseed(parts.generator_seed);
    DefaultGenerator().Advance(parts.generator_offset);
  }
  return step;
}

absl::StatusOr<double> LoadedStep::Run(const TensorTree& inputs, const TensorTree& targets) {
  const TreeSpec& spec = compiled_->program().batch_spec;
  if (spec.kind() == TreeKind::kNone) {
    return absl::FailedPreconditionError(
        "this plan was saved without its batch's structure: pass the batch's leaves");
  }
  const TensorTree batch = TensorTree::Tuple({inputs, targets});
  TC_RETURN_IF_ERROR(CheckStructure(batch, spec, "(inputs, targets)"));
  return compiled_->Run(Flatten(batch).first);
}

absl::StatusOr<TensorTree> LoadedStep::output_tree() const {
  const TreeSpec& spec = compiled_->program().outputs_spec;
  if (spec.kind() == TreeKind::kNone) {
    return absl::FailedPreconditionError("this plan's step returns no model outputs");
  }
  return Unflatten(compiled_->outputs(), spec);
}

absl::StatusOr<StepProgram> LoadStepProgram(const std::string& path, nn::Metadata* metadata) {
  nn::Metadata read_metadata;
  PlanParts parts;
  TC_RETURN_IF_ERROR(ReadStepFile(
      path, "step_program",
      [](OpenedPlan& opened, PlanParts& parts, std::string& field) {
        TC_RETURN_IF_ERROR(ReadProgram(opened.plan, /*tensors=*/nullptr, parts, field));
        return VerifyStepProgram(parts.program);
      },
      read_metadata, parts));
  if (metadata != nullptr) *metadata = std::move(read_metadata);
  return std::move(parts.program);
}

absl::StatusOr<std::unique_ptr<LoadedFunction>> LoadInferencePlan(const std::string& path) {
  absl::StatusOr<OpenedPlan> opened = OpenPlan(path, "inference");
  if (!opened.ok()) return AtPath(path, opened.status());
  PlanParts parts;
  parts.program.forward = std::move(opened->forward);
  std::string field = "inputs";
  absl::Status s;
  try {
    s = ReadInputs(opened->plan.at("inputs"), &opened->tensors, parts, field);
  } catch (const Json::exception& e) {
    s = absl::InvalidArgumentError(e.what());
  }
  if (s.ok() && !opened->tensors.empty()) {
    field = "tensors";
    s = absl::InvalidArgumentError(absl::StrCat("the file holds ", opened->tensors.begin()->first,
                                                ", which no input of the plan takes"));
  }
  for (size_t i = 0; s.ok() && i < parts.program.inputs.size(); ++i) {
    const Kind kind = parts.program.inputs[i].kind;
    if (kind == Kind::kRandomSeed || kind == Kind::kRandomOffset) {
      s = absl::InvalidArgumentError("an inference plan draws no random numbers");
    }
  }
  if (!s.ok()) return AtPath(path, InPlan(s, field));
  std::unique_ptr<LoadedFunction> function(new LoadedFunction());
  absl::StatusOr<codegen::Executable> forward =
      codegen::PerSize(codegen::fusing())(parts.program.forward);
  if (!forward.ok()) return AtPath(path, forward.status());
  function->forward_ = std::move(*forward);
  for (size_t i = 0; i < parts.program.inputs.size(); ++i) {
    const InputDescriptor& d = parts.program.inputs[i];
    if (d.kind == Kind::kUserInput) {
      function->input_args_.push_back(static_cast<int>(i));
      function->input_names_.push_back(d.name);
      function->input_types_.push_back(parts.program.forward.placeholders()[i]->type());
    }
  }
  function->args_ = std::move(parts.bound);
  return function;
}

absl::StatusOr<std::vector<Tensor>> LoadedFunction::Run(absl::Span<const Tensor> inputs) const {
  if (inputs.size() != input_args_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", input_args_.size(), " inputs, got ", inputs.size()));
  }
  std::vector<Tensor> args = args_;
  for (size_t i = 0; i < inputs.size(); ++i) args[input_args_[i]] = inputs[i];
  absl::StatusOr<std::vector<Tensor>> outputs = forward_(args);
  if (outputs.ok()) return outputs;
  // Only a failed call pays for naming the input that does not fit.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !FitsPlaceholder(t.type(), input_types_[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " (", input_names_[i], "): expected ", input_types_[i].ToString(), ", got ",
          t.defined() ? t.type().ToString() : "an undefined tensor"));
    }
  }
  return outputs;
}

}  // namespace tc
