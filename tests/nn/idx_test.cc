// The IDX reader on files written here (plain and gzip), each way a file can
// be wrong, and the real Fashion-MNIST files that tools/setup.sh installs.
#include "nn/data/idx.h"

#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"

namespace tc::nn {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::vector<uint8_t> Idx(std::vector<uint32_t> dims, std::vector<uint8_t> data,
                         uint8_t type = 0x08) {
  std::vector<uint8_t> b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(d >> s));
  }
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::string WritePlain(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

std::string WriteGzip(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = TempDir() + "/" + name;
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), bytes.size());
  gzclose(f);
  return path;
}

TEST_CASE("reads plain and gzip IDX files") {
  const std::vector<uint8_t> bytes = Idx({2, 3}, {1, 2, 3, 4, 5, 6});
  for (const std::string& path : {WritePlain("a.idx", bytes), WriteGzip("a.idx.gz", bytes)}) {
    IdxArray a = ReadIdx(path).value();
    CHECK(a.dims == std::vector<int64_t>{2, 3});
    CHECK(a.data == std::vector<uint8_t>{1, 2, 3, 4, 5, 6});
  }
}

TEST_CASE("malformed IDX files give a status naming the file and the problem") {
  const std::string missing = TempDir() + "/missing.idx";
  CHECK(ReadIdx(missing).status().message() ==
        "cannot open " + missing + ": No such file or directory");
  std::string p = WritePlain("magic.idx", {1, 0, 8, 1, 0, 0, 0, 0});
  CHECK(ReadIdx(p).status().message() ==
        p + ": not an IDX file (the magic number must start with two zero bytes)");
  p = WritePlain("type.idx", Idx({1}, {0, 0, 0, 0}, 0x0D));
  CHECK(ReadIdx(p).status().message() ==
        p + ": element type 0x0d is not supported (expected 0x08, unsigned byte)");
  p = WritePlain("ndims.idx", {0, 0, 8, 0});
  CHECK(ReadIdx(p).status().message() == p + ": 0 dimensions (expected 1 to 4)");
  p = WritePlain("header.idx", {0, 0, 8, 2, 0, 0, 0, 2});
  CHECK(ReadIdx(p).status().message() == p + ": truncated header");
  p = WritePlain("short.idx", Idx({2, 3}, {1, 2, 3, 4, 5}));
  CHECK(ReadIdx(p).status().message() ==
        p + ": dimensions [2,3] need 6 bytes of data, the file has 5");
  p = WritePlain("long.idx", Idx({2}, {1, 2, 3}));
  CHECK(ReadIdx(p).status().message() ==
        p + ": dimensions [2] need 2 bytes of data, the file has more");
  // Dims whose product wraps to 0 (2^8 * 2^28 * 2^28 = 2^64), and dims that
  // would overflow strides behind an empty first dim.
  p = WritePlain("wrap.idx", Idx({256, 1u << 28, 1u << 28}, {}));
  CHECK(ReadIdx(p).status().message() ==
        p + ": shape [256,268435456,268435456] has more than 2^60 elements");
  p = WritePlain("strides.idx",
                 {0, 0, 8, 3, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0x20, 0x06, 0x63});
  CHECK(ReadIdx(p).status().message() ==
        p + ": shape [0,4278190079,4280288867] has more than 2^60 elements");
}

TEST_CASE("a gzip that inflates past its header's dims stops there") {
  // 64 MiB of zeros behind a header declaring 16 bytes: the reader inflates
  // 17 bytes of data and stops.
  std::vector<uint8_t> bytes = Idx({16}, std::vector<uint8_t>(64 << 20, 0));
  const std::string p = WriteGzip("bomb.idx.gz", bytes);
  CHECK(ReadIdx(p).status().message() ==
        p + ": dimensions [16] need 16 bytes of data, the file has more");
}

TEST_CASE("a truncated gzip stream is an error, not short data") {
  std::vector<uint8_t> data(5000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7919 % 251);
  const std::string whole = WriteGzip("whole.gz", Idx({5000}, data));
  std::ifstream in(whole, std::ios::binary);
  std::vector<char> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = WritePlain(
      "cut.gz", std::vector<uint8_t>(gz.begin(), gz.begin() + static_cast<long>(gz.size() / 2)));
  absl::Status status = ReadIdx(cut).status();
  REQUIRE_FALSE(status.ok());
  CHECK(status.message().find(cut + ": corrupt or truncated gzip data") == 0);
}

TEST_CASE("a dataset whose files disagree is rejected") {
  const std::string dir = TempDir() + "/bad_set";
  std::filesystem::create_directories(dir);
  WritePlain("bad_set/train-images-idx3-ubyte", Idx({2, 2, 2}, std::vector<uint8_t>(8, 255)));
  WritePlain("bad_set/train-labels-idx1-ubyte", Idx({3}, {1, 2, 3}));
  CHECK(LoadFashionMnist(dir, true).status().message() ==
        dir + "/train-labels-idx1-ubyte: 3 labels for 2 images in " + dir +
            "/train-images-idx3-ubyte");
  WritePlain("bad_set/train-labels-idx1-ubyte", Idx({2}, {1, 12}));
  CHECK(LoadFashionMnist(dir, true).status().message() ==
        dir + "/train-labels-idx1-ubyte: label 12 at index 1 is not a class in [0, 10)");
  WritePlain("bad_set/train-labels-idx1-ubyte", Idx({2}, {1, 9}));
  LabeledImages ok = LoadFashionMnist(dir, true).value();
  CHECK(ok.images.shape() == Shape{2, 1, 2, 2});
  CHECK(ok.images.at<float>({1, 0, 1, 1}) == 1.0f);
  CHECK(ok.labels.to_vector<int64_t>() == std::vector<int64_t>{1, 9});
}

TEST_CASE("the installed Fashion-MNIST test set loads") {
  LabeledImages test = LoadFashionMnist(kFashionMnistDir, /*train=*/false).value();
  CHECK(test.images.shape() == Shape{10000, 1, 28, 28});
  CHECK(test.labels.shape() == Shape{10000});
  std::vector<int64_t> counts(10, 0);
  for (int64_t label : test.labels.to_vector<int64_t>()) ++counts[label];
  for (int64_t c : counts) CHECK(c == 1000);  // the test set is balanced
}

}  // namespace
}  // namespace tc::nn
