// Reading the IDX files of the MNIST family (gzip-compressed or plain), and
// Fashion-MNIST as tensors.
//
//   absl::StatusOr<nn::LabeledImages> train = nn::LoadFashionMnist(nn::kFashionMnistDir, true);
//   // train->images: f32 [60000, 1, 28, 28] in [0, 1]; train->labels: i64 [60000]
//
// Every check names the file and what was wrong: a bad magic number, an
// unsupported element type, dimensions that disagree with the file's length,
// a truncated or corrupt gzip stream, images and labels of different counts.
#ifndef TENSORCUT_NN_DATA_IDX_H_
#define TENSORCUT_NN_DATA_IDX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nn/data/array.h"
#include "runtime/tensor.h"

namespace tc::nn {

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

// An IDX file of unsigned bytes (type 0x08), the only type the MNIST files use.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // row-major, product(dims) bytes
};

absl::StatusOr<IdxArray> ReadIdx(const std::string& path);

struct LabeledImages {
  Tensor images;  // f32 [N, 1, rows, cols], pixel / 255
  Tensor labels;  // i64 [N], in [0, 10)
};

// Reads `train-*` (train) or `t10k-*` files from `dir`, each `.gz` or plain.
absl::StatusOr<LabeledImages> LoadFashionMnist(const std::string& dir, bool train);

// The same files as stored: images u8 [N, rows, cols], labels u8 [N] in
// [0, 10): a quarter of the floats' size.
struct ImageArrays {
  Array images, labels;
};
absl::StatusOr<ImageArrays> LoadFashionMnistArrays(const std::string& dir, bool train);

}  // namespace tc::nn

#endif  // TENSORCUT_NN_DATA_IDX_H_
