// Compares two safetensors checkpoints for tests/dist/mpirun_test.sh: the
// same tensor names, dtypes and shapes, and every element within
// |a - b| <= tol (1 + |b|).
//   compare_checkpoints A.safetensors B.safetensors TOL
// Prints what differs, or the tensor count; exits 1 when they differ.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nn/checkpoint.h"
#include "tests/test_util.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: compare_checkpoints A.safetensors B.safetensors TOL\n");
    return 2;
  }
  const absl::StatusOr<tc::nn::NamedTensors> a = tc::nn::LoadTensors(argv[1]);
  const absl::StatusOr<tc::nn::NamedTensors> b = tc::nn::LoadTensors(argv[2]);
  for (const auto* loaded : {&a, &b}) {
    if (!loaded->ok()) {
      std::fprintf(stderr, "%s\n", std::string(loaded->status().message()).c_str());
      return 1;
    }
  }
  const double tol = std::atof(argv[3]);
  if (a->size() != b->size()) {
    std::printf("%zu tensors against %zu\n", a->size(), b->size());
    return 1;
  }
  for (size_t i = 0; i < a->size(); ++i) {
    const auto& [name, x] = (*a)[i];
    const auto& [other_name, y] = (*b)[i];
    if (name != other_name || x.type() != y.type()) {
      std::printf("%s %s against %s %s\n", name.c_str(), x.type().ToString().c_str(),
                  other_name.c_str(), y.type().ToString().c_str());
      return 1;
    }
    if (const std::string gap = tc::testing::CompareTensors(x, y, tol, tol); !gap.empty()) {
      std::printf("%s: %s\n", name.c_str(), gap.c_str());
      return 1;
    }
  }
  std::printf("%zu tensors equal within %g\n", a->size(), tol);
  return 0;
}
