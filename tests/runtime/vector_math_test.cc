// The vectorisable float exp and erf against libm in double, over a dense
// grid and at the edges (underflow, overflow, infinities, NaN).
#include "runtime/kernels/vector_math.h"

#include <cmath>
#include <limits>

#include "catch2/catch.hpp"

namespace tc::kernels {
namespace {

TEST_CASE("VectorExp is within 2 ulp of exp") {
  double worst = 0;
  for (float x = -87.f; x <= 88.37f; x += 0.000731f) {
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(VectorExp(x) - want) / want);
  }
  INFO("worst relative error " << worst);
  CHECK(worst < 2.5e-7);
  CHECK(VectorExp(0.f) == 1.f);
  CHECK(VectorExp(-100.f) == 0.f);
  CHECK(VectorExp(-std::numeric_limits<float>::infinity()) == 0.f);
  CHECK(VectorExp(100.f) == std::numeric_limits<float>::infinity());
  CHECK(VectorExp(88.5f) == std::numeric_limits<float>::infinity());
  CHECK(VectorExp(88.37f) == Approx(std::exp(static_cast<double>(88.37f))).epsilon(2.5e-7));
  CHECK(std::isnan(VectorExp(std::nanf(""))));
}

TEST_CASE("VectorErf is within 3.5e-7 of erf and keeps its sign") {
  double worst = 0;
  for (float x = -6.f; x <= 6.f; x += 0.0001731f) {
    worst = std::max(worst, std::abs(VectorErf(x) - std::erf(static_cast<double>(x))));
    CHECK(std::signbit(VectorErf(x)) == std::signbit(x));
  }
  INFO("worst absolute error " << worst);
  CHECK(worst < 3.5e-7);
  // Near 0 the error is relative: erf(x) ~ 2x/sqrt(pi).
  for (float x : {1e-30f, 1e-10f, 1e-4f, 0.3f}) {
    CHECK(VectorErf(x) == Approx(std::erf(static_cast<double>(x))).epsilon(2e-7));
  }
  CHECK(VectorErf(0.f) == 0.f);
  CHECK(VectorErf(std::numeric_limits<float>::infinity()) == 1.f);
  CHECK(VectorErf(-std::numeric_limits<float>::infinity()) == -1.f);
  CHECK(std::isnan(VectorErf(std::nanf(""))));
}

}  // namespace
}  // namespace tc::kernels
