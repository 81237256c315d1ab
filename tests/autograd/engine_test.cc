// The eager backward engine: accumulation, grad mode, detach, tc::grad, and
// every misuse a user can hit.
#include "autodiff/engine.h"

#include "catch2/catch.hpp"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc {
namespace {

TEST_CASE("backward accumulates into leaves across calls until zeroed") {
  Tensor w = from_vector<double>({1, 2, 3}, {3}).requires_grad_();
  Tensor x = from_vector<double>({4, 5, 6}, {3});
  sum(w * x).backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{4, 5, 6});
  sum(w * w).backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{6, 9, 12});
  w.set_grad(Tensor());  // zero_grad
  sum(w).backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{1, 1, 1});
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("a value used twice gets the sum of both paths") {
  Tensor a = scalar(3, DType::kF64).requires_grad_();
  Tensor b = a * a;      // db/da = 2a
  Tensor c = b * a + b;  // dc/da = 3a^2 + 2a
  c.backward();
  CHECK(a.grad().item<double>() == Approx(3 * 9 + 6));
}

TEST_CASE("views carry gradients back to their base") {
  Tensor x = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  Tensor y = x.transpose(0, 1).slice(0, 1, 3).reshape({4});
  sum(y * from_vector<double>({1, 2, 3, 4}, {4})).backward();
  // y = [x01, x11, x02, x12] -> weights 1, 2, 3, 4.
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 3, 0, 2, 4});
}

TEST_CASE("backward of a non-scalar takes grad_output") {
  Tensor x = from_vector<double>({1, 2}, {2}).requires_grad_();
  Tensor y = x * 3.0;
  y.backward(from_vector<double>({10, 100}, {2}));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{30, 300});
}

TEST_CASE("NoGradGuard stops recording; detach cuts the graph") {
  Tensor x = ones({2}, DType::kF64).requires_grad_();
  {
    NoGradGuard guard;
    Tensor y = x * 2.0;
    CHECK_FALSE(y.requires_grad());
  }
  CHECK(GradMode::IsEnabled());
  Tensor z = x * 2.0;
  CHECK(z.requires_grad());
  CHECK_FALSE(z.is_leaf());
  Tensor d = z.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.storage() == z.storage());
  Tensor w = sum(d * x);  // only the x factor carries gradient
  w.backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{2, 2});
}

TEST_CASE("stop_gradient passes values and no gradient, as detach does") {
  Tensor x = from_vector<double>({1, -2}, {2}).requires_grad_();
  CHECK_FALSE(stop_gradient(x).requires_grad());
  sum(stop_gradient(x) * x).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1, -2});  // d(c x)/dx = c
}

TEST_CASE("integer and comparison results do not require grad") {
  Tensor x = from_vector<double>({1, -2}, {2}).requires_grad_();
  CHECK_FALSE(gt(x, zeros({2}, DType::kF64)).requires_grad());
  CHECK_FALSE(argmax(x, 0).requires_grad());
  CHECK_FALSE(cast(x, DType::kI64).requires_grad());
  CHECK(cast(x, DType::kF32).requires_grad());
}

TEST_CASE("tc::grad returns gradients without touching .grad") {
  Tensor a = from_vector<double>({1, 2}, {2}).requires_grad_();
  Tensor b = from_vector<double>({3, 4}, {2}).requires_grad_();
  Tensor h = a * b;  // an intermediate
  Tensor out = sum(h * h);
  TensorList g = grad({out}, {a, h, b}).value();
  CHECK(g[0].to_vector<double>() == std::vector<double>{2 * 3 * 3, 2 * 8 * 4});
  CHECK(g[1].to_vector<double>() == std::vector<double>{6, 16});
  CHECK(g[2].to_vector<double>() == std::vector<double>{2 * 3 * 1, 2 * 8 * 2});
  CHECK_FALSE(a.grad().defined());
  // An input the output does not depend on gets zeros.
  Tensor unused = zeros({3}, DType::kF64).requires_grad_();
  Tensor o2 = sum(a * 2.0);
  CHECK(grad({o2}, {unused}).value()[0].to_vector<double>() == std::vector<double>{0, 0, 0});
}

TEST_CASE("misuse of backward and grad gives clear errors") {
  Tensor x = from_vector<double>({1, 2}, {2}).requires_grad_();
  CHECK_THROWS_WITH(zeros({1}).backward(),
                    "backward: tensor f32[1] does not require grad and has no grad_fn");
  CHECK_THROWS_WITH((x * 2.0).backward(),
                    "backward: grad_output is required for non-scalar output f64[2]");
  CHECK_THROWS_WITH((x * 2.0).backward(zeros({3}, DType::kF64)),
                    "backward: grad_output f64[3] does not match output f64[2]");

  Tensor y = sum(exp(x));
  y.backward();
  CHECK_THROWS_WITH(y.backward(),
                    "backward through a graph that was already freed (at sum); pass "
                    "retain_graph=true to the first backward to run it twice");
  Tensor z = sum(exp(x));
  z.backward(Tensor(), /*retain_graph=*/true);
  z.backward();  // allowed once more
  CHECK(grad({z}, {x}).status().code() == absl::StatusCode::kFailedPrecondition);

  CHECK(grad({sum(x)}, {zeros({2})}).status().message() == "grad: input 0 does not require grad");
  CHECK(grad({sum(x)}, {x}, {ones({}), ones({})}).status().message() ==
        "grad: 2 grad_outputs for 1 outputs");
  CHECK_THROWS_WITH(zeros({2}, DType::kI64).requires_grad_(),
                    "requires_grad_: only floating-point tensors can require grad, got i64[2]");
  CHECK_THROWS_WITH((x * 2.0).requires_grad_(false),
                    "requires_grad_: only leaf tensors can change requires_grad; use detach()");
}

TEST_CASE("dropout's backward reuses the forward mask") {
  Tensor x = ones({1000}, DType::kF64).requires_grad_();
  Tensor y = dropout(x, 0.5, /*seed=*/3, /*offset=*/9);
  sum(y).backward();
  REQUIRE_TENSORS_CLOSE(x.grad(), y.detach(), 0, 0);
}

}  // namespace
}  // namespace tc

namespace tc {
namespace {

// y = 3 * x computed outside the tape, with its backward supplied.
TensorList TripleRecorded(const Tensor& x, int* calls) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = x * 3.0;
  }
  RecordFunction("triple", {x}, {y}, [calls](absl::Span<const Tensor> grads) {
    ++*calls;
    return absl::StatusOr<TensorList>(TensorList{grads[0] * 3.0});
  });
  return {y};
}

TEST_CASE("a recorded function's backward runs once and feeds the tape") {
  int calls = 0;
  Tensor x = from_vector<double>({1, 2}, {2}).requires_grad_();
  Tensor y = TripleRecorded(x * 2.0, &calls)[0];
  CHECK(y.requires_grad());
  sum(y * y).backward();
  // d/dx sum((6x)^2) = 72 x
  CHECK(x.grad().to_vector<double>() == std::vector<double>{72, 144});
  CHECK(calls == 1);
  CHECK_THROWS_WITH(sum(y).backward(),
                    "backward through a graph that was already freed (at triple); pass "
                    "retain_graph=true to the first backward to run it twice");
}

TEST_CASE("a recorded function whose backward misbehaves gives a status") {
  Tensor x = ones({2}, DType::kF64).requires_grad_();
  Tensor y = x.detach() * 1.0;
  RecordFunction("bad_shape", {x}, {y}, [](absl::Span<const Tensor>) {
    return absl::StatusOr<TensorList>(TensorList{ones({3}, DType::kF64)});
  });
  CHECK_THROWS_WITH(sum(y).backward(),
                    "backward of bad_shape gave f64[3] for input 0 of type f64[2]");
  Tensor z = x.detach() * 1.0;
  RecordFunction("failing", {x}, {z}, [](absl::Span<const Tensor>) {
    return absl::StatusOr<TensorList>(absl::InvalidArgumentError("compiled backward failed"));
  });
  CHECK_THROWS_WITH(sum(z).backward(), "compiled backward failed");
  // Inputs that do not require grad record nothing.
  Tensor w = zeros({2}, DType::kF64) * 1.0;
  RecordFunction("unused", {zeros({2}, DType::kF64)}, {w}, nullptr);
  CHECK_FALSE(w.requires_grad());
}

}  // namespace
}  // namespace tc
