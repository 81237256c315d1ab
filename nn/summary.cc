#include "nn/summary.h"

#include <algorithm>
#include <array>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/autograd_meta.h"

namespace tc::nn {
namespace {

// "[8, 16, 28, 28]"; a structured output lists its tensors' shapes.
std::string ShapesOf(const TensorTree& out) {
  std::vector<std::string> shapes;
  out.ForEachLeaf([&](const Tensor& t) {
    shapes.push_back(absl::StrCat("[", absl::StrJoin(t.shape(), ", "), "]"));
  });
  return absl::StrJoin(shapes, ", ");
}

// 21840 -> "21,840".
std::string WithThousands(int64_t n) {
  std::string digits = absl::StrCat(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

absl::StatusOr<std::string> Summary(Module& module, const TensorTree& example) {
  const std::vector<std::pair<std::string, Module*>> modules = module.named_modules();
  // Each module's first output shape, recorded by a hook while the example runs.
  absl::flat_hash_map<const Module*, std::string> shapes;
  std::vector<std::pair<Module*, int>> hooks;
  std::vector<bool> training;
  for (const auto& [name, m] : modules) {
    training.push_back(m->is_training());
    hooks.emplace_back(m, m->register_forward_hook(
                              [&](const Module& called, const TensorTree&, const TensorTree& out) {
                                shapes.try_emplace(&called, ShapesOf(out));
                              }));
  }
  // However the run ends: the hooks removed and the flags restored, in
  // pre-order (a parent's flag first, then its children's own).
  struct Restore {
    const std::vector<std::pair<std::string, Module*>>& modules;
    const std::vector<std::pair<Module*, int>>& hooks;
    const std::vector<bool>& training;
    ~Restore() {
      for (const auto& [m, id] : hooks) m->remove_forward_hook(id);
      for (size_t i = 0; i < modules.size(); ++i) modules[i].second->train(training[i]);
    }
  };
  absl::Status status;
  {
    Restore restore{modules, hooks, training};
    module.eval();
    try {
      NoGradGuard no_grad;
      module(example);
    } catch (const Error& e) {
      status = e.status();
    }
  }
  if (!status.ok()) return status;

  std::vector<std::array<std::string, 3>> rows;
  for (const auto& [name, m] : modules) {
    // Indented by depth, with the name it has in its parent.
    std::string label = m->type_name();
    if (!name.empty()) {
      const size_t depth = std::count(name.begin(), name.end(), '.');
      const size_t dot = name.rfind('.');
      label = absl::StrCat(std::string(2 * depth, ' '), "|-", label, ": ",
                           dot == std::string::npos ? name : name.substr(dot + 1));
    }
    auto shape = shapes.find(m);
    rows.push_back(
        {label, shape == shapes.end() ? "--" : shape->second, WithThousands(m->num_parameters())});
  }
  size_t name_width = 24, shape_width = 16;
  for (const auto& row : rows) {
    name_width = std::max(name_width, row[0].size() + 2);
    shape_width = std::max(shape_width, row[1].size() + 2);
  }
  const std::string rule(name_width + shape_width + 12, '=');
  std::string out = absl::StrCat(rule, "\n", Pad("Layer (type: name)", name_width),
                                 Pad("Output Shape", shape_width), "Param #\n", rule, "\n");
  for (const auto& row : rows) {
    absl::StrAppend(&out, Pad(row[0], name_width), Pad(row[1], shape_width), row[2], "\n");
  }
  int64_t buffers = 0;
  for (const auto& [name, t] : module.named_buffers()) buffers += t.numel();
  absl::StrAppend(&out, rule, "\nTotal params: ", WithThousands(module.num_parameters()),
                  "\nBuffer values: ", WithThousands(buffers), "\n", rule, "\n");
  return out;
}

}  // namespace tc::nn
