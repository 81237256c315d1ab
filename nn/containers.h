// Container and shape layers, as torch.nn's: Sequential (runs children in
// order), ModuleList and ModuleDict (hold children under their position or
// key, with no forward of their own), Identity and Flatten.
//
//   auto blocks = std::make_shared<nn::ModuleList>();
//   for (int i = 0; i < 4; ++i) blocks->push_back(std::make_shared<Block>());
//   for (const auto& block : *blocks) x = (*block)(x);  // "blocks.0.fc.weight", ...
//
//   nn::ModuleDict heads;
//   heads.insert("cls", std::make_shared<nn::Linear>(64, 10));
//   Tensor logits = (*heads.at("cls"))(features);
#ifndef TENSORCUT_NN_CONTAINERS_H_
#define TENSORCUT_NN_CONTAINERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace tc::nn {

// Runs its children in order; they are named "0", "1", ... by position.
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);

  TensorTree forward(const TensorTree& input) override;
  Tensor forward(const Tensor& x) override;

  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return modules_[i]; }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

// Children named "0", "1", ... by position; calling it is an error (call its
// modules instead), as in PyTorch.
class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);

  Tensor forward(const Tensor& x) override;
  TensorTree forward(const TensorTree& input) override;
  // As torch 2.x: a run of children that print alike collapses to one line,
  // "(0-3): 4 x Block(...)".
  std::string ToString() const override;

  size_t size() const { return modules_.size(); }
  // Throws (OutOfRange) past the end.
  const std::shared_ptr<Module>& operator[](size_t i) const;
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

// Children under string keys, in insertion order. A key must be non-empty,
// contain no ".", and be new.
class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  void insert(const std::string& key, std::shared_ptr<Module> module);

  Tensor forward(const Tensor& x) override;
  TensorTree forward(const TensorTree& input) override;

  size_t size() const { return named_children().size(); }
  bool contains(const std::string& key) const;
  // Throws (NotFound) naming the keys there are.
  const std::shared_ptr<Module>& at(const std::string& key) const;
  std::vector<std::string> keys() const;
};

// Returns its input.
class Identity : public Module {
 public:
  TensorTree forward(const TensorTree& input) override { return input; }
  Tensor forward(const Tensor& x) override { return x; }
};

// Merges dims [start_dim, end_dim] (negative dims count from the end).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim_(start_dim), end_dim_(end_dim) {}
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

 private:
  int64_t start_dim_, end_dim_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_CONTAINERS_H_
