#include "codegen/insert_all_reduce.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/symbolic.h"

namespace tc::codegen {
namespace {

struct Gradient {
  int output;     // index into the graph's outputs
  int ready = 0;  // 1 + the position of the node producing it; 0: a placeholder
};

struct Bucket {
  DType dtype;
  std::vector<Gradient> gradients;
  int64_t bytes = 0;
};

absl::Status CheckReducible(const Value& v, int output) {
  const TensorType& t = v.type();
  if ((t.dtype != DType::kF32 && t.dtype != DType::kF64) || HasSymbolic(t.shape)) {
    return absl::InvalidArgumentError(
        absl::StrCat("insert-all-reduce: output ", output, " (%", v.name(), ") is ", t.ToString(),
                     "; a bucket holds f32 or f64 tensors of static shapes"));
  }
  return absl::OkStatus();
}

// The gradients in the order the graph produces them, cut into buckets.
absl::StatusOr<std::vector<Bucket>> CutBuckets(const Graph& g, const AllReduceOptions& options) {
  absl::flat_hash_map<const Node*, int> position;
  for (const Node* node : g.nodes()) position[node] = position.size() + 1;
  std::vector<Gradient> gradients;
  for (int o : options.outputs) {
    if (o < 0 || o >= static_cast<int>(g.outputs().size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("insert-all-reduce: output ", o, " of a graph of ", g.outputs().size()));
    }
    const Value* v = g.outputs()[o];
    TC_RETURN_IF_ERROR(CheckReducible(*v, o));
    if (v->type().numel() == 0) continue;  // nothing to sum
    gradients.push_back({o, v->is_placeholder() ? 0 : position.at(v->producer())});
  }
  std::stable_sort(gradients.begin(), gradients.end(),
                   [](const Gradient& a, const Gradient& b) { return a.ready < b.ready; });
  std::vector<Bucket> closed;
  std::map<DType, Bucket> open;
  for (const Gradient& grad : gradients) {
    const TensorType& t = g.outputs()[grad.output]->type();
    Bucket& bucket = open.try_emplace(t.dtype, Bucket{t.dtype}).first->second;
    bucket.gradients.push_back(grad);
    bucket.bytes += t.bytes();
    if (bucket.bytes >= (closed.empty() ? options.first_bucket_bytes : options.bucket_bytes)) {
      closed.push_back(std::move(bucket));
      open.erase(t.dtype);
    }
  }
  for (auto& [dtype, bucket] : open) closed.push_back(std::move(bucket));
  return closed;
}

absl::StatusOr<bool> Run(Graph& g, const AllReduceOptions& options) {
  TC_ASSIGN_OR_RETURN(const std::vector<Bucket> buckets, CutBuckets(g, options));
  if (buckets.empty()) return false;
  const std::vector<Node*> nodes = g.nodes();
  Value* weight = g.AddPlaceholder("grad_weight", {DType::kF64, {}});
  const Attrs group{{"group", options.group}};
  std::vector<Value*> outputs = g.outputs();
  std::vector<Value*> started;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const std::string source = absl::StrCat("bucket ", b);
    std::vector<Value*> operands;
    int ready = 0;
    for (const Gradient& grad : buckets[b].gradients) {
      operands.push_back(outputs[grad.output]);
      ready = std::max(ready, grad.ready);
    }
    operands.push_back(weight);
    TC_ASSIGN_OR_RETURN(const std::vector<Value*> start,
                        g.AddNode(OpKind::kAllReduceStart, operands, group, source));
    // Right after the last of its gradients: `ready` is 1 + its position.
    if (ready < static_cast<int>(nodes.size())) {
      TC_RETURN_IF_ERROR(g.MoveBefore(start[0]->producer(), nodes[ready]));
    }
    started.push_back(start[0]);
  }
  for (size_t b = 0; b < buckets.size(); ++b) {
    const std::string source = absl::StrCat("bucket ", b);
    TC_ASSIGN_OR_RETURN(const std::vector<Value*> summed,
                        g.AddNode(OpKind::kAllReduceWait, {started[b]}, group, source));
    int64_t offset = 0;
    for (const Gradient& grad : buckets[b].gradients) {
      const TensorType& t = outputs[grad.output]->type();
      Value* flat = summed[0];
      if (t.numel() != flat->type().numel()) {
        TC_ASSIGN_OR_RETURN(std::vector<Value*> sliced, g.AddNode(OpKind::kSlice, {flat},
                                                                  {{"dim", int64_t{0}},
                                                                   {"start", offset},
                                                                   {"end", offset + t.numel()},
                                                                   {"step", int64_t{1}}},
                                                                  source));
        flat = sliced[0];
      }
      Value* grad_value = flat;
      if (t.shape != flat->type().shape) {
        TC_ASSIGN_OR_RETURN(std::vector<Value*> shaped,
                            g.AddNode(OpKind::kReshape, {flat}, {{"shape", t.shape}}, source));
        grad_value = shaped[0];
      }
      outputs[grad.output] = grad_value;
      offset += t.numel();
    }
  }
  TC_RETURN_IF_ERROR(g.SetOutputs(std::move(outputs)));
  return true;
}

}  // namespace

Pass InsertAllReduce(AllReduceOptions options) {
  return {"insert-all-reduce",
          [options = std::move(options)](Graph& g) { return Run(g, options); }};
}

}  // namespace tc::codegen
