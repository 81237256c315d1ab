// Tree: the structured inputs and outputs of a model, generic over the leaf
// type (the runtime uses Tree<Tensor>; graph/ never sees a tensor). A tree is
// a leaf, a scalar (int64 or double), None, or a tuple, list or string-keyed
// dict (keys keep insertion order) of trees, nested arbitrarily. A TreeSpec
// is the structure without leaves: flattening a tree gives its leaves in
// order and its spec, and unflattening puts leaves back into a spec.
//
//   using T = Tree<std::string>;
//   T in = T::Tuple({T::Dict({{"x", T::MakeLeaf("a")}, {"y", T::MakeLeaf("b")}}),
//                    T::Float(0.5)});
//   auto [leaves, spec] = Flatten(in);   // {"a", "b"}, ({"x": *, "y": *}, 0.5)
//   absl::StatusOr<T> back = Unflatten<std::string>(leaves, spec);  // == in
//
//   // A call's inputs checked against the spec it was compiled for; the
//   // caller describes its leaves:
//   CheckStructure(in, spec, "inputs", [](const std::string& leaf, int i) { ... });
//   // "inputs[0]["y"]: expected tensor f32[4,4], got f32[4,3]"
//   // "inputs[1]: expected float 0.5, got a list of 2"
#ifndef TENSORCUT_GRAPH_TREE_H_
#define TENSORCUT_GRAPH_TREE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/check.h"
#include "base/status_macros.h"

namespace tc {

enum class TreeKind : uint8_t { kLeaf, kNone, kInt, kFloat, kTuple, kList, kDict };

// The leaf of a TreeSpec: a placeholder for "one leaf goes here".
struct NoLeaf {
  bool operator==(const NoLeaf&) const { return true; }
};

template <typename Leaf>
class Tree {
 public:
  Tree() = default;  // None
  static Tree MakeLeaf(Leaf leaf) {
    Tree t(TreeKind::kLeaf);
    t.leaf_.emplace(std::move(leaf));
    return t;
  }
  static Tree None() { return Tree(); }
  static Tree Int(int64_t v) {
    Tree t(TreeKind::kInt);
    t.int_ = v;
    return t;
  }
  static Tree Float(double v) {
    Tree t(TreeKind::kFloat);
    t.float_ = v;
    return t;
  }
  static Tree Tuple(std::vector<Tree> items) {
    return Sequence(TreeKind::kTuple, std::move(items));
  }
  static Tree List(std::vector<Tree> items) { return Sequence(TreeKind::kList, std::move(items)); }
  // Keys keep this order; a repeated key is a programming error and aborts.
  static Tree Dict(std::vector<std::pair<std::string, Tree>> entries) {
    Tree t(TreeKind::kDict);
    for (auto& [key, item] : entries) {
      TC_CHECK(t.Find(key) == nullptr, "Tree::Dict: key \"", key, "\" repeated");
      t.keys_.push_back(std::move(key));
      t.items_.push_back(std::move(item));
    }
    return t;
  }

  TreeKind kind() const { return kind_; }
  bool is_leaf() const { return kind_ == TreeKind::kLeaf; }
  const Leaf& leaf() const { return *leaf_; }
  int64_t int_value() const { return int_; }
  double float_value() const { return float_; }
  // Children of a tuple, list or dict; a dict's keys are parallel to them.
  const std::vector<Tree>& items() const { return items_; }
  const std::vector<std::string>& keys() const { return keys_; }
  const Tree& operator[](size_t i) const { return items_[i]; }
  // A dict's child under `key`, or nullptr.
  const Tree* Find(absl::string_view key) const {
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (keys_[i] == key) return &items_[i];
    }
    return nullptr;
  }

  int num_leaves() const {
    if (is_leaf()) return 1;
    int n = 0;
    for (const Tree& t : items_) n += t.num_leaves();
    return n;
  }

  // The same structure with each leaf replaced by fn(leaf), in leaf order.
  template <typename Fn>
  auto Map(Fn&& fn) const -> Tree<std::decay_t<std::invoke_result_t<Fn&, const Leaf&>>> {
    Tree<std::decay_t<std::invoke_result_t<Fn&, const Leaf&>>> out;
    out.kind_ = kind_;
    if (is_leaf()) out.leaf_.emplace(fn(*leaf_));
    out.int_ = int_;
    out.float_ = float_;
    out.keys_ = keys_;
    for (const Tree& t : items_) out.items_.push_back(t.Map(fn));
    return out;
  }

  // Calls fn(leaf) for every leaf, depth first, in order.
  template <typename Fn>
  void ForEachLeaf(Fn&& fn) const {
    if (is_leaf()) fn(*leaf_);
    for (const Tree& t : items_) t.ForEachLeaf(fn);
  }

  // "(a, [b, None], {"y": c, "lr": 0.5})" with leaves printed by leaf_to_string.
  std::string ToString(const std::function<std::string(const Leaf&)>& leaf_to_string) const;

  bool operator==(const Tree& o) const {
    return kind_ == o.kind_ && leaf_ == o.leaf_ && int_ == o.int_ &&
           (float_ == o.float_ || (float_ != float_ && o.float_ != o.float_)) && keys_ == o.keys_ &&
           items_ == o.items_;
  }
  bool operator!=(const Tree& o) const { return !(*this == o); }

 private:
  template <typename>
  friend class Tree;
  explicit Tree(TreeKind kind) : kind_(kind) {}
  static Tree Sequence(TreeKind kind, std::vector<Tree> items) {
    Tree t(kind);
    t.items_ = std::move(items);
    return t;
  }

  TreeKind kind_ = TreeKind::kNone;
  std::optional<Leaf> leaf_;
  int64_t int_ = 0;
  double float_ = 0;
  std::vector<std::string> keys_;
  std::vector<Tree> items_;
};

using TreeSpec = Tree<NoLeaf>;

// "(*, [*, None], {"y": *, "lr": 0.5})".
std::string ToString(const TreeSpec& spec);

namespace tree_internal {

// Keeps a parameter out of template argument deduction, so a lambda converts.
template <typename T>
struct NoDeduce {
  using type = T;
};

std::string FloatToString(double v);
std::string Quoted(absl::string_view key);
// What a tree node is without its children's contents: "a leaf", "None",
// "int 3", "float 0.5", "a tuple of 2", "a list of 0", "a dict with keys ["x", "y"]".
std::string Describe(TreeKind kind, int64_t i, double f, size_t size,
                     const std::vector<std::string>& keys);

}  // namespace tree_internal

template <typename Leaf>
std::string Tree<Leaf>::ToString(
    const std::function<std::string(const Leaf&)>& leaf_to_string) const {
  std::vector<std::string> parts;
  for (size_t i = 0; i < items_.size(); ++i) {
    const std::string item = items_[i].ToString(leaf_to_string);
    parts.push_back(kind_ == TreeKind::kDict
                        ? absl::StrCat(tree_internal::Quoted(keys_[i]), ": ", item)
                        : item);
  }
  std::string joined;
  for (size_t i = 0; i < parts.size(); ++i) absl::StrAppend(&joined, i ? ", " : "", parts[i]);
  switch (kind_) {
    case TreeKind::kLeaf:
      return leaf_to_string(*leaf_);
    case TreeKind::kNone:
      return "None";
    case TreeKind::kInt:
      return absl::StrCat(int_);
    case TreeKind::kFloat:
      return tree_internal::FloatToString(float_);
    case TreeKind::kTuple:
      return absl::StrCat("(", joined, items_.size() == 1 ? ",)" : ")");
    case TreeKind::kList:
      return absl::StrCat("[", joined, "]");
    case TreeKind::kDict:
      return absl::StrCat("{", joined, "}");
  }
  return "";
}

// The leaves of `tree` in depth-first order, and its structure.
template <typename Leaf>
std::pair<std::vector<Leaf>, TreeSpec> Flatten(const Tree<Leaf>& tree) {
  std::vector<Leaf> leaves;
  tree.ForEachLeaf([&](const Leaf& leaf) { leaves.push_back(leaf); });
  return {std::move(leaves), tree.Map([](const Leaf&) { return NoLeaf{}; })};
}

// The inverse of Flatten; an error when the number of leaves does not fit.
template <typename Leaf>
absl::StatusOr<Tree<Leaf>> Unflatten(std::vector<Leaf> leaves, const TreeSpec& spec) {
  const int expected = spec.num_leaves();
  if (static_cast<int>(leaves.size()) != expected) {
    return absl::InvalidArgumentError(absl::StrCat("Unflatten: the spec ", ToString(spec), " has ",
                                                   expected, " leaves, got ", leaves.size()));
  }
  size_t next = 0;
  return spec.Map([&](const NoLeaf&) { return std::move(leaves[next++]); });
}

// Checks that `tree` has the structure `spec` (same containers, sizes, dict
// keys in order, equal scalars); check_leaf(leaf, leaf_index) checks each
// leaf and returns its own description of a mismatch. Errors are prefixed by
// the path from `root`: "inputs[0]["y"]: expected a tuple of 2, got None".
template <typename Leaf>
absl::Status CheckStructure(
    const Tree<Leaf>& tree, const TreeSpec& spec, absl::string_view root,
    const typename tree_internal::NoDeduce<std::function<absl::Status(const Leaf&, int)>>::type&
        check_leaf = nullptr) {
  int leaf_index = 0;
  std::function<absl::Status(const Tree<Leaf>&, const TreeSpec&, const std::string&)> check =
      [&](const Tree<Leaf>& t, const TreeSpec& s, const std::string& path) -> absl::Status {
    auto describe = [](const auto& x) {
      return tree_internal::Describe(x.kind(), x.int_value(), x.float_value(), x.items().size(),
                                     x.keys());
    };
    // Descriptions carry kinds, sizes, keys and exact scalars, so equal
    // descriptions mean equal nodes.
    const std::string want = describe(s), got = describe(t);
    if (want != got) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": expected ", want, ", got ", got));
    }
    if (t.is_leaf()) {
      absl::Status st = check_leaf ? check_leaf(t.leaf(), leaf_index) : absl::OkStatus();
      ++leaf_index;
      if (!st.ok()) return absl::Status(st.code(), absl::StrCat(path, ": ", st.message()));
    }
    for (size_t i = 0; i < t.items().size(); ++i) {
      const std::string child =
          s.kind() == TreeKind::kDict
              ? absl::StrCat(path, "[", tree_internal::Quoted(s.keys()[i]), "]")
              : absl::StrCat(path, "[", i, "]");
      TC_RETURN_IF_ERROR(check(t[i], s[i], child));
    }
    return absl::OkStatus();
  };
  return check(tree, spec, std::string(root));
}

}  // namespace tc

#endif  // TENSORCUT_GRAPH_TREE_H_
