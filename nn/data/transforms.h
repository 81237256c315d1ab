// Batch transforms for images, as torchvision.transforms' Normalize,
// RandomCrop (with zero padding) and RandomHorizontalFlip, applied by a
// DataLoader (nn/data/data_loader.h) to one field of each batch, [N, C, H, W]
// of f32 or f64, after conversion. The random ones draw from a tensorcut
// Generator the loader seeds from its seed and the batch's position, so a
// batch's crops and flips are the same on every run and after a resume.
//
//   nn::DataLoaderOptions options{.batch_size = 128, .shuffle = true, .seed = 1};
//   options.transforms = {std::make_shared<nn::RandomCrop>(32, 4),
//                         std::make_shared<nn::RandomHorizontalFlip>(),
//                         std::make_shared<nn::Normalize>(mean, std_dev)};
#ifndef TENSORCUT_NN_DATA_TRANSFORMS_H_
#define TENSORCUT_NN_DATA_TRANSFORMS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/random.h"
#include "runtime/tensor.h"

namespace tc::nn {

class Transform {
 public:
  virtual ~Transform() = default;
  // The transformed batch (in place, or a new tensor when the shape
  // changes); an error names the transform and what it expected. Called
  // from the loader's thread: it must not change the transform.
  virtual absl::StatusOr<Tensor> Apply(const Tensor& images, Generator& gen) const = 0;
};

// (x - mean[c]) / std[c] per channel.
class Normalize : public Transform {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std_dev);
  absl::StatusOr<Tensor> Apply(const Tensor& images, Generator& gen) const override;

 private:
  std::vector<double> mean_, std_dev_;
};

// Each image padded with `padding` zeros on every side, then cut to
// height x width at an offset drawn uniformly per image.
class RandomCrop : public Transform {
 public:
  // size: {height, width}, or one int for a square.
  RandomCrop(std::pair<int64_t, int64_t> size, int64_t padding = 0);
  explicit RandomCrop(int64_t size, int64_t padding = 0) : RandomCrop({size, size}, padding) {}
  absl::StatusOr<Tensor> Apply(const Tensor& images, Generator& gen) const override;

 private:
  int64_t height_, width_, padding_;
};

// Each image mirrored left to right with probability p.
class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  absl::StatusOr<Tensor> Apply(const Tensor& images, Generator& gen) const override;

 private:
  double p_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_DATA_TRANSFORMS_H_
