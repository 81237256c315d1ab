// MultiheadAttention against attention written out head by head with
// matmul and softmax, in f64, in value and gradients.
#include "nn/attention.h"

#include <cmath>
#include <limits>

#include "nn/containers.h"
#include "runtime/autograd_meta.h"
#include "tests/nn/layer_check.h"
#include "tests/nn/nn_test_util.h"

namespace tc {
namespace {

using testing::Names;
using testing::ParamsAnd;
using testing::Random;
using testing::RequireSameValueAndGrads;

// Rows [start, end) of a matrix, or entries of a vector.
Tensor Rows(const Tensor& t, int64_t start, int64_t end) { return slice(t, 0, start, end); }

// softmax(q_h k_h^T / sqrt(d) + mask) v_h for each head h separately, the
// heads concatenated, then the output projection. q [B, S, E], k and v [B, T, E].
Tensor ReferenceAttention(const nn::MultiheadAttention& attn, int64_t heads, const Tensor& query,
                          const Tensor& key, const Tensor& value, bool causal) {
  const int64_t e = query.size(2), d = e / heads, s = query.size(1), t = key.size(1);
  const Tensor& w = attn.in_proj_weight();
  const Tensor& b = attn.in_proj_bias();
  std::vector<double> mask(s * t, 0.0);
  for (int64_t i = 0; i < s; ++i) {
    for (int64_t j = 0; j < t; ++j) {
      if (causal && j > i) mask[i * t + j] = -std::numeric_limits<double>::infinity();
    }
  }
  const Tensor mask_t = from_vector<double>(mask, {s, t});
  std::vector<Tensor> outs;
  for (int64_t h = 0; h < heads; ++h) {
    auto project = [&](const Tensor& x, int64_t part) {
      const int64_t lo = part * e + h * d;
      return matmul(x, transpose(Rows(w, lo, lo + d), 0, 1)) + Rows(b, lo, lo + d);
    };
    Tensor q = project(query, 0), k = project(key, 1), v = project(value, 2);  // [B, *, d]
    Tensor scores = matmul(q, transpose(k, 1, 2)) / std::sqrt(static_cast<double>(d)) + mask_t;
    outs.push_back(matmul(softmax(scores, 2), v));
  }
  Tensor merged = concat(outs, 2);
  return matmul(merged, transpose(attn.out_proj()->weight(), 0, 1)) + attn.out_proj()->bias();
}

void RandomizeBiases(const nn::MultiheadAttention& attn) {
  NoGradGuard no_grad;
  nn::AssignInPlace(attn.in_proj_bias(), Random(attn.in_proj_bias().shape(), DType::kF64, 5));
  nn::AssignInPlace(attn.out_proj()->bias(),
                    Random(attn.out_proj()->bias().shape(), DType::kF64, 6));
}

TEST_CASE("MultiheadAttention has PyTorch's parameters and initialisation") {
  Generator gen(1);
  nn::MultiheadAttention attn(64, 4, false, &gen);
  CHECK(Names(attn.named_parameters()) == std::vector<std::string>{"in_proj_weight", "in_proj_bias",
                                                                   "out_proj.weight",
                                                                   "out_proj.bias"});
  CHECK(attn.in_proj_weight().shape() == Shape{192, 64});
  // xavier_uniform over [3E, E]: bound sqrt(6 / (E + 3E)).
  const double bound = std::sqrt(6.0 / (64 + 192));
  double lo = 0, hi = 0;
  for (double v : attn.in_proj_weight().to_vector<double>()) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(lo >= -bound);
  CHECK(hi <= bound);
  CHECK(hi > 0.95 * bound);
  for (double v : attn.in_proj_bias().to_vector<double>()) REQUIRE(v == 0);
  for (double v : attn.out_proj()->bias().to_vector<double>()) REQUIRE(v == 0);
  for (double v : attn.out_proj()->weight().to_vector<double>()) {
    REQUIRE(std::abs(v) <= 1 / std::sqrt(64.0));
  }
  CHECK(attn.out_proj()->bias().requires_grad());
  CHECK_THROWS_WITH(nn::MultiheadAttention(10, 3),
                    "MultiheadAttention: embed_dim (10) must be a positive multiple of "
                    "num_heads (3)");
}

TEST_CASE("MultiheadAttention self-attention matches per-head attention") {
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    nn::MultiheadAttention attn(12, 3, causal);
    attn.to(DType::kF64);
    RandomizeBiases(attn);
    Tensor x = Random({2, 5, 12}, DType::kF64, 7).requires_grad_();
    RequireSameValueAndGrads(attn(x), ReferenceAttention(attn, 3, x, x, x, causal),
                             ParamsAnd(attn, {x}));
  }
}

TEST_CASE("MultiheadAttention attends from queries to separate keys and values") {
  nn::MultiheadAttention attn(8, 2);
  attn.to(DType::kF64);
  RandomizeBiases(attn);
  Tensor q = Random({3, 4, 8}, DType::kF64, 8).requires_grad_();
  Tensor k = Random({3, 6, 8}, DType::kF64, 9).requires_grad_();
  Tensor v = Random({3, 6, 8}, DType::kF64, 10).requires_grad_();
  RequireSameValueAndGrads(attn.attend(q, k, v), ReferenceAttention(attn, 2, q, k, v, false),
                           ParamsAnd(attn, {q, k, v}));

  nn::MultiheadAttention causal(8, 2, /*causal=*/true);
  CHECK_THROWS_WITH(
      causal.attend(zeros({3, 4, 8}), zeros({3, 6, 8}), zeros({3, 6, 8})),
      "MultiheadAttention: a causal mask needs as many keys as queries, got 4 queries and 6 keys");
  CHECK_THROWS_WITH(attn(zeros({3, 4, 7})),
                    "MultiheadAttention: expected query, key and value [batch, seq, 8], got "
                    "f32[3,4,7]");
}

TEST_CASE("a key padding mask equals attending to the unpadded keys alone") {
  nn::MultiheadAttention attn(8, 2);
  attn.to(DType::kF64);
  RandomizeBiases(attn);
  const Tensor q = Random({2, 3, 8}, DType::kF64, 11), kv = Random({2, 5, 8}, DType::kF64, 12);
  // Sample 0 has 5 real keys, sample 1 the first 2.
  const Tensor pad = from_vector<bool>(
      {false, false, false, false, false, false, false, true, true, true}, {2, 5});
  const Tensor got = attn.attend(q, kv, kv, pad);
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t keys = b == 0 ? 5 : 2;
    const Tensor qb = slice(q, 0, b, b + 1), kb = slice(slice(kv, 0, b, b + 1), 1, 0, keys);
    REQUIRE_TENSORS_CLOSE(slice(got, 0, b, b + 1), attn.attend(qb, kb, kb), 1e-12, 1e-12);
  }
  // A bool attn_mask is -inf where true; a float one is added as given.
  const Tensor causal = gt(reshape(arange(3), {1, 3}), reshape(arange(3), {3, 1}));
  const Tensor x = slice(kv, 1, 0, 3);
  nn::MultiheadAttention masked(8, 2, /*causal=*/true);
  masked.to(DType::kF64);
  REQUIRE(masked.load_state_dict(attn.state_dict()).ok());
  REQUIRE_TENSORS_CLOSE(attn.attend(x, x, x, Tensor(), causal), masked(x), 1e-12, 1e-12);
  const Tensor bias = Random({3, 3}, DType::kF64, 13);
  const Tensor with_bias = attn.attend(x, x, x, Tensor(), bias);
  CHECK(testing::CompareTensors(with_bias, attn(x), 1e-6, 1e-6) != "");
  CHECK_THROWS_WITH(
      attn.attend(q, kv, kv, zeros({2, 4}, DType::kBool)),
      "MultiheadAttention: expected key_padding_mask bool or f64 [2,5], got bool[2,4]");
  CHECK_THROWS_WITH(attn.attend(x, x, x, Tensor(), zeros({3, 3}, DType::kI64)),
                    "MultiheadAttention: expected attn_mask bool or f64 [3,3], got i64[3,3]");
}

// Self-attention with a key padding mask, as a module over (x, mask).
class PaddedSelfAttention : public nn::Module {
 public:
  PaddedSelfAttention() {
    Generator gen(4);
    attn_ = register_module("attn", std::make_shared<nn::MultiheadAttention>(8, 2, false, &gen));
    to(DType::kF64);
    RandomizeBiases(*attn_);
  }
  TensorTree forward(const TensorTree& in) override {
    const Tensor& x = in[0].leaf();
    return TensorTree::MakeLeaf(attn_->attend(x, x, x, in[1].leaf()));
  }

 private:
  std::shared_ptr<nn::MultiheadAttention> attn_;
};

TEST_CASE("masked attention: gradients against finite differences, compiled against eager") {
  const Tensor pad =
      from_vector<bool>({false, false, false, true, false, false, true, true}, {2, 4});
  testing::CheckLayer(
      [] { return std::make_shared<PaddedSelfAttention>(); },
      TensorTree::Tuple({TensorTree::MakeLeaf(Random({2, 4, 8}, DType::kF64, 14).requires_grad_()),
                         TensorTree::MakeLeaf(pad)}));
}

// Each head's softmax(q_h k_h^T / sqrt(d) + mask): [B, H, S, T], in f64.
Tensor ReferenceWeights(const nn::MultiheadAttention& attn, int64_t heads, const Tensor& query,
                        const Tensor& key, const Tensor& mask) {
  const int64_t e = query.size(2), d = e / heads;
  const Tensor& w = attn.in_proj_weight();
  const Tensor& b = attn.in_proj_bias();
  std::vector<Tensor> per_head;
  for (int64_t h = 0; h < heads; ++h) {
    auto project = [&](const Tensor& x, int64_t part) {
      const int64_t lo = part * e + h * d;
      return matmul(x, transpose(Rows(w, lo, lo + d), 0, 1)) + Rows(b, lo, lo + d);
    };
    Tensor scores =
        matmul(project(query, 0), transpose(project(key, 1), 1, 2)) / std::sqrt(double(d)) + mask;
    per_head.push_back(softmax(scores, 2));
  }
  return stack(per_head, 1);
}

TEST_CASE("attend_with_weights returns each head's weights or their mean, as PyTorch") {
  nn::MultiheadAttention attn(8, 2);
  attn.to(DType::kF64);
  RandomizeBiases(attn);
  const Tensor q = Random({2, 3, 8}, DType::kF64, 20), kv = Random({2, 5, 8}, DType::kF64, 21);
  const Tensor bias = Random({3, 5}, DType::kF64, 22);
  const auto [out, mean_weights] = attn.attend_with_weights(q, kv, kv, Tensor(), bias);
  const Tensor reference = ReferenceWeights(attn, 2, q, kv, bias);
  CHECK(mean_weights.shape() == Shape{2, 3, 5});
  REQUIRE_TENSORS_CLOSE(mean_weights, mean(reference, {1}), 1e-12, 1e-12);
  REQUIRE_TENSORS_CLOSE(sum(mean_weights, {2}), ones({2, 3}, DType::kF64), 1e-12, 1e-12);
  // The written-out output equals the fused one.
  REQUIRE_TENSORS_CLOSE(out, attn.attend(q, kv, kv, Tensor(), bias), 1e-12, 1e-12);
  const Tensor per_head =
      attn.attend_with_weights(q, kv, kv, Tensor(), bias, /*average_attn_weights=*/false).weights;
  CHECK(per_head.shape() == Shape{2, 2, 3, 5});
  REQUIRE_TENSORS_CLOSE(per_head, reference, 1e-12, 1e-12);
}

// Self-attention's output beside its mean attention weights, as one output.
class SelfAttentionWeights : public nn::Module {
 public:
  SelfAttentionWeights() {
    Generator gen(5);
    attn_ = register_module("attn", std::make_shared<nn::MultiheadAttention>(8, 2, true, &gen));
    to(DType::kF64);
    RandomizeBiases(*attn_);
  }
  Tensor forward(const Tensor& x) override {
    const auto [out, weights] = attn_->attend_with_weights(x, x, x);
    return concat({out, weights}, 2);
  }
  using nn::Module::forward;

 private:
  std::shared_ptr<nn::MultiheadAttention> attn_;
};

TEST_CASE("attention weights: gradients against finite differences, compiled against eager") {
  testing::CheckLayer([] { return std::make_shared<SelfAttentionWeights>(); },
                      TensorTree::MakeLeaf(Random({2, 4, 8}, DType::kF64, 23).requires_grad_()));
}

TEST_CASE("batch_first = false takes and returns [S, B, E]") {
  Generator gen(6);
  nn::MultiheadAttention batch_first(8, 2, /*causal=*/true, &gen);
  nn::MultiheadAttention seq_first(8, 2, {.causal = true, .batch_first = false});
  batch_first.to(DType::kF64);
  seq_first.to(DType::kF64);
  RandomizeBiases(batch_first);
  REQUIRE(seq_first.load_state_dict(batch_first.state_dict()).ok());
  const Tensor x = Random({2, 4, 8}, DType::kF64, 24);
  const Tensor pad =
      from_vector<bool>({false, false, false, true, false, false, false, false}, {2, 4});
  REQUIRE_TENSORS_CLOSE(
      seq_first.attend(transpose(x, 0, 1), transpose(x, 0, 1), transpose(x, 0, 1), pad),
      transpose(batch_first.attend(x, x, x, pad), 0, 1), 1e-12, 1e-12);
  // The weights stay batch first, as PyTorch's.
  REQUIRE_TENSORS_CLOSE(
      seq_first.attend_with_weights(transpose(x, 0, 1), transpose(x, 0, 1), transpose(x, 0, 1))
          .weights,
      batch_first.attend_with_weights(x, x, x).weights, 1e-12, 1e-12);
  CHECK_THROWS_WITH(seq_first(zeros({3, 4, 7})),
                    "MultiheadAttention: expected query, key and value [seq, batch, 8], got "
                    "f32[3,4,7]");
}

TEST_CASE("masks reach forward through a dict, so masked attention sits in a Sequential") {
  Generator gen(7);
  auto attn = std::make_shared<nn::MultiheadAttention>(8, 2, false, &gen);
  auto head = std::make_shared<nn::Linear>(8, 3, true, &gen);
  nn::Sequential model({attn, head});
  model.to(DType::kF64);
  const Tensor x = Random({2, 4, 8}, DType::kF64, 25), kv = Random({2, 5, 8}, DType::kF64, 26);
  const Tensor pad =
      from_vector<bool>({false, false, false, true, false, false, false, false}, {2, 4});
  const Tensor got = model(TensorTree::Dict({{"query", TensorTree::MakeLeaf(x)},
                                             {"key_padding_mask", TensorTree::MakeLeaf(pad)}}))
                         .leaf();
  REQUIRE_TENSORS_CLOSE(got, (*head)(attn->attend(x, x, x, pad)), 1e-12, 1e-12);
  const Tensor cross = (*attn)(TensorTree::Dict({{"query", TensorTree::MakeLeaf(x)},
                                                 {"key", TensorTree::MakeLeaf(kv)}}))
                           .leaf();
  REQUIRE_TENSORS_CLOSE(cross, attn->attend(x, kv, kv), 1e-12, 1e-12);
  CHECK_THROWS_WITH((*attn)(TensorTree::Dict({{"key", TensorTree::MakeLeaf(x)}})),
                    "MultiheadAttention: expected a tensor or a dict with \"query\" (and "
                    "optionally \"key\", \"value\", \"key_padding_mask\", \"attn_mask\")");
  CHECK_THROWS_WITH((*attn)(TensorTree::Dict(
                        {{"query", TensorTree::MakeLeaf(x)}, {"mask", TensorTree::MakeLeaf(pad)}})),
                    "MultiheadAttention: unknown input \"mask\" (expected query, key, value, "
                    "key_padding_mask, attn_mask)");
}

}  // namespace
}  // namespace tc
