// ParallelOverTensors: every element of every tensor visited once, in ranges
// that start on 16-element boundaries of the whole, on any thread count.
#include "runtime/threads.h"

#include <mutex>
#include <vector>

#include "catch2/catch.hpp"
#include "tests/test_util.h"

namespace tc {
namespace {

// How often each element of each tensor was visited, and the ranges' starts
// in the whole.
struct Visits {
  std::vector<std::vector<int>> counts;
  std::vector<int64_t> starts;
};

Visits VisitAll(const std::vector<int64_t>& sizes, int threads) {
  Visits visits;
  for (int64_t n : sizes) visits.counts.emplace_back(n, 0);
  std::vector<int64_t> offsets = {0};
  for (int64_t n : sizes) offsets.push_back(offsets.back() + n);
  std::mutex mu;
  testing::OnThreads(threads, [&] {
    ParallelOverTensors(sizes, [&](size_t tensor, int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mu);
      REQUIRE(0 <= begin);
      REQUIRE(begin < end);
      REQUIRE(end <= sizes[tensor]);
      for (int64_t i = begin; i < end; ++i) ++visits.counts[tensor][i];
      visits.starts.push_back(offsets[tensor] + begin);
    });
  });
  return visits;
}

TEST_CASE("ParallelOverTensors visits every element once") {
  const std::vector<std::vector<int64_t>> cases = {
      {},
      {0},
      {5},
      {70001, 0, 3, 40000, 17},         // above kParallelElements in all: threads split it
      {100000},                         // one tensor split between threads
      {1, 1, 1, 1, 1, 1, 1, 1, 80000},  // small ones first
  };
  for (const std::vector<int64_t>& sizes : cases) {
    for (int threads : {1, 2, 3}) {
      INFO("threads " << threads << ", " << sizes.size() << " tensors");
      const Visits visits = VisitAll(sizes, threads);
      for (const std::vector<int>& counts : visits.counts) {
        for (int c : counts) REQUIRE(c == 1);
      }
    }
  }
}

TEST_CASE("ParallelOverTensors splits a large pass between threads on 16-element bounds") {
  const std::vector<int64_t> sizes = {70001, 3, 40000};
  const Visits one = VisitAll(sizes, 1);
  CHECK(one.starts.size() == sizes.size());  // one range per tensor
  const Visits three = VisitAll(sizes, 3);
  // Three threads cut the whole twice, each cut starting a range on a
  // multiple of 16 (besides the tensors' own starts).
  int cuts = 0;
  for (int64_t start : three.starts) {
    if (start != 0 && start != 70001 && start != 70004) {
      ++cuts;
      CHECK(start % 16 == 0);
    }
  }
  CHECK(cuts == 2);
}

}  // namespace
}  // namespace tc
