// Shared by the nn tests: comparing a module against an independent
// composition of ops, in value and in every gradient.
#ifndef TENSORCUT_TESTS_NN_NN_TEST_UTIL_H_
#define TENSORCUT_TESTS_NN_NN_TEST_UTIL_H_

#include <string>
#include <vector>

#include "autodiff/engine.h"
#include "catch2/catch.hpp"
#include "nn/module.h"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc::testing {

inline std::vector<std::string> Names(const nn::NamedTensors& named) {
  std::vector<std::string> names;
  for (const auto& [name, t] : named) names.push_back(name);
  return names;
}

// `got` equals `want`, and so do the gradients of sum(out * r) (r random)
// with respect to every tensor of `wrt`, computed through each side's graph.
inline void RequireSameValueAndGrads(const Tensor& got, const Tensor& want, const TensorList& wrt,
                                     double tol = 1e-10) {
  REQUIRE_TENSORS_CLOSE(got, want, tol, tol);
  const Tensor r = Random(got.shape(), got.dtype(), 1234);
  const TensorList got_grads = grad({sum(got * r)}, wrt).value();
  const TensorList want_grads = grad({sum(want * r)}, wrt).value();
  for (size_t i = 0; i < wrt.size(); ++i) {
    INFO("gradient " << i);
    REQUIRE_TENSORS_CLOSE(got_grads[i], want_grads[i], tol, tol);
  }
}

// The module's parameters followed by `extra`.
inline TensorList ParamsAnd(const nn::Module& m, const TensorList& extra) {
  TensorList out = m.parameters();
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

}  // namespace tc::testing

#endif  // TENSORCUT_TESTS_NN_NN_TEST_UTIL_H_
