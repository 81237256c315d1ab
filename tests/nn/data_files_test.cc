// Datasets' files as arrays: .npy (types, Fortran order, header forms),
// .npz (stored and deflated members, CRC), CSV (numeric and class labels,
// quoting); row gathering into batch tensors; and each malformed input's
// error, naming the file, member, line or column.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "nn/checkpoint.h"
#include "nn/data/array.h"
#include "nn/data/csv.h"
#include "nn/data/npy.h"
#include "runtime/ops.h"
#include "tests/npz_writer.h"
#include "tests/test_util.h"

namespace tc::nn {
namespace {

using testing::Bytes;
using testing::Npy;
using testing::Zip;

void Put(Bytes& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

std::string Temp(const std::string& name) {
  return absl::StrCat(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp", "/", name);
}

std::string Write(const std::string& name, const std::string& contents) {
  const std::string path = Temp(name);
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

std::string Str(const Bytes& b) { return std::string(b.begin(), b.end()); }

template <typename T>
Bytes Raw(const std::vector<T>& values) {
  Bytes b(values.size() * sizeof(T));
  std::memcpy(b.data(), values.data(), b.size());
  return b;
}

std::vector<double> Values(const Array& a, DType dtype = DType::kF64) {
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < a.rows(); ++r) rows.push_back(r);
  std::vector<int64_t> shape = a.row_shape();
  shape.insert(shape.begin(), a.rows());
  const Tensor out = tc::empty(shape, dtype);
  REQUIRE(a.GatherRows(rows, out).ok());
  return out.to(DType::kF64).to_vector<double>();
}

TEST_CASE(".npy arrays load in their stored type and gather into batches") {
  const std::string path =
      Write("u8.npy", Str(Npy("{'descr': '|u1', 'fortran_order': False, 'shape': (3, 2), }",
                              Bytes{1, 2, 3, 4, 250, 6})));
  const Array a = ReadNpy(path).value();
  CHECK(a.ToString() == "u8[3,2]");
  CHECK(a.bytes.size() == 6);  // bytes, not floats
  CHECK(Values(a) == std::vector<double>{1, 2, 3, 4, 250, 6});
  // Rows 2 and 0, as f32 and as i64.
  const Tensor f = tc::empty({2, 2});
  REQUIRE(a.GatherRows({2, 0}, f).ok());
  CHECK(f.to_vector<float>() == std::vector<float>{250, 6, 1, 2});
  const Tensor i = tc::empty({2, 2}, DType::kI64);
  REQUIRE(a.GatherRows({1, 1}, i).ok());
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{3, 4, 3, 4});

  struct Case {
    std::string descr;
    Bytes data;
    std::vector<double> want;
  };
  for (const Case& c : {Case{"<f4", Raw<float>({1.5f, -2}), {1.5, -2}},
                        Case{"<f8", Raw<double>({0.25, 1e300}), {0.25, 1e300}},
                        Case{"<i4", Raw<int32_t>({-7, 70000}), {-7, 70000}},
                        Case{"<u2", Raw<uint16_t>({65535, 1}), {65535, 1}},
                        Case{"<i8", Raw<int64_t>({-1, 1LL << 40}), {-1, 1099511627776.0}},
                        Case{"|b1", Bytes{0, 1}, {0, 1}}}) {
    INFO(c.descr);
    const std::string p = Write("typed.npy", Str(Npy(absl::StrCat("{'descr': '", c.descr,
                                                                  "', 'fortran_order': False, "
                                                                  "'shape': (2,), }"),
                                                     c.data)));
    CHECK(Values(ReadNpy(p).value()) == c.want);
  }
  // Fortran order (np.save of a transposed array): made row-major. The
  // column-major data 1 4 2 5 3 6 is [[1, 2, 3], [4, 5, 6]].
  const std::string fortran =
      Write("fortran.npy", Str(Npy("{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }",
                                   Raw<int64_t>({1, 4, 2, 5, 3, 6}))));
  CHECK(Values(ReadNpy(fortran).value()) == std::vector<double>{1, 2, 3, 4, 5, 6});
  // A scalar and an empty array.
  CHECK(ReadNpy(Write("scalar.npy", Str(Npy("{'descr': '<f8', 'fortran_order': False, 'shape': "
                                            "(), }",
                                            Raw<double>({3.5})))))
            .value()
            .ToString() == "f64[]");
  CHECK(ReadNpy(Write("empty.npy", Str(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': "
                                           "(0, 4), }",
                                           {}))))
            .value()
            .rows() == 0);
}

TEST_CASE("malformed .npy files give errors naming the file and the problem") {
  auto error = [](const std::string& name, const Bytes& bytes) {
    const std::string path = Write(name, Str(bytes));
    return std::string(ReadNpy(path).status().message()).substr(path.size());
  };
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  CHECK(error("magic.npy", Bytes{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0}) ==
        ": not an .npy file (no \\x93NUMPY magic)");
  CHECK(error("short.npy", Npy(dict, Raw<float>({1}))) == ": the data is 4 bytes; f32[2] needs 8");
  CHECK(error("big.npy", Npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                             Raw<float>({1, 2}))) ==
        ": dtype '>f4' is big-endian; only little-endian arrays are read");
  CHECK(error("complex.npy", Npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                                 Raw<float>({1, 2}))) ==
        ": dtype '<c8' is not supported (bool, u1-u8, i1-i8, f4, f8 are)");
  CHECK(error("struct.npy", Npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': "
                                "(1,), }",
                                Raw<float>({1}))) ==
        ": dtype [('a' is not supported (structured or object)");
  CHECK(error("noshape.npy", Npy("{'descr': '<f4', 'fortran_order': False, }", {})) ==
        ": the header has no 'shape': {'descr': '<f4', 'fortran_order': False, }");
  CHECK(error("dim.npy", Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", {})) ==
        ": shape (2, x) has a bad dim ' x'");
  Bytes truncated = Npy(dict, Raw<float>({1, 2}));
  truncated.resize(20);
  CHECK(error("truncated.npy", truncated) == ": truncated header");
  CHECK(ReadNpy(Temp("missing.npy")).status().message() ==
        "cannot open " + Temp("missing.npy") + ": No such file or directory");
}

TEST_CASE("a FIFO, a device or a directory given as data is refused, not read") {
  // Reading a FIFO waits for a writer that may never come; /dev/zero never ends.
  const std::string fifo = Temp("data.fifo");
  std::remove(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(ReadCsv(fifo, "y").status().message() == fifo + " is a FIFO, not a regular file");
  CHECK(ReadNpy(fifo).status().message() == fifo + " is a FIFO, not a regular file");
  CHECK(ReadNpz(fifo).status().message() == fifo + " is a FIFO, not a regular file");
  CHECK(ReadNpy("/dev/zero").status().message() ==
        "/dev/zero is a character device, not a regular file");
  CHECK(ReadCsv("/tmp", "y").status().message() == "/tmp is a directory, not a regular file");
  CHECK(ReadCsv(Temp("none.csv"), "y").status().code() == absl::StatusCode::kNotFound);
}

// This process's resident memory (VmRSS) or its peak (VmHWM), in bytes.
int64_t ResidentBytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field) + 1)) * 1024;
  }
  return -1;
}

TEST_CASE("a deflated .npz member costs its array's size once, not twice") {
  // 128 MiB of zeros deflate to about 128 KiB: what np.savez_compressed
  // writes for a large sparse array.
  const int64_t n = 128 << 20;
  std::string path;
  {
    const Bytes npy =
        Npy(absl::StrCat("{'descr': '|u1', 'fortran_order': False, 'shape': (", n, ",), }"),
            Bytes(n, 0));
    path = Write("zeros.npz", Str(Zip({{"x.npy", npy}}, /*deflated=*/true)));
  }
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";  // the peak starts again from what is resident now
  clear_refs.flush();
  if (!clear_refs.good()) {
    WARN("skipped: /proc/self/clear_refs cannot reset the peak here");
    return;
  }
  const int64_t before = ResidentBytes("VmRSS:");
  const NamedArrays arrays = ReadNpz(path).value();
  REQUIRE(arrays[0].second.numel() == n);
  const int64_t grew = ResidentBytes("VmHWM:") - before;
  INFO("the peak grew by " << grew << " bytes");
  CHECK(grew < n * 3 / 2);
}

TEST_CASE("a CSV's features cost their f32 size, with no copy and no growth") {
  // 300,000 rows of 64 sparse features: 38 MB of text, 77 MB of f32.
  const int64_t rows = 300000, columns = 64;
  const std::string path = Temp("sparse.csv");
  {
    std::ofstream csv(path);
    for (int64_t c = 0; c < columns; ++c) csv << "f" << c << ",";
    csv << "y\n";
    std::string row;
    for (int64_t c = 0; c < columns; ++c) row += c == 7 ? "1," : "0,";
    for (int64_t r = 0; r < rows; ++r) csv << row << r % 3 << "\n";
  }
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  if (!clear_refs.good()) {
    WARN("skipped: /proc/self/clear_refs cannot reset the peak here");
    return;
  }
  const int64_t before = ResidentBytes("VmRSS:");
  const CsvData data = ReadCsv(path, "y").value();
  REQUIRE(data.features.numel() == rows * columns);
  const int64_t floats = rows * columns * 4;
  const int64_t grew = ResidentBytes("VmHWM:") - before;
  INFO("the peak grew by " << grew << " bytes for " << floats << " bytes of features");
#ifdef __SANITIZE_ADDRESS__
  // AddressSanitizer keeps freed blocks (each label vector the reading grew
  // out of) resident in its quarantine: the peak measures that instead.
  WARN("the peak is not checked under AddressSanitizer");
#else
  CHECK(grew < floats * 3 / 2);
#endif
}

TEST_CASE(".npz archives, stored or deflated, load every member by name") {
  const Bytes x =
      Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", Raw<float>({1, 2, 3, 4}));
  const Bytes y =
      Npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", Raw<int64_t>({7, 9}));
  for (const bool deflate : {false, true}) {
    INFO((deflate ? "deflated" : "stored"));
    const std::string path = Write("data.npz", Str(Zip({{"x.npy", x}, {"y.npy", y}}, deflate)));
    const NamedArrays arrays = ReadNpz(path).value();
    REQUIRE(arrays.size() == 2);
    CHECK(arrays[0].first == "x");
    CHECK(arrays[0].second.ToString() == "f32[2,2]");
    CHECK(Values(arrays[1].second) == std::vector<double>{7, 9});
  }
  // A flipped data byte fails the CRC; a cut archive has no directory; a
  // member that is no .npy is named.
  Bytes corrupt = Zip({{"x.npy", x}}, false);
  corrupt[30 + 5 + 60] ^= 0xff;
  const std::string bad = Write("corrupt.npz", Str(corrupt));
  CHECK(ReadNpz(bad).status().message() ==
        bad + ": member x.npy: CRC mismatch: the archive is corrupt");
  Bytes cut = Zip({{"x.npy", x}}, true);
  cut.resize(cut.size() - 30);
  const std::string short_path = Write("cut.npz", Str(cut));
  CHECK(ReadNpz(short_path).status().message() ==
        short_path + ": not a zip archive (no end of central directory)");
  // Two directory entries pointing at one member's data: a zip bomb's trick.
  Bytes twice = Zip({{"x.npy", x}, {"y.npy", x}}, false);
  const size_t second_entry = twice.size() - 22 - (46 + 5);
  for (int b = 0; b < 4; ++b) twice[second_entry + 42 + b] = 0;  // its local header offset -> 0
  const std::string bomb = Write("bomb.npz", Str(twice));
  CHECK(ReadNpz(bomb).status().message() ==
        bomb + ": member y.npy: shares its data with another member");
  const std::string text = Write("text.npz", Str(Zip({{"notes.npy", Bytes{'h', 'i'}}}, false)));
  CHECK(ReadNpz(text).status().message() ==
        text + ": member notes.npy: not an .npy file (no \\x93NUMPY magic)");
}

TEST_CASE("CSV: numeric features, integer or class labels, quotes and CRLF") {
  const std::string path = Write("data.csv",
                                 "a, label ,\"b, quoted\"\r\n"
                                 "1.5,2,3\r\n"
                                 "\r\n"
                                 "-4,0,\"5e-1\"\r\n");
  const CsvData data = ReadCsv(path, "label").value();
  CHECK(data.feature_names == std::vector<std::string>{"a", "b, quoted"});
  CHECK(data.features.ToString() == "f32[2,2]");
  CHECK(Values(data.features) == std::vector<double>{1.5, 3, -4, 0.5});
  CHECK(Values(data.labels) == std::vector<double>{2, 0});
  CHECK(data.class_names.empty());

  const CsvData iris = ReadCsv(Write("classes.csv",
                                     "x,species\n1,virginica\n2,setosa\n3,virginica\n"
                                     "4,\"versicolor\"\n"),
                               "species")
                           .value();
  CHECK(iris.class_names == std::vector<std::string>{"setosa", "versicolor", "virginica"});
  CHECK(Values(iris.labels) == std::vector<double>{2, 0, 2, 1});
}

TEST_CASE("malformed CSV files give errors naming the file, line and column") {
  auto error = [](const std::string& contents, const std::string& label = "y") {
    const std::string path = Write("bad.csv", contents);
    return std::string(ReadCsv(path, label).status().message()).substr(path.size());
  };
  CHECK(error("") == ": empty: expected a header line naming the columns");
  CHECK(error("x,y\n") == ": no rows after the header");
  CHECK(error("x,z\n1,2\n") == ": no column \"y\" (columns: x, z)");
  CHECK(error("x,y\n1,2\n3\n") == ":3: expected 2 fields, got 1");
  CHECK(error("x,y\n1,2\nabc,1\n") == ":3: column \"x\": \"abc\" is not a number");
  CHECK(error("x,y\n,1\n") == ":2: column \"x\": \"\" is not a number");
  CHECK(error("x,y\n1,\n") == ":2: column \"y\" is empty");
  CHECK(error("x,y\n\"1,2\n") == ":2: unterminated quote");
  CHECK(error("y\n1\n") == ": no feature columns beside the label column");
  // Labels are integers or names, all of one kind; a column is named once.
  CHECK(error("x,y\n1,3\n2,cat\n") ==
        ":3: column \"y\": \"cat\" is not an integer class, as the first label (\"3\") is");
  CHECK(error("x,y\n1,cat\n2,nan\n") ==
        ":3: column \"y\": \"nan\" is a number among class names: labels are integers or class "
        "names");
  CHECK(error("x,y\n1,0.5\n2,1.5\n") ==
        ":2: column \"y\": \"0.5\" is a number but not an integer class: labels are integers or "
        "class names");
  CHECK(error("x,y\n1,2.0\n") ==
        ":2: column \"y\": \"2.0\" is a number but not an integer class: labels are integers or "
        "class names");
  CHECK(error("x,x,y\n1,2,3\n") == ":1: column \"x\" is named twice");
}

// A safetensors file of these entries (JSON fields) and data.
std::string Safetensors(const std::string& json, const Bytes& data) {
  Bytes out;
  Put(out, json.size(), 8);
  out.insert(out.end(), json.begin(), json.end());
  out.insert(out.end(), data.begin(), data.end());
  return Str(out);
}

TEST_CASE("safetensors datasets load as arrays in their stored types") {
  Bytes data = {1, 2, 3, 4, 5, 6};
  const Bytes labels = Raw<int32_t>({7, -1});
  data.insert(data.end(), labels.begin(), labels.end());
  const std::string path =
      Write("data.safetensors",
            Safetensors("{\"x\":{\"dtype\":\"U8\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                        "\"y\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[6,14]}}",
                        data));
  const NamedArrays arrays = LoadArrays(path).value();
  REQUIRE(arrays.size() == 2);
  CHECK(arrays[0].first == "x");
  CHECK(arrays[0].second.ToString() == "u8[2,3]");
  CHECK(Values(arrays[1].second) == std::vector<double>{7, -1});
  // A checkpoint holds tensorcut's dtypes only.
  CHECK(LoadTensors(path).status().message() ==
        "checkpoint " + path + ": invalid header: x: unsupported dtype \"U8\"");
  const std::string half = Write(
      "half.safetensors",
      Safetensors("{\"x\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}", Bytes{0, 0}));
  CHECK(LoadArrays(half).status().message() ==
        half + ": invalid header: x: unsupported dtype \"F16\"");
  const std::string short_data = Write(
      "short.safetensors",
      Safetensors("{\"x\":{\"dtype\":\"U16\",\"shape\":[2],\"data_offsets\":[0,2]}}", Bytes{0, 0}));
  CHECK(LoadArrays(short_data).status().message() ==
        short_data + ": x: u16[2] needs 4 bytes but data_offsets [0, 2] hold 2");
}

TEST_CASE("gathering rows checks the batch tensor and the row numbers") {
  Array a{ElementType::kU8, {3, 2}, Bytes{1, 2, 3, 4, 5, 6}};
  CHECK(a.GatherRows({0}, tc::empty({2, 2})).message() ==
        "rows of u8[3,2] go into a contiguous tensor of shape [1,2], got f32[2,2]");
  CHECK(a.GatherRows({3}, tc::empty({1, 2})).message() == "row 3 of u8[3,2] is out of range");
  CHECK(a.GatherRows({0}, tc::empty({1, 2}, DType::kBF16)).message() ==
        "rows of u8[3,2] convert to f32, f64, i64, i32 or bool, not bf16");
  const Tensor i32_rows = tc::empty({2, 2}, DType::kI32);
  REQUIRE(a.GatherRows({2, 0}, i32_rows).ok());
  CHECK(i32_rows.to_vector<int32_t>() == std::vector<int32_t>{5, 6, 1, 2});
  // Rows of no elements gather into an empty batch (the data-files fuzz
  // target's finding: an .npy of shape (2, 0) was refused as not contiguous).
  const Array empty_rows{ElementType::kI16, {2, 0}, Bytes{}};
  CHECK(empty_rows.GatherRows({0, 1}, tc::empty({2, 0}, DType::kF64)).ok());
}

}  // namespace
}  // namespace tc::nn
