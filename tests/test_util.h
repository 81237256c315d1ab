// Helpers shared by tests: comparing tensors with a readable failure message,
// and making test inputs (random values, non-contiguous views).
#ifndef TENSORCUT_TESTS_TEST_UTIL_H_
#define TENSORCUT_TESTS_TEST_UTIL_H_

#include <functional>
#include <string>
#include <vector>

#include "runtime/ops.h"
#include "runtime/threads.h"

namespace tc::testing {

// Empty when `actual` matches `expected` (same shape; |a - e| <= atol + rtol |e|
// elementwise, NaNs equal; both undefined), else a message naming the worst
// element.
std::string CompareTensors(const Tensor& actual, const Tensor& expected, double rtol, double atol);

// A tensor with `t`'s values and shape whose strides are not contiguous: the
// values live transposed in a larger buffer (works for any rank >= 1).
Tensor NonContiguous(const Tensor& t);

// Deterministic random values; f32/f64 normal, i64 in [0, 10), bool coin flips.
Tensor Random(absl::Span<const int64_t> shape, DType dtype, uint64_t seed);

// Multi-indices for reference implementations written with plain loops.
using Index = std::vector<int64_t>;
int64_t Ravel(const Index& index, const Shape& shape);  // row-major flat position
Index Unravel(int64_t flat, const Shape& shape);

// A tensor's values as f64, read by full index: what a reference reads.
class Values {
 public:
  explicit Values(const Tensor& t) : shape_(t.shape()), v_(t.to_vector<double>()) {}
  double operator[](const Index& index) const { return v_[Ravel(index, shape_)]; }

 private:
  Shape shape_;
  std::vector<double> v_;
};

// The f64 tensor of `shape` whose element at each index is f(index).
Tensor Reference(const Shape& shape, const std::function<double(const Index&)>& f);

// fn(), run with `threads` intra-op threads (runtime/threads.h), the setting
// restored after: for checks that results do not depend on the thread count.
template <typename F>
auto OnThreads(int threads, F&& fn) {
  struct Restore {
    int saved = NumThreads();
    ~Restore() { SetNumThreads(saved); }
  } restore;
  SetNumThreads(threads);
  return fn();
}

// The message of the tc::Error `fn` throws; "no error" when it returns.
std::string ThrownMessage(const std::function<void()>& fn);

}  // namespace tc::testing

// REQUIRE that two tensors match (see CompareTensors).
#define REQUIRE_TENSORS_CLOSE(actual, expected, rtol, atol)                  \
  do {                                                                       \
    const std::string tc_msg =                                               \
        ::tc::testing::CompareTensors((actual), (expected), (rtol), (atol)); \
    INFO(tc_msg);                                                            \
    REQUIRE(tc_msg.empty());                                                 \
  } while (0)

#endif  // TENSORCUT_TESTS_TEST_UTIL_H_
