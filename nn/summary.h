// A model's summary, as torchinfo prints one: the module tree with each
// module's type and name, the shape of its output for an example input, and
// its parameter count, then the totals.
//
//   absl::StatusOr<std::string> text = nn::Summary(*model, TensorTree::MakeLeaf(x));
//   std::cout << *text;
//
// The example runs once in eval mode without gradients, so the model's
// buffers (BatchNorm's running statistics) and training flags are left as
// they were; an input the model rejects comes back as the status.
#ifndef TENSORCUT_NN_SUMMARY_H_
#define TENSORCUT_NN_SUMMARY_H_

#include <string>

#include "absl/status/statusor.h"
#include "nn/module.h"

namespace tc::nn {

absl::StatusOr<std::string> Summary(Module& module, const TensorTree& example);

}  // namespace tc::nn

#endif  // TENSORCUT_NN_SUMMARY_H_
