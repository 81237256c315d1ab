// ModuleList, ModuleDict, Identity: names of what they hold, lookups and
// their errors, and the identity's values.
#include "nn/containers.h"

#include "catch2/catch.hpp"
#include "nn/layers.h"
#include "tests/nn/layer_check.h"
#include "tests/nn/nn_test_util.h"

namespace tc {
namespace {

using testing::Names;

// Two linear blocks from a ModuleList and a head from a ModuleDict.
class Tower : public nn::Module {
 public:
  explicit Tower(uint64_t seed = 1) {
    Generator gen(seed);
    blocks_ = register_module("blocks", std::make_shared<nn::ModuleList>());
    for (int i = 0; i < 2; ++i) blocks_->push_back(std::make_shared<nn::Linear>(3, 3, true, &gen));
    heads_ = register_module("heads", std::make_shared<nn::ModuleDict>());
    heads_->insert("cls", std::make_shared<nn::Linear>(3, 2, true, &gen));
    heads_->insert("skip", std::make_shared<nn::Identity>());
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (const auto& block : *blocks_) h = relu((*block)(h));
    return (*heads_->at("cls"))((*heads_->at("skip"))(h));
  }
  using Module::forward;

 private:
  std::shared_ptr<nn::ModuleList> blocks_;
  std::shared_ptr<nn::ModuleDict> heads_;
};

TEST_CASE("ModuleList and ModuleDict name their modules by position and key") {
  Tower tower;
  CHECK(Names(tower.named_parameters()) ==
        std::vector<std::string>{"blocks.0.weight", "blocks.0.bias", "blocks.1.weight",
                                 "blocks.1.bias", "heads.cls.weight", "heads.cls.bias"});
  testing::CheckLayer(
      [] {
        auto t = std::make_shared<Tower>();
        t->to(DType::kF64);
        return t;
      },
      TensorTree::MakeLeaf(testing::Random({4, 3}, DType::kF64, 1).requires_grad_()));
}

TEST_CASE("containers print as torch's repr, runs of equal children collapsed") {
  Tower tower;
  CHECK(tower.ToString() ==
        "Tower(\n"
        "  (blocks): ModuleList(\n"
        "    (0-1): 2 x Linear(in_features=3, out_features=3, bias=True)\n"
        "  )\n"
        "  (heads): ModuleDict(\n"
        "    (cls): Linear(in_features=3, out_features=2, bias=True)\n"
        "    (skip): Identity()\n"
        "  )\n"
        ")");
  nn::ModuleList mixed({std::make_shared<nn::ReLU>(), std::make_shared<nn::Tanh>()});
  CHECK(mixed.ToString() == "ModuleList(\n  (0): ReLU()\n  (1): Tanh()\n)");
}

TEST_CASE("container lookups and calls give clear errors") {
  nn::ModuleList list({std::make_shared<nn::ReLU>()});
  CHECK(list.size() == 1);
  CHECK_THROWS_WITH(list[1], "ModuleList: index 1 is out of range for 1 modules");
  CHECK_THROWS_WITH(list(zeros({2})), "ModuleList has no forward of its own; call its modules");
  nn::ModuleDict dict;
  dict.insert("a", std::make_shared<nn::ReLU>());
  CHECK(dict.keys() == std::vector<std::string>{"a"});
  CHECK(dict.contains("a"));
  CHECK_THROWS_WITH(dict.at("b"), "ModuleDict: no key \"b\" (keys: a)");
  CHECK_THROWS_WITH(dict.insert("a", std::make_shared<nn::ReLU>()), "ModuleDict: key \"a\" exists");
  CHECK_THROWS_WITH(dict.insert("x.y", std::make_shared<nn::ReLU>()),
                    "ModuleDict: a key must be non-empty and contain no \".\", got \"x.y\"");
}

TEST_CASE("Identity passes its input through, structured or not") {
  nn::Identity id;
  const Tensor x = ones({2, 3});
  CHECK(id(x).same(x));
  CHECK(id.ToString() == "Identity()");
}

}  // namespace
}  // namespace tc
