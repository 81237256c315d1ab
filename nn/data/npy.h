// NumPy's .npy and .npz files (np.save, np.savez, np.savez_compressed) as
// arrays in their stored element type (nn/data/array.h).
//
//   absl::StatusOr<nn::Array> x = nn::ReadNpy("x.npy");
//   absl::StatusOr<nn::NamedArrays> data = nn::ReadNpz("data.npz");  // {"x", ...}, {"y", ...}
//
// Little-endian or byte-order-free types bool, u8/i8 ... u64/i64, f32, f64,
// in C or Fortran order (the latter made row-major on load). An .npz is a
// zip archive of .npy members, stored or deflated; each member's CRC is
// checked. Every error names the file (and the member), and what was wrong:
// a bad magic, an unsupported dtype ('>f4', '<c8', object arrays), a header
// that is not NumPy's dict, a length that disagrees with the shape, a
// truncated or corrupt archive.
#ifndef TENSORCUT_NN_DATA_NPY_H_
#define TENSORCUT_NN_DATA_NPY_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "nn/data/array.h"

namespace tc::nn {

absl::StatusOr<Array> ReadNpy(const std::string& path);
// The members in archive order, named without ".npy".
absl::StatusOr<NamedArrays> ReadNpz(const std::string& path);

// An .npy file's contents; `where` prefixes errors ("x.npz: member y.npy").
// Given the contents by value, the array keeps their buffer: reading costs
// the data's size once, not twice.
absl::StatusOr<Array> ParseNpy(absl::Span<const uint8_t> file, const std::string& where);
absl::StatusOr<Array> ParseNpy(std::vector<uint8_t> contents, const std::string& where);

}  // namespace tc::nn

#endif  // TENSORCUT_NN_DATA_NPY_H_
