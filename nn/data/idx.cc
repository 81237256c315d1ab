#include "nn/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/ops.h"

namespace tc::nn {
namespace {

absl::Status Bad(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// The whole file, decompressed when it is gzip (zlib reads plain files as is).
absl::StatusOr<std::vector<uint8_t>> ReadAll(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0)
    bytes.insert(bytes.end(), buffer, buffer + n);
  int error = Z_OK;
  const std::string message = gzerror(file, &error);
  gzclose(file);
  if (n < 0 || (error != Z_OK && error != Z_STREAM_END)) {
    return Bad(path, absl::StrCat("corrupt or truncated gzip data (", message, ")"));
  }
  return bytes;
}

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The first existing one of `dir/name.gz` and `dir/name`.
std::string Locate(const std::string& dir, const std::string& name) {
  const std::string gz = absl::StrCat(dir, "/", name, ".gz");
  return std::filesystem::exists(gz) ? gz : absl::StrCat(dir, "/", name);
}

}  // namespace

absl::StatusOr<IdxArray> ReadIdx(const std::string& path) {
  TC_ASSIGN_OR_RETURN(const std::vector<uint8_t> b, ReadAll(path));
  if (b.size() < 4 || b[0] != 0 || b[1] != 0) {
    return Bad(path, "not an IDX file (the magic number must start with two zero bytes)");
  }
  if (b[2] != 0x08) {
    return Bad(path, absl::StrCat("element type 0x", absl::Hex(b[2], absl::kZeroPad2),
                                  " is not supported (expected 0x08, unsigned byte)"));
  }
  const int ndims = b[3];
  if (ndims < 1 || ndims > 4)
    return Bad(path, absl::StrCat(ndims, " dimensions (expected 1 to 4)"));
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  if (b.size() < header) return Bad(path, "truncated header");
  IdxArray array;
  for (int d = 0; d < ndims; ++d) array.dims.push_back(BigEndian32(&b[4 + 4 * d]));
  if (absl::Status s = CheckShapeSize(array.dims); !s.ok()) return Bad(path, s.message());
  const uint64_t count = static_cast<uint64_t>(NumElements(array.dims));
  if (b.size() - header != count) {
    return Bad(path, absl::StrCat("dimensions ", ShapeToString(array.dims), " need ", count,
                                  " bytes of data, the file has ", b.size() - header));
  }
  array.data.assign(b.begin() + header, b.end());
  return array;
}

absl::StatusOr<Dataset> LoadFashionMnist(const std::string& dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_path = Locate(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = Locate(dir, prefix + "-labels-idx1-ubyte");
  TC_ASSIGN_OR_RETURN(IdxArray images, ReadIdx(images_path));
  TC_ASSIGN_OR_RETURN(IdxArray labels, ReadIdx(labels_path));
  if (images.dims.size() != 3) {
    return Bad(images_path, absl::StrCat("images need 3 dimensions (count, rows, cols), got ",
                                         ShapeToString(images.dims)));
  }
  if (labels.dims.size() != 1) {
    return Bad(labels_path,
               absl::StrCat("labels need 1 dimension, got ", ShapeToString(labels.dims)));
  }
  const int64_t n = images.dims[0];
  if (labels.dims[0] != n) {
    return Bad(labels_path,
               absl::StrCat(labels.dims[0], " labels for ", n, " images in ", images_path));
  }
  Dataset data;
  data.images = empty({n, 1, images.dims[1], images.dims[2]});
  float* px = data.images.data<float>();
  for (size_t i = 0; i < images.data.size(); ++i) px[i] = images.data[i] / 255.0f;
  data.labels = empty({n}, DType::kI64);
  int64_t* lp = data.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (labels.data[i] >= 10) {
      return Bad(labels_path, absl::StrCat("label ", int{labels.data[i]}, " at index ", i,
                                           " is not a class in [0, 10)"));
    }
    lp[i] = labels.data[i];
  }
  return data;
}

}  // namespace tc::nn
