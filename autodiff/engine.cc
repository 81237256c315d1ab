#include "autodiff/engine.h"

#include <cstdio>
#include <cstdlib>
#include <deque>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "autodiff/vjp.h"
#include "base/status_macros.h"

namespace tc {
namespace {

// Creates the node for a call and attaches it to the outputs that can carry
// gradients.
std::shared_ptr<GradNode> MakeNode(absl::Span<const Tensor> inputs,
                                   absl::Span<const Tensor> outputs, bool save_tensors) {
  auto node = std::make_shared<GradNode>();
  for (const Tensor& in : inputs) {
    if (save_tensors) node->inputs.push_back(in.detach());
    GradEdge edge;
    if (in.requires_grad()) {
      if (in.is_leaf()) {
        edge.leaf = in;
      } else {
        edge.node = in.impl()->autograd->grad_fn;
        edge.output_nr = in.impl()->autograd->output_nr;
      }
    }
    node->edges.push_back(std::move(edge));
    node->input_types.push_back(in.type());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    if (save_tensors) node->outputs.push_back(out.detach());
    node->output_types.push_back(out.type());
    if (!IsFloating(out.dtype())) continue;
    auto meta = std::make_shared<AutogradMeta>();
    meta->requires_grad = true;
    meta->grad_fn = node;
    meta->output_nr = static_cast<int>(i);
    out.impl()->autograd = std::move(meta);
  }
  return node;
}

void Record(OpKind op, absl::Span<const Tensor> inputs, const Attrs& attrs,
            absl::Span<const Tensor> outputs) {
  if (GetVjp(op) == nullptr) return;  // backward-only ops: no double backward
  std::shared_ptr<GradNode> node = MakeNode(inputs, outputs, /*save_tensors=*/true);
  node->op = op;
  node->attrs = attrs;
}

// Registers the recorder with tc::Call when this library is linked.
const bool kRegistered = [] {
  SetGradRecorder(&Record);
  return true;
}();

Tensor Accumulate(const Tensor& sum, const Tensor& g) { return sum.defined() ? sum + g : g; }

// One backward pass. Gradients reaching a captured tensor (a leaf by its impl,
// an intermediate by its producing node and output) are kept in `captured`;
// with `accumulate`, gradients reaching leaves are added to their .grad.
class Engine {
 public:
  Engine(bool accumulate, bool retain_graph) : accumulate_(accumulate), retain_(retain_graph) {}

  void CaptureLeaf(const TensorImpl* leaf) { captured_leaf_[leaf] = Tensor(); }
  void CaptureOutput(const GradNode* node, int output_nr) {
    captured_out_[{node, output_nr}] = Tensor();
  }
  Tensor CapturedLeaf(const TensorImpl* leaf) { return captured_leaf_[leaf]; }
  Tensor CapturedOutput(const GradNode* node, int nr) { return captured_out_[{node, nr}]; }

  absl::Status Run(const TensorList& roots, const TensorList& root_grads) {
    NoGradGuard no_grad;
    std::vector<std::shared_ptr<GradNode>> starts;
    for (size_t i = 0; i < roots.size(); ++i) {
      const Tensor& root = roots[i];
      if (root.is_leaf()) {
        SendToLeaf(root, root_grads[i]);
        continue;
      }
      const AutogradMeta& meta = *root.impl()->autograd;
      std::vector<Tensor>& buffer = Buffer(meta.grad_fn.get());
      buffer[meta.output_nr] = Accumulate(buffer[meta.output_nr], root_grads[i]);
      starts.push_back(meta.grad_fn);
    }
    CountDependencies(starts);
    std::deque<std::shared_ptr<GradNode>> ready;
    for (const auto& node : starts) {
      if (dependencies_[node.get()] == 0) {
        dependencies_[node.get()] = -1;  // queued once
        ready.push_back(node);
      }
    }
    while (!ready.empty()) {
      std::shared_ptr<GradNode> node = ready.front();
      ready.pop_front();
      TC_RETURN_IF_ERROR(RunNode(*node));
      for (const GradEdge& edge : node->edges) {
        if (edge.node != nullptr && --dependencies_[edge.node.get()] == 0) {
          ready.push_back(edge.node);
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  std::vector<Tensor>& Buffer(const GradNode* node) {
    std::vector<Tensor>& b = buffers_[node];
    b.resize(node->output_types.size());
    return b;
  }

  void CountDependencies(const std::vector<std::shared_ptr<GradNode>>& starts) {
    std::vector<GradNode*> stack;
    for (const auto& n : starts) {
      if (dependencies_.emplace(n.get(), 0).second) stack.push_back(n.get());
    }
    while (!stack.empty()) {
      GradNode* node = stack.back();
      stack.pop_back();
      for (const GradEdge& edge : node->edges) {
        if (edge.node == nullptr) continue;
        auto [it, inserted] = dependencies_.emplace(edge.node.get(), 0);
        ++it->second;
        if (inserted) stack.push_back(edge.node.get());
      }
    }
  }

  absl::Status RunNode(GradNode& node) {
    if (node.released) {
      return absl::FailedPreconditionError(
          absl::StrCat("backward through a graph that was already freed (at ",
                       node.function_name.empty() ? OpName(node.op) : node.function_name,
                       "); pass retain_graph=true to the first backward to run it twice"));
    }
    std::vector<Tensor> grads = std::move(Buffer(&node));
    for (size_t i = 0; i < grads.size(); ++i) {
      auto it = captured_out_.find({&node, static_cast<int>(i)});
      if (it != captured_out_.end()) it->second = grads[i];
    }
    bool any = false;
    for (const Tensor& g : grads) any |= g.defined();
    if (any) {
      TensorList input_grads;
      if (node.function) {
        TC_ASSIGN_OR_RETURN(input_grads, node.function(grads));
      } else {
        const VjpContext ctx{node.inputs, node.outputs, node.attrs, grads};
        input_grads = GetVjp(node.op)(ctx);
      }
      for (size_t i = 0; i < node.edges.size(); ++i) {
        const Tensor& g = i < input_grads.size() ? input_grads[i] : Tensor();
        const GradEdge& edge = node.edges[i];
        if (!g.defined() || (edge.node == nullptr && !edge.leaf.defined())) continue;
        if (g.shape() != node.input_types[i].shape) {
          return absl::InternalError(absl::StrCat(
              "backward of ", node.function ? node.function_name : OpName(node.op), " gave ",
              g.type().ToString(), " for input ", i, " of type ", node.input_types[i].ToString()));
        }
        if (edge.node != nullptr) {
          std::vector<Tensor>& buffer = Buffer(edge.node.get());
          buffer[edge.output_nr] = Accumulate(buffer[edge.output_nr], g);
        } else {
          SendToLeaf(edge.leaf, g);
        }
      }
    }
    if (!retain_) {
      node.inputs.clear();
      node.outputs.clear();
      node.function = nullptr;
      node.released = true;
    }
    return absl::OkStatus();
  }

  void SendToLeaf(const Tensor& leaf, const Tensor& g) {
    if (!g.defined()) return;
    auto it = captured_leaf_.find(leaf.impl());
    if (it != captured_leaf_.end()) it->second = Accumulate(it->second, g);
    if (accumulate_) leaf.set_grad(Accumulate(leaf.grad(), g).contiguous());
  }

  const bool accumulate_;
  const bool retain_;
  absl::flat_hash_map<const GradNode*, std::vector<Tensor>> buffers_;
  absl::flat_hash_map<const GradNode*, int> dependencies_;
  absl::flat_hash_map<const TensorImpl*, Tensor> captured_leaf_;
  absl::flat_hash_map<std::pair<const GradNode*, int>, Tensor> captured_out_;
};

// Checks that `output` can start a backward pass and returns its seed gradient.
absl::StatusOr<Tensor> SeedGradient(const Tensor& output, const Tensor& grad_output,
                                    absl::string_view where) {
  if (!output.defined())
    return absl::InvalidArgumentError(absl::StrCat(where, ": undefined tensor"));
  if (!output.requires_grad()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": tensor ", output.type().ToString(),
                                                   " does not require grad and has no grad_fn"));
  }
  if (!grad_output.defined()) {
    if (output.numel() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": grad_output is required for non-scalar output ", output.type().ToString()));
    }
    return ones(output.shape(), output.dtype());
  }
  if (grad_output.type() != output.type()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": grad_output ", grad_output.type().ToString(),
                     " does not match output ", output.type().ToString()));
  }
  return grad_output.detach();
}

}  // namespace

void RecordFunction(absl::string_view name, absl::Span<const Tensor> inputs,
                    absl::Span<const Tensor> outputs, BackwardFn backward) {
  bool any = false;
  for (const Tensor& in : inputs) any |= in.requires_grad();
  if (!any || !GradMode::IsEnabled()) return;
  std::shared_ptr<GradNode> node = MakeNode(inputs, outputs, /*save_tensors=*/false);
  node->function = std::move(backward);
  node->function_name = std::string(name);
}

absl::Status Backward(const Tensor& output, const Tensor& grad_output, bool retain_graph) {
  TC_ASSIGN_OR_RETURN(Tensor seed, SeedGradient(output, grad_output, "backward"));
  Engine engine(/*accumulate=*/true, retain_graph);
  return engine.Run({output}, {seed});
}

void Tensor::backward(const Tensor& grad_output, bool retain_graph) const {
  ThrowIfError(Backward(*this, grad_output, retain_graph));
}

absl::StatusOr<TensorList> grad(const TensorList& outputs, const TensorList& inputs,
                                const TensorList& grad_outputs, bool retain_graph) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "grad: ", grad_outputs.size(), " grad_outputs for ", outputs.size(), " outputs"));
  }
  TensorList seeds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    TC_ASSIGN_OR_RETURN(Tensor seed,
                        SeedGradient(outputs[i], grad_outputs.empty() ? Tensor() : grad_outputs[i],
                                     absl::StrCat("grad: output ", i)));
    seeds.push_back(std::move(seed));
  }
  Engine engine(/*accumulate=*/false, retain_graph);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined() || !in.requires_grad()) {
      return absl::InvalidArgumentError(absl::StrCat("grad: input ", i, " does not require grad"));
    }
    if (in.is_leaf()) {
      engine.CaptureLeaf(in.impl());
    } else {
      engine.CaptureOutput(in.impl()->autograd->grad_fn.get(), in.impl()->autograd->output_nr);
    }
  }
  TC_RETURN_IF_ERROR(engine.Run(outputs, seeds));
  TensorList result;
  for (const Tensor& in : inputs) {
    Tensor g = in.is_leaf() ? engine.CapturedLeaf(in.impl())
                            : engine.CapturedOutput(in.impl()->autograd->grad_fn.get(),
                                                    in.impl()->autograd->output_nr);
    result.push_back(g.defined() ? g : zeros(in.shape(), in.dtype()));
  }
  return result;
}

}  // namespace tc
