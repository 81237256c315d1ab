// Eager ops on tensors: every call runs its kernel at once (oneDNN for f32).
#include <iostream>

#include "runtime/ops.h"

int main() {
  tc::manual_seed(0);
  tc::Tensor x = tc::randn({4, 3});  // f32
  tc::Tensor w = tc::randn({2, 3});
  tc::Tensor b = tc::zeros({2});
  tc::Tensor probs = tc::softmax(tc::relu(tc::linear(x, w, b)), /*dim=*/1);
  std::cout << "probs =\n" << probs << "\nrow sums = " << tc::sum(probs, {1}) << "\n";

  try {
    tc::matmul(x, w);  // [4,3] x [2,3]: inner dims differ
  } catch (const tc::Error& e) {
    std::cout << "error: " << e.what() << "\n";
  }
}
