// Tree/TreeSpec: flatten/unflatten round trips over nested containers, and
// structure mismatches reported with their path.
#include "graph/tree.h"

#include <string>

#include "catch2/catch.hpp"

namespace tc {
namespace {

using T = Tree<std::string>;

// (
//   {"x": a, "y": [b, None, (c,)]},
//   [d, 3, 0.5],
//   {"inner": {"z": e}, "empty": []},
// )
T Nested() {
  return T::Tuple({
      T::Dict({{"x", T::MakeLeaf("a")},
               {"y", T::List({T::MakeLeaf("b"), T::None(), T::Tuple({T::MakeLeaf("c")})})}}),
      T::List({T::MakeLeaf("d"), T::Int(3), T::Float(0.5)}),
      T::Dict({{"inner", T::Dict({{"z", T::MakeLeaf("e")}})}, {"empty", T::List({})}}),
  });
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

TEST_CASE("flatten gives leaves depth first and the structure; unflatten inverts it") {
  const T tree = Nested();
  auto [leaves, spec] = Flatten(tree);
  CHECK(leaves == std::vector<std::string>{"a", "b", "c", "d", "e"});
  CHECK(spec.num_leaves() == 5);
  CHECK(
      ToString(spec) ==
      "({\"x\": *, \"y\": [*, None, (*,)]}, [*, 3, 0.5], {\"inner\": {\"z\": *}, \"empty\": []})");
  CHECK(tree.ToString(Quote) ==
        "({\"x\": 'a', \"y\": ['b', None, ('c',)]}, ['d', 3, 0.5], "
        "{\"inner\": {\"z\": 'e'}, \"empty\": []})");
  absl::StatusOr<T> back = Unflatten(leaves, spec);
  REQUIRE(back.ok());
  CHECK(*back == tree);
  // New leaves in the same structure.
  absl::StatusOr<T> other = Unflatten<std::string>({"1", "2", "3", "4", "5"}, spec);
  REQUIRE(other.ok());
  CHECK(Flatten(*other).second == spec);
  CHECK((*other)[0].Find("y")->items()[2][0].leaf() == "3");
  CHECK(*other != tree);
}

TEST_CASE("dict keys keep insertion order") {
  const T d = T::Dict({{"b", T::Int(1)}, {"a", T::Int(2)}});
  CHECK(d.keys() == std::vector<std::string>{"b", "a"});
  CHECK(d.ToString(Quote) == "{\"b\": 1, \"a\": 2}");
  CHECK(d.Find("a")->int_value() == 2);
  CHECK(d.Find("c") == nullptr);
  CHECK(T::Dict({{"a", T::Int(2)}, {"b", T::Int(1)}}) != d);
}

TEST_CASE("leaves and scalars alone, and Map to another leaf type") {
  auto [leaves, spec] = Flatten(T::MakeLeaf("only"));
  CHECK(leaves == std::vector<std::string>{"only"});
  CHECK(ToString(spec) == "*");
  CHECK(Flatten(T::Float(2.0)).first.empty());
  CHECK(ToString(Flatten(T::Float(2.0)).second) == "2.0");
  const Tree<int> lengths = Nested().Map([](const std::string& s) { return int(s.size()); });
  CHECK(lengths.num_leaves() == 5);
  CHECK(Flatten(lengths).second == Flatten(Nested()).second);
}

TEST_CASE("unflatten rejects the wrong number of leaves") {
  const TreeSpec spec = Flatten(T::Tuple({T::MakeLeaf("a"), T::MakeLeaf("b")})).second;
  CHECK(Unflatten<std::string>({"a"}, spec).status().message() ==
        "Unflatten: the spec (*, *) has 2 leaves, got 1");
}

// Leaves here are "f32[4,4]"-style type strings; the check is the caller's.
absl::Status CheckAgainst(const T& tree, const T& reference) {
  const auto [expected, spec] = Flatten(reference);
  return CheckStructure(
      tree, spec, "inputs", [&expected = expected](const std::string& leaf, int i) {
        if (leaf == expected[i]) return absl::OkStatus();
        return absl::InvalidArgumentError("expected tensor " + expected[i] + ", got " + leaf);
      });
}

TEST_CASE("structure mismatches name the path") {
  const T ref = T::Tuple({T::Dict({{"x", T::MakeLeaf("f32[4,3]")}, {"y", T::MakeLeaf("f32[4,4]")}}),
                          T::List({T::Int(3), T::Float(0.5)})});
  auto with = [](T first, T second) { return T::Tuple({std::move(first), std::move(second)}); };
  const T good_dict = T::Dict({{"x", T::MakeLeaf("f32[4,3]")}, {"y", T::MakeLeaf("f32[4,4]")}});
  const T good_list = T::List({T::Int(3), T::Float(0.5)});
  CHECK(CheckAgainst(ref, ref).ok());
  CHECK(CheckAgainst(with(T::Dict({{"x", T::MakeLeaf("f32[4,3]")}, {"y", T::MakeLeaf("f32[4,3]")}}),
                          good_list),
                     ref)
            .message() == "inputs[0][\"y\"]: expected tensor f32[4,4], got f32[4,3]");
  CHECK(CheckAgainst(with(T::Dict({{"x", T::MakeLeaf("f32[4,3]")}, {"z", T::MakeLeaf("f32[4,4]")}}),
                          good_list),
                     ref)
            .message() ==
        "inputs[0]: expected a dict with keys [\"x\", \"y\"], got a dict with keys [\"x\", \"z\"]");
  CHECK(CheckAgainst(with(good_dict, T::List({T::Int(4), T::Float(0.5)})), ref).message() ==
        "inputs[1][0]: expected int 3, got int 4");
  CHECK(CheckAgainst(with(good_dict, T::List({T::Int(3), T::Float(0.25)})), ref).message() ==
        "inputs[1][1]: expected float 0.5, got float 0.25");
  CHECK(CheckAgainst(with(good_dict, T::Tuple({T::Int(3), T::Float(0.5)})), ref).message() ==
        "inputs[1]: expected a list of 2, got a tuple of 2");
  CHECK(CheckAgainst(with(good_dict, T::List({T::Int(3)})), ref).message() ==
        "inputs[1]: expected a list of 2, got a list of 1");
  CHECK(CheckAgainst(with(T::None(), good_list), ref).message() ==
        "inputs[0]: expected a dict with keys [\"x\", \"y\"], got None");
  CHECK(CheckAgainst(T::MakeLeaf("f32[4,3]"), ref).message() ==
        "inputs: expected a tuple of 2, got a leaf");
  // Without a leaf check only the structure is compared.
  CHECK(CheckStructure(with(good_dict, good_list), Flatten(ref).second, "args").ok());
}

}  // namespace
}  // namespace tc
