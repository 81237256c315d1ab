#include "tests/graph/models.h"

#include "runtime/ops.h"
#include "runtime/trace.h"
#include "tests/test_util.h"

namespace tc::testing {
namespace {

using T = Tree<Tensor>;
constexpr DType kF64 = DType::kF64;

Tensor Rand(Shape shape, uint64_t seed) { return Random(shape, kF64, seed); }

}  // namespace

Model Mlp() {
  Tensor w1 = Rand({8, 3}, 1), b1 = Rand({8}, 2), w2 = Rand({2, 8}, 3), b2 = Rand({2}, 4);
  auto fn = [=](const T& in) {
    ScopedTraceScope mlp("mlp");
    Tensor h;
    {
      ScopedTraceScope fc1("fc1");
      h = linear(in[0].leaf(), w1, b1);
    }
    h = relu(h);
    ScopedTraceScope fc2("fc2");
    return T::MakeLeaf(log_softmax(linear(h, w2, b2), 1));
  };
  return {"mlp",
          fn,
          T::Tuple({T::MakeLeaf(Rand({4, 3}, 5))}),
          {{"fc1.weight", w1}, {"fc1.bias", b1}, {"fc2.weight", w2}, {"fc2.bias", b2}},
          {}};
}

Model ConvNet() {
  Tensor w = Rand({4, 3, 3, 3}, 6), gamma = Rand({4}, 7), beta = Rand({4}, 8);
  Tensor running_mean = Rand({4}, 9);
  auto fn = [=](const T& in) {
    Tensor h;
    {
      ScopedTraceScope conv("conv");
      Conv2dOptions o;
      o.padding = {1, 1};
      h = conv2d(in[0].leaf(), w, o);
    }
    ScopedTraceScope bn("bn");
    NormResult r = batch_norm(h, gamma, beta, 1e-5);
    Tensor new_mean = running_mean * 0.9 + r.mean * 0.1;
    Tensor y = max_pool2d(relu(r.y), Pool2dOptions{});
    return T::Tuple({T::MakeLeaf(y), T::MakeLeaf(new_mean)});
  };
  return {"conv_net",
          fn,
          T::Tuple({T::MakeLeaf(Rand({2, 3, 6, 6}, 10))}),
          {{"conv.weight", w}, {"bn.weight", gamma}, {"bn.bias", beta}},
          {{"bn.running_mean", running_mean}}};
}

Model Attention() {
  Tensor w = Rand({8, 8}, 11), b = Rand({8}, 12);
  auto fn = [=](const T& in) {
    ScopedTraceScope attn("attn");
    const Tensor &q = in[0].leaf(), &k = in[1].leaf(), &v = in[2].leaf();
    Tensor p = softmax(matmul(q, permute(k, {0, 2, 1})) * 0.125, -1);
    Tensor o = matmul(p, v);
    ScopedTraceScope proj("proj");
    return T::MakeLeaf(linear(o, w, b));
  };
  return {"attention",
          fn,
          T::Tuple({T::MakeLeaf(Rand({2, 4, 8}, 13)), T::MakeLeaf(Rand({2, 4, 8}, 14)),
                    T::MakeLeaf(Rand({2, 4, 8}, 15))}),
          {{"proj.weight", w}, {"proj.bias", b}},
          {}};
}

Model DictToTuple() {
  auto fn = [](const T& in) {
    const Tensor &x = (*in[0].Find("x")).leaf(), &y = (*in[0].Find("y")).leaf();
    Generator gen(42);
    Tensor c = randn({3}, kF64, &gen);
    Tensor p = x * y * in[1].float_value() + c;
    return T::Tuple({T::MakeLeaf(x + y), T::None(), T::Int(3), T::List({T::MakeLeaf(p)})});
  };
  return {"dict_to_tuple",
          fn,
          T::Tuple({T::Dict({{"x", T::MakeLeaf(Rand({3}, 16))}, {"y", T::MakeLeaf(Rand({3}, 17))}}),
                    T::Float(2.0)}),
          {},
          {}};
}

std::vector<Model> AllModels() { return {Mlp(), ConvNet(), Attention(), DictToTuple()}; }

}  // namespace tc::testing
