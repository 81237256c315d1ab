// Upsample and interpolate over [N, C, H, W], as torch.nn.Upsample and
// torch.nn.functional.interpolate: to a size, or by a scale factor (the
// output floor(in * factor)); "nearest" (PyTorch's: source index
// floor(out_index * in / out), or / factor when a factor is given) or
// "bilinear" (align_corners as PyTorch: false samples at pixel centres,
// true maps the corner pixels onto each other).
//
//   nn::Upsample up(2);                                          // nearest, x2
//   nn::Upsample smooth({.scale_factor = 1.5, .mode = "bilinear"});
//   Tensor y = nn::interpolate(x, {.size = nn::IntPair(32, 48), .mode = "bilinear"});
#ifndef TENSORCUT_NN_UPSAMPLE_H_
#define TENSORCUT_NN_UPSAMPLE_H_

#include <optional>
#include <string>

#include "nn/int_pair.h"
#include "nn/module.h"

namespace tc::nn {

// Exactly one of size and scale_factor.
struct UpsampleOptions {
  std::optional<IntPair> size;
  std::optional<double> scale_factor;
  std::string mode = "nearest";  // or "bilinear"
  bool align_corners = false;    // bilinear only
};

// Throws tc::Error naming what is wrong with `options` or `x`.
Tensor interpolate(const Tensor& x, const UpsampleOptions& options);

class Upsample : public Module {
 public:
  explicit Upsample(double scale_factor, std::string mode = "nearest");
  explicit Upsample(UpsampleOptions options);
  Tensor forward(const Tensor& x) override;
  using Module::forward;
  std::string extra_repr() const override;

 private:
  UpsampleOptions options_;
};

}  // namespace tc::nn

#endif  // TENSORCUT_NN_UPSAMPLE_H_
