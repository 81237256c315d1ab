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

// A file read in order, decompressed when it is gzip (zlib reads plain
// files as is), never further than asked: a header's dims bound what is
// inflated, so a small gzip that inflates to gigabytes costs what its
// header declares.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {}
  ~Reader() {
    if (file_ != nullptr) gzclose(file_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  bool is_open() const { return file_ != nullptr; }

  // Appends up to `n` more bytes to `out`: fewer only at the end of the data.
  absl::Status Read(uint64_t n, std::vector<uint8_t>& out) {
    uint8_t buffer[1 << 16];
    while (n > 0) {
      const int got =
          gzread(file_, buffer, static_cast<unsigned>(std::min<uint64_t>(n, sizeof(buffer))));
      if (got < 0) break;
      if (got == 0) return Error();
      out.insert(out.end(), buffer, buffer + got);
      n -= static_cast<uint64_t>(got);
    }
    return Error();
  }

 private:
  absl::Status Error() {
    int error = Z_OK;
    const std::string message = gzerror(file_, &error);
    if (error == Z_OK || error == Z_STREAM_END) return absl::OkStatus();
    return Bad(path_, absl::StrCat("corrupt or truncated gzip data (", message, ")"));
  }

  std::string path_;
  gzFile file_;
};

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
  TC_RETURN_IF_ERROR(CheckRegularFile(path));
  Reader reader(path);
  if (!reader.is_open()) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::vector<uint8_t> b;
  TC_RETURN_IF_ERROR(reader.Read(4, b));
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
  TC_RETURN_IF_ERROR(reader.Read(4 * static_cast<uint64_t>(ndims), b));
  if (b.size() < 4 + 4 * static_cast<size_t>(ndims)) return Bad(path, "truncated header");
  IdxArray array;
  for (int d = 0; d < ndims; ++d) array.dims.push_back(BigEndian32(&b[4 + 4 * d]));
  if (absl::Status s = CheckShapeSize(array.dims); !s.ok()) return Bad(path, s.message());
  const uint64_t count = static_cast<uint64_t>(NumElements(array.dims));
  // Reserved, so that growing the buffer never holds two copies of it (the
  // old and the doubled), up to a bound: a header can claim any size.
  array.data.reserve(std::min<uint64_t>(count + 1, uint64_t{1} << 28));
  // One byte past the data tells a longer file apart.
  TC_RETURN_IF_ERROR(reader.Read(count + 1, array.data));
  if (array.data.size() != count) {
    return Bad(path,
               absl::StrCat("dimensions ", ShapeToString(array.dims), " need ", count,
                            " bytes of data, the file has ",
                            array.data.size() > count ? "more" : absl::StrCat(array.data.size())));
  }
  return array;
}

absl::StatusOr<ImageArrays> LoadFashionMnistArrays(const std::string& dir, bool train) {
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
  for (int64_t i = 0; i < n; ++i) {
    if (labels.data[i] >= 10) {
      return Bad(labels_path, absl::StrCat("label ", int{labels.data[i]}, " at index ", i,
                                           " is not a class in [0, 10)"));
    }
  }
  return ImageArrays{Array{ElementType::kU8, images.dims, std::move(images.data)},
                     Array{ElementType::kU8, labels.dims, std::move(labels.data)}};
}

absl::StatusOr<LabeledImages> LoadFashionMnist(const std::string& dir, bool train) {
  TC_ASSIGN_OR_RETURN(ImageArrays arrays, LoadFashionMnistArrays(dir, train));
  const std::vector<int64_t>& dims = arrays.images.shape;
  LabeledImages data;
  data.images = empty({dims[0], 1, dims[1], dims[2]});
  float* px = data.images.data<float>();
  for (size_t i = 0; i < arrays.images.bytes.size(); ++i) px[i] = arrays.images.bytes[i] / 255.0f;
  data.labels = empty({dims[0]}, DType::kI64);
  int64_t* lp = data.labels.data<int64_t>();
  for (int64_t i = 0; i < dims[0]; ++i) lp[i] = arrays.labels.bytes[i];
  return data;
}

}  // namespace tc::nn
